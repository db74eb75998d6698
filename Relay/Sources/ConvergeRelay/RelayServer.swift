import Converge
import ConvergeRelayClient
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The sync relay: a WebSocket route and an HTTP pair per space, over a ``RelayStore``.
///
/// Routes:
/// - `GET /healthz`: `200 ok` once the store answers.
/// - `GET /v1/spaces/:space/sync`, upgraded to a WebSocket: binary `SyncSession` messages
///   and frames both ways, plus ``RelayAcknowledgement``s from the relay.
/// - `POST /v1/spaces/:space/push`: a delta or sync message as the body; answers with a
///   ``RelayAcknowledgement`` once it is durable.
/// - `POST /v1/spaces/:space/pull`: a causal context as the body (empty: nothing known);
///   answers with a sync message carrying the relay's context and what the body lacks.
///   `GET` is the same with an empty context.
///
/// A push or pull under a write token records its device as a socket's handshake does
/// (the context it states, a pull's body or a push's sync message, as seen), so a device
/// that only uses the HTTP pair holds the stable cut back and is retired like the others;
/// once retired it is refused with 403 (`retired`).
///
/// The token travels as `Authorization: Bearer …` or, for WebSocket clients that cannot
/// set headers, as the `token` query parameter.
public struct RelayServer: Sendable {
  let store: any RelayStore
  let authority: RelayTokenAuthority
  let configuration: RelayConfiguration
  let spaces: SpaceDirectory
  let deadlines: SocketDeadlines
  /// The bytes queued for all sockets, against `processQueueByteLimit`.
  let queues: QueueBudget

  /// A relay over `store` that accepts tokens signed by `authority`.
  public init(
    store: any RelayStore, authority: RelayTokenAuthority, configuration: RelayConfiguration
  ) {
    self.store = store
    self.authority = authority
    self.configuration = configuration
    self.spaces = SpaceDirectory(store: store, configuration: configuration)
    self.deadlines = SocketDeadlines(
      idleTimeout: configuration.idleTimeout, grace: configuration.closeGracePeriod)
    self.queues = QueueBudget(limit: configuration.processQueueByteLimit)
  }

  /// Spaces whose replica the relay holds in memory now (for the test support's
  /// `LocalRelay`).
  package func servedSpaces() async -> Int {
    await spaces.servedCount
  }

  /// Bytes waiting in the sockets' outgoing queues now, summed over the process's sockets.
  package var queuedBytes: Int { queues.bytes }

  /// The Hummingbird application; run it in a `ServiceGroup` after the store's services
  /// (``PostgresRelayStore/services``), or with `runService()` over a store that needs
  /// none (``SQLiteRelayStore``). It starts accepting once the store is
  /// ``RelayStore/ready()``. `onRunning` receives the bound port (useful with port 0).
  public func makeApplication(
    logger: Logger = Logger(label: "converge-relay"),
    onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
  ) -> some ApplicationProtocol {
    let router = Router(context: BasicWebSocketRequestContext.self)
      .addRoutes(HealthController(store: store).endpoints, atPath: "healthz")
      .addRoutes(SpaceController(relay: self).endpoints, atPath: "v1/spaces/:space")
    let webSocket = WebSocketServerConfiguration(
      maxFrameSize: configuration.maxMessageSize,
      autoPing: configuration.pingInterval > .zero
        ? .enabled(timePeriod: configuration.pingInterval) : .disabled)
    let webSocketResponder = router.buildResponder()
    let messagesPerSecond = configuration.messagesPerSecond
    var application = Application(
      router: router,
      server: HTTPServerBuilder { responder in
        PolicedWebSocketChannel(
          upgrading: HTTP1WebSocketUpgradeChannel(
            responder: responder, webSocketResponder: webSocketResponder,
            configuration: .init(http1: .init(idleTimeout: nil), ws: webSocket)),
          messagesPerSecond: messagesPerSecond)
      },
      configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
      onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
      logger: logger)
    // The store's own services run before the server in the group; accept nothing until
    // its tables are in place.
    let store = store
    application.beforeServerStarts { try await store.ready() }
    return application
  }

  static func token(of request: Request) -> String? {
    if let header = request.headers[.authorization], header.hasPrefix("Bearer ") {
      return String(header.dropFirst("Bearer ".count))
    }
    return request.uri.queryParameters.get("token")
  }

  // MARK: WebSocket

