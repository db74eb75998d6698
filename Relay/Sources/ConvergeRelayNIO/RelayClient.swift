import Converge
import ConvergeRelayClient
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import Synchronization

extension RelayCloseReason {
  /// The reason a relay's close frame gives, if it is one of the relay's.
  public init?(closeFrame: WebSocketCloseFrame) {
    self.init(rawValue: UInt16(webSocketErrorCode: closeFrame.closeCode))
  }
}

extension RelayClient {
  /// A client for the space at `url` (`ws://host:port/v1/spaces/SPACE/sync`) over a NIO
  /// WebSocket (``WebSocketRelayConnector``), authorized by what `token` returns for the
  /// owner's replica id.
  ///
  /// ```swift
  /// let relay = RelayClient(url: url, token: { id in try await auth.relayToken(for: id) })
  /// Task { @MainActor in await relay.run(owner: notes) }
  /// ```
  public convenience init(
    url: String, token: @escaping @Sendable (ReplicaID) async throws -> String,
    backoff: Backoff = Backoff(), maxMessageSize: Int = 1 << 20,
    connectTimeout: Duration = .seconds(10),
    logger: Logger = Logger(label: "converge-relay-client")
  ) {
    self.init(
      connector: WebSocketRelayConnector(
        url: url, maxMessageSize: maxMessageSize, connectTimeout: connectTimeout, logger: logger),
      token: token, backoff: backoff)
  }
}

/// Opens relay sockets with HummingbirdWSClient (SwiftNIO): the relay client's socket on
/// Linux and servers.
///
/// The WebSocket client can stay stuck in an upgrade whose TCP connection closed under
/// it (seen when `converge-relay simulate` killed a relay mid-upgrade): that attempt
/// never completes, cancelled or not. So ``connect(token:)`` gives up on an attempt that
/// has not opened within `connectTimeout` (or whose task is cancelled) and cancels it;
/// should it ever open, it closes at once.
public struct WebSocketRelayConnector: RelaySocketConnector {
  public let url: String
  public let maxMessageSize: Int
  public let connectTimeout: Duration
  public let logger: Logger

  public init(
    url: String, maxMessageSize: Int = 1 << 20, connectTimeout: Duration = .seconds(10),
    logger: Logger = Logger(label: "converge-relay-client")
  ) {
    self.url = url
    self.maxMessageSize = maxMessageSize
    self.connectTimeout = connectTimeout
    self.logger = logger
  }

  /// What the socket's writer does, in order.
  enum Command: Sendable {
    case send([UInt8])
    case close
  }

  /// The socket a connection's handler serves: sending queues for its writer.
  struct Socket: RelaySocket {
    let commands: AsyncStream<Command>.Continuation

    func send(_ bytes: [UInt8]) async throws {
      guard case .enqueued = commands.yield(.send(bytes)) else { throw CancellationError() }
    }

    func close() async {
      commands.yield(.close)
      commands.finish()
    }
  }

  /// Resumes the caller of `connect(token:)` once: with the socket, or with why none
  /// opened.
  final class Opening: Sendable {
    typealias Opened = (socket: any RelaySocket, events: AsyncStream<RelaySocketEvent>)
    private let continuation: Mutex<CheckedContinuation<Opened, any Error>?>

    init(_ continuation: CheckedContinuation<Opened, any Error>) {
      self.continuation = Mutex(continuation)
    }

    /// Whether this call resumed the caller (`false`: it was resumed already).
    @discardableResult
    func resume(_ result: Result<Opened, any Error>) -> Bool {
      guard let continuation = continuation.withLock({ $0.take() }) else { return false }
      continuation.resume(with: result)
      return true
    }
  }

  /// The attempt gave up (``connectTimeout`` passed, or the caller was cancelled).
  struct ConnectAbandoned: Error {}
  /// The relay closed before the connection's handler ran.
  struct ClosedBeforeOpening: Error {}

  public func connect(token: String) async throws -> (
    socket: any RelaySocket, events: AsyncStream<RelaySocketEvent>
  ) {
    let configuration = WebSocketClientConfiguration(
      maxFrameSize: maxMessageSize, additionalHeaders: [.authorization: "Bearer \(token)"],
      autoPing: .enabled(timePeriod: .seconds(30)))
    let (url, maxMessageSize, logger, limit) = (url, maxMessageSize, logger, connectTimeout)
    let attempt = Mutex<(task: Task<Void, Never>, opening: Opening)?>(nil)
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let opening = Opening(continuation)
        let (events, event) = AsyncStream<RelaySocketEvent>.makeStream()
        let task = Task {
          do {
            let close = try await WebSocketClient.connect(
              url: url, configuration: configuration, logger: logger
            ) { inbound, outbound, _ in
              let (commands, command) = AsyncStream<Command>.makeStream()
              guard opening.resume(.success((Socket(commands: command), events))) else { return }
              try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                  for await next in commands {
                    switch next {
                    case .send(let bytes):
                      try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
                    case .close:
                      try await outbound.close(.normalClosure, reason: nil)
                      return
                    }
                  }
                }
                for try await message in inbound.messages(maxSize: maxMessageSize) {
                  guard case .binary(let buffer) = message else { continue }
                  event.yield(.message([UInt8](buffer: buffer)))
                }
                command.finish()
                group.cancelAll()
              }
            }
            opening.resume(.failure(ClosedBeforeOpening()))
            event.yield(.closed(code: close.map { UInt16(webSocketErrorCode: $0.closeCode) }))
          } catch {
            logger.debug("relay connection failed: \(error)")
            opening.resume(.failure(error))
            event.yield(.closed(code: nil))
          }
          event.finish()
        }
        attempt.withLock { $0 = (task, opening) }
        if Task.isCancelled, opening.resume(.failure(CancellationError())) { task.cancel() }
        Task {
          try? await Task.sleep(for: limit)
          if opening.resume(.failure(ConnectAbandoned())) { task.cancel() }
        }
      }
    } onCancel: {
      guard let (task, opening) = attempt.withLock({ $0 }) else { return }
      if opening.resume(.failure(ConnectAbandoned())) { task.cancel() }
    }
  }
}
