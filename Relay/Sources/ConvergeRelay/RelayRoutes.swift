import Hummingbird
import HummingbirdWebSocket

/// The routes of one space, under `v1/spaces/:space`: its WebSocket and its HTTP pair
/// (see ``RelayServer``), each handing the request to the relay.
struct SpaceController {
  let relay: RelayServer

  var endpoints: RouteCollection<BasicWebSocketRequestContext> {
    let relay = relay
    return RouteCollection(context: BasicWebSocketRequestContext.self)
      .ws(
        "sync",
        onUpgrade: { inbound, outbound, context in
          try await relay.serve(
            space: Self.space(context.requestContext),
            token: RelayServer.token(of: context.request), inbound: inbound,
            outbound: outbound)
        }
      )
      .post("push", use: push)
      .post("pull", use: pull)
      .get("pull", use: pull)
  }

  /// `POST push`: a delta or sync message, answered with an acknowledgement once durable.
  @Sendable func push(_ request: Request, context: BasicWebSocketRequestContext) async throws
    -> Response
  {
    try await relay.push(request, space: Self.space(context))
  }

  /// `POST pull` (a causal context) and `GET pull` (nothing known): what the relay holds
  /// beyond it.
  @Sendable func pull(_ request: Request, context: BasicWebSocketRequestContext) async throws
    -> Response
  {
    try await relay.pull(request, space: Self.space(context))
  }

  /// The space the path names.
  static func space(_ context: BasicWebSocketRequestContext) -> String {
    context.parameters.get("space") ?? ""
  }
}

/// `GET /healthz`: `200 ok` once the store answers.
struct HealthController {
  let store: any RelayStore

  var endpoints: RouteCollection<BasicWebSocketRequestContext> {
    let store = store
    return RouteCollection(context: BasicWebSocketRequestContext.self)
      .get { _, _ -> String in
        _ = try await store.read(space: "", after: .max)
        return "ok"
      }
  }
}
