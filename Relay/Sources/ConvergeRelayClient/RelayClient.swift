import Converge
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import RelayWire

extension RelayCloseReason {
  /// The reason a relay's close frame gives, if it is one of the relay's.
  public init?(closeFrame: WebSocketCloseFrame) {
    self.init(rawValue: UInt16(webSocketErrorCode: closeFrame.closeCode))
  }
}

/// Where a ``RelayClient`` stands, as its ``RelayClient/statuses`` stream reports it.
public enum RelayClientStatus: Sendable, Equatable {
  /// Connecting, or waiting to reconnect.
  case offline
  /// The socket is open; the handshake has not completed.
  case connected
  /// The handshake has completed and some local events are not yet acknowledged.
  case syncing
  /// Every local event is durable on the relay and the relay's answer has arrived.
  case upToDate
  /// The relay refused the connection for a reason retrying cannot fix; the client
  /// stopped.
  case refused(RelayCloseReason)
}

/// A device's connection to a relay space: it connects, handshakes from the replica,
/// sends what the relay lacks, applies what arrives, and reconnects after a failure with
/// exponential backoff and jitter, until its task is cancelled or the relay refuses it.
///
/// ```swift
/// let client = try await RelayClient(
///   url: "ws://127.0.0.1:7780/v1/spaces/notes/sync", token: token,
///   store: InMemoryRelayClientStore())
/// let sync = Task { await client.run() }
/// try await client.transact { $0.create(EntityKey(type: "note", id: "a")) }
/// ```
public actor RelayClient {
  /// Reconnection delays: `base · 2^attempt`, at most `maximum`, each scaled by a
  /// random factor in 0.5…1 so that devices do not reconnect in step.
  public struct Backoff: Sendable {
    public var base: Duration
    public var maximum: Duration

    public init(base: Duration = .milliseconds(200), maximum: Duration = .seconds(30)) {
      self.base = base
      self.maximum = maximum
    }

    func delay(attempt: Int) -> Duration {
      let doubled = base * (1 << min(attempt, 20))
      return min(maximum, doubled) * Double.random(in: 0.5...1)
    }
  }

  private let url: String
  private let token: String
  private let store: any RelayClientStore
  private let backoff: Backoff
  private let maxMessageSize: Int
  private let logger: Logger
  /// The device's replica, as last saved to the store.
  public private(set) var replica: Replica
  /// What the relay has acknowledged (joined over every acknowledgement).
  public private(set) var acknowledged: CausalContext
  private var session = SyncSession()
  private var outgoing: AsyncStream<[UInt8]>.Continuation?
  private var handshakeAnswered = false
  /// The current connection attempt, and the last one that reached its handler.
  private var generation = 0
  private var handlerGeneration = 0
  /// How long a connection attempt may take to open its socket before the client gives
  /// up on it and tries again.
  private let connectTimeout: Duration
  private var lastStatus: RelayClientStatus?
  private let statusContinuation: AsyncStream<RelayClientStatus>.Continuation
  private let changesContinuation: AsyncStream<DocumentChanges>.Continuation
  /// Every status change, starting with `offline`.
  public nonisolated let statuses: AsyncStream<RelayClientStatus>
  /// What each delta from the relay changed, for the UI.
  public nonisolated let changes: AsyncStream<DocumentChanges>

  /// A client for the space at `url` (`ws://host:port/v1/spaces/SPACE/sync`), starting
  /// from what `store` holds.
  public init(
    url: String, token: String, store: any RelayClientStore, backoff: Backoff = Backoff(),
    maxMessageSize: Int = 1 << 20, connectTimeout: Duration = .seconds(10),
    logger: Logger = Logger(label: "converge-relay-client")
  ) async throws {
    self.connectTimeout = connectTimeout
    self.url = url
    self.token = token
    self.store = store
    self.backoff = backoff
    self.maxMessageSize = maxMessageSize
    self.logger = logger
    (replica, acknowledged) = try await store.load()
    (statuses, statusContinuation) = AsyncStream<RelayClientStatus>.makeStream()
    (changes, changesContinuation) = AsyncStream<DocumentChanges>.makeStream()
  }

  /// The latest status ``statuses`` reported.
  public var status: RelayClientStatus { lastStatus ?? .offline }

  /// What the relay has not acknowledged yet.
  public var pending: DocumentDelta { replica.delta(since: acknowledged) }

  /// Runs a local transaction, saves it, and pushes it at once when connected (or with
  /// the next handshake otherwise).
  @discardableResult
  public func transact(_ body: (inout DocumentTransaction) -> Void) async throws -> Commit {
    try await edit { $0.transact(body) }
  }

  /// Runs `edit`, which makes exactly one transaction on the replica and returns it (a
  /// workload, an import written against `Replica`), then saves and pushes it as
  /// ``transact(_:)`` does.
  @discardableResult
  public func edit(_ edit: (inout Replica) -> Commit) async throws -> Commit {
    let commit = edit(&replica)
    try await store.save(replica)
    if let outgoing, handshakeAnswered, !commit.delta.isEmpty {
      outgoing.yield(session.pushEncoded(commit, from: replica))
      report(.syncing)
    }
    return commit
  }

  /// Connects and keeps the connection up until the task is cancelled or the relay
  /// refuses the client.
  public func run() async {
    var attempt = 0
    report(.offline)
    while !Task.isCancelled {
      var closeReason: RelayCloseReason?
      switch await connectionAttempt() {
      case .some(.success(let close)):
        closeReason = close.flatMap(RelayCloseReason.init(closeFrame:))
      case .some(.failure(let error)):
        logger.debug("relay connection failed: \(error)")
      case .none:
        logger.debug("relay connection abandoned")
      }
      if handshakeAnswered { attempt = 0 }
      disconnected()
      if let closeReason, !closeReason.isRetryable {
        report(.refused(closeReason))
        statusContinuation.finish()
        return
      }
      report(.offline)
      try? await Task.sleep(for: backoff.delay(attempt: attempt))
      attempt += 1
    }
  }

  /// One connection, from connecting to its close; `nil` when it was abandoned.
  ///
  /// The WebSocket client can stay stuck in an upgrade whose TCP connection closed under
  /// it (seen when `converge-relay simulate` killed a relay mid-upgrade): that attempt
  /// never completes, cancelled or not. So the client stops waiting for an attempt when
  /// its own task is cancelled or when the attempt has not reached its first message
  /// within ``connectTimeout``; the abandoned attempt is cancelled, and should it ever
  /// go on, its generation no longer matches and it does nothing.
  private func connectionAttempt() async -> Result<WebSocketCloseFrame?, any Error>? {
    generation &+= 1
    let current = generation
    let (signals, signal) = AsyncStream<Bool>.makeStream()
    let connection = Task {
      let result: Result<WebSocketCloseFrame?, any Error>
      do {
        result = .success(try await self.connectOnce(generation: current))
      } catch {
        result = .failure(error)
      }
      signal.yield(true)
      return result
    }
    let limit = connectTimeout
    let timer = Task {
      try? await Task.sleep(for: limit)
      if await !self.reachedHandler(current) { signal.yield(false) }
    }
    var iterator = signals.makeAsyncIterator()
    // `nil` when this task is cancelled.
    let finished = await iterator.next() ?? false
    timer.cancel()
    guard finished else {
      connection.cancel()
      return nil
    }
    return await connection.value
  }

  private func reachedHandler(_ attempt: Int) -> Bool {
    handlerGeneration == attempt
  }

  private func connectOnce(generation attempt: Int) async throws
    -> WebSocketCloseFrame?
  {
    let configuration = WebSocketClientConfiguration(
      maxFrameSize: maxMessageSize, additionalHeaders: [.authorization: "Bearer \(token)"],
      autoPing: .enabled(timePeriod: .seconds(30)))
    let maxMessageSize = maxMessageSize
    return try await WebSocketClient.connect(
      url: url, configuration: configuration, logger: logger
    ) { inbound, outbound, _ in
      guard let queue = await self.connected(generation: attempt) else { return }
      try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
          for await bytes in queue { try await outbound.write(.binary(ByteBuffer(bytes: bytes))) }
        }
        for try await message in inbound.messages(maxSize: maxMessageSize) {
          guard case .binary(let buffer) = message else { continue }
          try await self.receive([UInt8](buffer: buffer))
        }
        group.cancelAll()
      }
    }
  }

  /// A new connection: a fresh session whose first message states the replica's context;
  /// `nil` for an attempt the client has abandoned.
  private func connected(generation attempt: Int) -> AsyncStream<[UInt8]>? {
    guard attempt == generation else { return nil }
    handlerGeneration = attempt
    let (queue, continuation) = AsyncStream<[UInt8]>.makeStream()
    session.reset()
    handshakeAnswered = false
    outgoing = continuation
    if let opening = session.makeEncodedMessage(for: replica) { continuation.yield(opening) }
    report(.connected)
    return queue
  }

  private func disconnected() {
    outgoing?.finish()
    outgoing = nil
    handshakeAnswered = false
  }

  /// Handles a message from the relay. Everything the relay sends is durable there: its
  /// handshake context, the deltas it fans out, and its acknowledgements.
  private func receive(_ bytes: [UInt8]) async throws {
    if RelayAcknowledgement.isRelayEnvelope(bytes[...]) {
      let acknowledgement = try RelayAcknowledgement(decoding: bytes[...])
      try await noteDurable(acknowledgement.durable)
    } else {
      let message = try session.decode(bytes[...])
      let changes = session.receive(message, into: &replica)
      if !changes.isEmpty { changesContinuation.yield(changes) }
      if message.delta != nil { try await store.save(replica) }
      if let stated = message.context {
        handshakeAnswered = true
        try await noteDurable(stated)
      } else if let delta = message.delta {
        try await noteDurable(delta.context)
      }
      if let reply = session.makeEncodedMessage(for: replica) { outgoing?.yield(reply) }
    }
    updateSyncStatus()
  }

  private func noteDurable(_ durable: CausalContext) async throws {
    acknowledged.formUnion(durable)
    try await store.recordAcknowledgement(durable)
  }

  private func updateSyncStatus() {
    guard outgoing != nil, handshakeAnswered else { return }
    report(acknowledged.includes(replica.context) ? .upToDate : .syncing)
  }

  private func report(_ status: RelayClientStatus) {
    guard status != lastStatus else { return }
    lastStatus = status
    statusContinuation.yield(status)
  }
}
