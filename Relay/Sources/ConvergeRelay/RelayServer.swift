import Converge
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import RelayWire

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
/// The token travels as `Authorization: Bearer …` or, for WebSocket clients that cannot
/// set headers, as the `token` query parameter.
public struct RelayServer: Sendable {
  let store: any RelayStore
  let authority: RelayTokenAuthority
  let configuration: RelayConfiguration
  let spaces: SpaceDirectory

  /// A relay over `store` that accepts tokens signed by `authority`.
  public init(
    store: any RelayStore, authority: RelayTokenAuthority, configuration: RelayConfiguration
  ) {
    self.store = store
    self.authority = authority
    self.configuration = configuration
    self.spaces = SpaceDirectory(
      store: store, compactionInterval: configuration.compactionInterval,
      pollInterval: configuration.storePollInterval,
      notifiedPollInterval: configuration.notifiedStorePollInterval)
  }

  /// The Hummingbird application; run it with `runService()` or in a service group.
  /// `onRunning` receives the bound port (useful with port 0).
  public func makeApplication(
    logger: Logger = Logger(label: "converge-relay"),
    onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
  ) -> some ApplicationProtocol {
    let router = Router(context: BasicWebSocketRequestContext.self)
    let relay = self
    router.get("healthz") { _, _ -> String in
      _ = try await relay.store.read(space: "", after: .max)
      return "ok"
    }
    router.ws(
      "v1/spaces/:space/sync",
      onUpgrade: { inbound, outbound, context in
        let space = context.requestContext.parameters.get("space") ?? ""
        try await relay.serve(
          space: space, token: Self.token(of: context.request), inbound: inbound,
          outbound: outbound)
      })
    router.post("v1/spaces/:space/push") { request, context -> Response in
      try await relay.push(request, space: context.parameters.get("space") ?? "")
    }
    router.post("v1/spaces/:space/pull") { request, context -> Response in
      try await relay.pull(request, space: context.parameters.get("space") ?? "")
    }
    router.get("v1/spaces/:space/pull") { request, context -> Response in
      try await relay.pull(request, space: context.parameters.get("space") ?? "")
    }
    return Application(
      router: router,
      server: .http1WebSocketUpgrade(
        webSocketRouter: router,
        configuration: .init(maxFrameSize: configuration.maxMessageSize)),
      configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
      onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
      logger: logger)
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
    do {
      hub = try await spaces.hub(for: space)
      try await hub.refresh()
    } catch {
      await refuse(RelayCloseReason(refreshing: error), inbound: inbound, outbound: outbound)
      return
    }
    let state = ConnectionState()
    let (queue, continuation) = AsyncStream<[UInt8]>.makeStream(
      bufferingPolicy: .bufferingOldest(configuration.queueLimit))
    var peer = RelayPeer(grant: grant, hub: hub) { result in
      switch result {
      case .success(let durable):
        if case .dropped = continuation.yield(RelayAcknowledgement(durable: durable).encoded()) {
          state.close(.slowConsumer)
          continuation.finish()
        }
      case .failure(let error):
        state.close(RelayCloseReason(refreshing: error))
        continuation.finish()
      }
    }
    let peerID = peer.id
    await hub.subscribe(peerID) { bytes in
      switch continuation.yield(bytes) {
      case .enqueued: return true
      case .dropped:
        state.close(.slowConsumer)
        continuation.finish()
        return false
      case .terminated: return false
      @unknown default: return false
      }
    }
    let idleTimeout = configuration.idleTimeout
    // Expiry and idleness, outside the group so that ending it never cancels the writer
    // before its close frame is out.
    let watchdog = Task {
      // Expiry and idleness, for sockets that live longer than their token.
      while !Task.isCancelled {
        let untilExpiry = grant.expiry.timeIntervalSinceNow
        if untilExpiry <= 0 {
          state.close(.tokenExpired)
        } else if ContinuousClock.now - state.lastHeard >= idleTimeout {
          state.close(.idleTimeout)
        }
        if state.reason != nil {
          continuation.finish()
          return
        }
        let nap = min(.seconds(min(untilExpiry, 1)) + .milliseconds(1), idleTimeout / 4)
        try? await Task.sleep(for: nap)
      }
    }
    // The only writer, so pushes, answers and acknowledgements keep their order. It
    // starts once the client has spoken (see above); until then the queue holds pushes.
    let writer: @Sendable () async -> Void = {
      for await bytes in queue {
        do {
          try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
        } catch {
          break
        }
      }
      if let reason = state.reason {
        try? await outbound.close(reason.webSocketCode, reason: reason.description)
      }
    }
    // A stream the library refused (a continuation frame with no message started, a
    // message over `maxMessageSize` in fragments under the frame limit): thrown again
    // once the socket is cleaned up, so that the library closes with its code (1002,
    // 1009) and not as a normal closure.
    let refusedStream: (any Error)? = await withTaskGroup(of: Void.self) { group in
      var refusedStream: (any Error)?
      var writing = false
      var limiter = RateLimiter(perSecond: configuration.messagesPerSecond)
      do {
        for try await message in inbound.messages(maxSize: configuration.maxMessageSize) {
          state.heard()
          if !writing {
            writing = true
            group.addTask(operation: writer)
          }
          guard limiter.allow() else {
            state.close(.rateLimited)
            break
          }
          guard case .binary(let buffer) = message else {
            state.close(.malformedMessage)
            break
          }
          switch await peer.handle([UInt8](buffer: buffer)[...]) {
          case .success(let replies):
            for reply in replies { continuation.yield(reply) }
          case .failure(let reason):
            state.close(reason)
          }
          if state.reason != nil { break }
        }
      } catch {
        refusedStream = error
      }
      continuation.finish()
      if !writing { group.addTask(operation: writer) }
      await group.waitForAll()
      return refusedStream
    }
    watchdog.cancel()
    await hub.unsubscribe(peerID)
    if let refusedStream { throw refusedStream }
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
    let hub = try await spaces.hub(for: space)
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
      durable = try await hub.commit(delta, from: nil)
    }
    return Self.binaryResponse(RelayAcknowledgement(durable: durable).encoded())
  }

  func pull(_ request: Request, space: String) async throws -> Response {
    _ = try await grant(for: request, space: space)
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
    let hub = try await spaces.hub(for: space)
    do {
      try await hub.refresh()
    } catch {
      throw RelayCloseReason(refreshing: error).httpError
    }
    let replica = await hub.replica
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
    self = error is ConvergeDecodingError ? .storedDataUnreadable : .serverError
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
      case .wrongSpace, .readOnlyToken, .replicaNotGranted, .observedUnknownEvents: .forbidden
      case .rateLimited: .tooManyRequests
      case .idleTimeout, .slowConsumer, .serverError, .storedDataUnreadable: .internalServerError
      }
    return HTTPError(status, message: description)
  }
}