  /// Serves one socket. The relay speaks only after the client has sent its first
  /// message: a close frame or push written in the same moment as the upgrade response
  /// can reach a client before its WebSocket pipeline is in place, and the client then
  /// never sees it (seen with the swift-websocket client: its socket stayed in
  /// CLOSE-WAIT). Every client opens with a handshake, so this costs no round trip.
  ///
  /// Throws what the library's message stream threw (a protocol error, a message too
  /// large), for the library to close the socket with that error's code.
  func serve(
    space: String, token: String?, inbound: WebSocketInboundStream,
    outbound: WebSocketOutboundWriter
  ) async throws {
    let grant: RelayGrant
    switch await authority.authorize(token, space: space) {
    case .failure(let reason):
      await refuse(reason, inbound: inbound, outbound: outbound)
      return
    case .success(let granted): grant = granted
    }
    let hub: SpaceHub
    switch await spaces.acquire(space, socket: true) {
    case .failure(let reason):
      await refuse(reason, inbound: inbound, outbound: outbound)
      return
    case .success(let taken): hub = taken
    }
    do {
      try await hub.refresh()
    } catch {
      await spaces.release(space, hub, socket: true)
      await refuse(RelayCloseReason(refreshing: error), inbound: inbound, outbound: outbound)
      return
    }
    let refusedStream = await connect(hub, grant: grant, inbound: inbound, outbound: outbound)
    await spaces.release(space, hub, socket: true)
    if let refusedStream { throw refusedStream }
  }

  /// Serves an admitted, authorized socket until it closes.
  ///
  /// Nothing here has a timer: the token's expiry, idleness and the grace period of a
  /// socket that is closing are ``SocketDeadlines``, kept by one timer for the process.
  /// Everything the socket is sent goes through its ``Outbox``, bounded in messages and
  /// bytes; the socket is closed with `slowConsumer` when it overflows, its reader stops,
  /// and a client that takes nothing within the grace period is disconnected.
  ///
  /// - Returns: the error the library's message stream threw, if it refused the stream
  ///   (a continuation frame with no message started, a message over `maxMessageSize` in
  ///   fragments under the frame limit), to be thrown once the socket is cleaned up so
  ///   that the library closes with its code (1002, 1009), not as a normal closure.
  private func connect(
    _ hub: SpaceHub, grant: RelayGrant, inbound: WebSocketInboundStream,
    outbound: WebSocketOutboundWriter
  ) async -> (any Error)? {
    let state = ConnectionState()
    let outbox = Outbox(
      countLimit: configuration.queueLimit, byteLimit: configuration.queueByteLimit,
      process: queues)
    let deadlines = self.deadlines
    // The first reason wins; the writer sends what is queued, then the close frame.
    let shut: @Sendable (RelayCloseReason) -> Void = { reason in
      if state.close(reason) { deadlines.closing() }
      outbox.finish()
    }
    let peer = RelayPeer(grant: grant, hub: hub) { result in
      switch result {
      case .success(let durable):
        if let refusal = outbox.send(RelayAcknowledgement(durable: durable).encoded()) {
          shut(refusal)
        }
      case .failure(let error):
        shut(RelayCloseReason(refreshing: error))
      }
    }
    let peerID = peer.id
    await hub.subscribe(peerID, close: shut) { bytes in
      guard let refusal = outbox.send(bytes) else { return true }
      shut(refusal)
      return false
    }
    // The only writer, so pushes, answers and acknowledgements keep their order. It
    // starts once the client has spoken (see `serve`); until then the queue holds pushes.
    let writer = SocketWriter {
      for await bytes in outbox.messages {
        do {
          try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
        } catch {
          break
        }
        outbox.written(bytes.count)
      }
      if let reason = state.reason {
        try? await outbound.close(reason.webSocketCode, reason: reason.description)
      }
    }
    let (abandoned, abandon) = AsyncStream<Void>.makeStream()
    let untilExpiry = min(max(0, grant.expiry.timeIntervalSinceNow), 3e8)
    deadlines.add(
      peerID,
      SocketDeadlines.Socket(
        state: state, expiry: .now + .seconds(untilExpiry), expired: shut,
        stuck: {
          writer.abandon()
          abandon.finish()
        }))
    let maxMessageSize = configuration.maxMessageSize
    let refusedStream = await withTaskGroup(of: (any Error)?.self) { group in
      group.addTask {
        var peer = peer
        do {
          // The rate limit is the pipeline's (`InboundFramePolicy`): it counts frames as
          // they are read off the socket, not as this loop gets to them, and stands a
          // marker for the first frame over it.
          for try await message in inbound.messages(maxSize: maxMessageSize) {
            state.heard()
            writer.start()
            guard case .binary(let buffer) = message else {
              let marker = WebSocketMessage.text(InboundFramePolicy.rateLimitedMarker)
              shut(message == marker ? .rateLimited : .malformedMessage)
              break
            }
            switch await peer.handle([UInt8](buffer: buffer)[...]) {
            case .success(let replies):
              for reply in replies {
                if let refusal = outbox.send(reply) {
                  shut(refusal)
                  break
                }
              }
            case .failure(let reason):
              shut(reason)
            }
            if state.reason != nil { break }
          }
        } catch {
          return error
        }
        return nil
      }
      // A socket closing for longer than the grace period stops reading too.
      group.addTask {
        for await _ in abandoned {}
        return nil
      }
      let first = await group.next() ?? nil
      group.cancelAll()
      return first
    }
    outbox.finish()
    writer.start()
    await writer.finished()
    deadlines.remove(peerID)
    abandon.finish()
    await hub.unsubscribe(peerID)
    return refusedStream
  }

  /// Closes a socket the relay will not serve, with `reason`, once the client has sent
  /// its first message or `idleTimeout` has passed, whichever comes first.
  private func refuse(
    _ reason: RelayCloseReason, inbound: WebSocketInboundStream,
    outbound: WebSocketOutboundWriter
  ) async {
    let maxSize = configuration.maxMessageSize
    let grace = configuration.idleTimeout
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        var messages = inbound.messages(maxSize: maxSize).makeAsyncIterator()
        _ = try? await messages.next()
      }
      group.addTask { try? await Task.sleep(for: grace) }
      await group.next()
      group.cancelAll()
    }
    try? await outbound.close(reason.webSocketCode, reason: reason.description)
  }

  // MARK: HTTP

  private func grant(for request: Request, space: String) async throws -> RelayGrant {
    switch await authority.authorize(Self.token(of: request), space: space) {
    case .success(let grant): return grant
    case .failure(let reason): throw reason.httpError
    }
  }

  private func body(of request: Request) async throws -> [UInt8] {
    var request = request
    do {
      return [UInt8](buffer: try await request.collectBody(upTo: configuration.maxMessageSize))
    } catch {
      throw RelayCloseReason.messageTooLarge.httpError
    }
  }

  func push(_ request: Request, space: String) async throws -> Response {
    let grant = try await grant(for: request, space: space)
    let bytes = try await body(of: request)
    guard let message = try? SyncMessage(decoding: bytes) else {
      throw RelayCloseReason.malformedMessage.httpError
    }
    let durable = try await spaces.withHub(space) { hub in
      try await Self.admit(grant, context: message.context, to: hub)
      do {
        try await hub.refresh()
      } catch {
        throw RelayCloseReason(refreshing: error).httpError
      }
      let held = await hub.replica
      var durable = held.context
      if let delta = message.delta, !delta.isEmpty {
        if let refusal = await grant.refusal(toPush: delta, known: held.document) {
          throw refusal.httpError
        }
        do {
          durable = try await hub.commit(delta, from: nil)
        } catch let error as SpaceHubOverloaded {
          throw RelayCloseReason(refreshing: error).httpError
        }
      }
      return durable
    }
    return Self.binaryResponse(RelayAcknowledgement(durable: durable).encoded())
  }

  /// Admits an HTTP request's device as a socket's first message is (recorded with what
  /// it states, refused if retired; see `SpaceHub.admit`), so devices that only push
  /// and pull hold the stable cut back and are retired like the others.
  private static func admit(_ grant: RelayGrant, context: CausalContext?, to hub: SpaceHub)
    async throws
  {
    let admission: SpaceHub.Admission
    do {
      admission = try await hub.admit(nil, grant: grant, context: context)
    } catch {
      throw RelayCloseReason(refreshing: error).httpError
    }
    if admission == .retired { throw RelayCloseReason.retired.httpError }
  }

  func pull(_ request: Request, space: String) async throws -> Response {
    let grant = try await grant(for: request, space: space)
    let bytes = try await body(of: request)
    let known: CausalContext
    if bytes.isEmpty {
      known = CausalContext()
    } else {
      guard let decoded = try? CausalContext(decoding: bytes) else {
        throw RelayCloseReason.malformedMessage.httpError
      }
      known = decoded
    }
    let replica = try await spaces.withHub(space) { hub in
      try await Self.admit(grant, context: known, to: hub)
      do {
        try await hub.refresh()
      } catch {
        throw RelayCloseReason(refreshing: error).httpError
      }
      return await hub.replica
    }
    let delta = replica.delta(since: known)
    return Self.binaryResponse(
      SyncMessage(context: replica.context, delta: delta.isEmpty ? nil : delta).encoded())
  }

  private static func binaryResponse(_ bytes: [UInt8]) -> Response {
    Response(
      status: .ok, headers: [.contentType: "application/octet-stream"],
      body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
  }
}

extension RelayCloseReason {
  /// Why a space could not be brought up to date from the store: bytes it holds that
  /// do not decode, or the store's own failure.
  init(refreshing error: any Error) {
    self =
      switch error {
      case is ConvergeDecodingError: .storedDataUnreadable
      case is SpaceHubOverloaded: .spaceBusy
      default: .serverError
      }
  }

  var webSocketCode: WebSocketErrorCode {
    WebSocketErrorCode(codeNumber: Int(rawValue))
  }

  /// The HTTP pair's answer for the same refusal.
  var httpError: HTTPError {
    let status: HTTPResponse.Status =
      switch self {
      case .malformedMessage: .badRequest
      case .messageTooLarge: .contentTooLarge
      case .unauthorized, .tokenExpired: .unauthorized
      case .wrongSpace, .readOnlyToken, .replicaNotGranted, .observedUnknownEvents, .retired:
        .forbidden
      case .rateLimited: .tooManyRequests
      case .relayBusy, .spaceBusy: .serviceUnavailable
      case .idleTimeout, .slowConsumer, .serverError, .storedDataUnreadable: .internalServerError
      }
    return HTTPError(status, message: description)
  }
}
