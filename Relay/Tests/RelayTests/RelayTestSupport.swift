import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayNIO
import ConvergeRelayTestSupport
import ConvergeStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// A relay running in this process on a free loopback port, over SQLite in a temporary
/// directory or, given `postgres`, over that database (as one node of several).
struct LiveRelay {
  static let secret = "relay-test-secret-at-least-32-bytes-long"
  let store: any RelayStore
  let directory: String
  let authority: RelayTokenAuthority
  private let ownsDirectory: Bool
  private let server: LocalRelay

  var port: Int { server.port }

  /// Starts a relay; with `sharing`, a second relay on the same database file, as a
  /// second process would be; with `countingReads` or a `readDelay`, over a
  /// ``CountingRelayStore``.
  static func start(
    sharing other: LiveRelay? = nil, postgres: String? = nil,
    countingReads: Bool = false, readDelay: Duration = .zero,
    _ configure: @Sendable (inout RelayConfiguration) -> Void = { _ in }
  ) async throws -> LiveRelay {
    let directory = other?.directory ?? temporaryDirectory()
    // A PostgreSQL store runs in the relay's service group, as `converge-relay serve`
    // runs it.
    let opened: any RelayStore
    var services: [any Service] = []
    if let postgres {
      let store = try PostgresRelayStore(url: postgres)
      services = store.services
      opened = store
    } else {
      opened = try await SQLiteRelayStore.open(path: directory + "/relay.sqlite")
    }
    let store: any RelayStore =
      countingReads || readDelay > .zero
      ? CountingRelayStore(inner: opened, readDelay: readDelay) : opened
    let authority = try await RelayTokenAuthority(secret: secret)
    var configuration = RelayConfiguration()
    configure(&configuration)
    var logger = Logger(label: "relay-test")
    logger.logLevel = .error
    let server = try await LocalRelay.start(
      store: store, services: services, authority: authority, configuration: configuration,
      logger: logger)
    return LiveRelay(
      store: store, directory: directory, authority: authority, ownsDirectory: other == nil,
      server: server)
  }

  func stop() async {
    await server.stop()
    await closeStore(store)
    if ownsDirectory { try? FileManager.default.removeItem(atPath: directory) }
  }

  func url(space: String) -> String { server.url(space: space) }

  /// Spaces the relay holds in memory now.
  func servedSpaces() async -> Int { await server.servedSpaces() }

  /// Bytes waiting in the relay's outgoing queues now, over all sockets.
  func queuedBytes() async -> Int { server.queuedBytes }

  /// A device in `space` through this relay, writing as `id`: an owner in memory and a
  /// relay client attached to it.
  @MainActor func device(_ id: UInt64, in space: String) throws -> RelayDevice {
    let owner = try RelayDevice.owner(id)
    return RelayDevice(owner: owner, client: client(for: owner, in: space))
  }

  /// A relay client for `owner` in `space` through this relay, whose tokens (signed at
  /// each connection) grant the owner's current id.
  @MainActor func client(
    for owner: DeviceReplica, in space: String,
    backoff: RelayClient.Backoff = RelayClient.Backoff()
  ) -> RelayClient {
    let authority = authority
    return RelayClient(
      url: url(space: space),
      token: { id in
        try await authority.sign(
          RelayTokenClaims(
            space: space, scope: .write, expiry: Date(timeIntervalSinceNow: 600),
            replicas: [id]))
      }, backoff: backoff)
  }

  func token(
    space: String, scope: RelayTokenClaims.Scope = .write, replicas: [ReplicaID],
    expiresIn seconds: Double = 600
  ) async throws -> String {
    try await authority.sign(
      RelayTokenClaims(
        space: space, scope: scope, expiry: Date(timeIntervalSinceNow: seconds),
        replicas: replicas))
  }
}

/// Closes either kind of store.
func closeStore(_ store: any RelayStore) async {
  if let store = store as? CountingRelayStore {
    await closeStore(store.inner)
    return
  }
  if let store = store as? SQLiteRelayStore { try? await store.close() }
  if let store = store as? PostgresRelayStore { await store.close() }
}

struct RelayTestError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

func temporaryDirectory() -> String {
  let path =
    FileManager.default.temporaryDirectory.path + "/converge-relay-\(UInt64.random(in: 0 ... .max))"
  try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  return path
}

/// What a raw socket saw: the messages the relay sent and how it closed.
struct Exchange {
  var received: [[UInt8]]
  var close: WebSocketCloseFrame?

  var closeReason: RelayCloseReason? {
    close.flatMap(RelayCloseReason.init(closeFrame:))
  }

  var acknowledgements: [RelayAcknowledgement] {
    received.compactMap { try? RelayAcknowledgement(decoding: $0[...]) }
  }
}

/// Opens a socket, sends `messages` in order (pausing `gap` between them), and reads until
/// the relay closes or, when `until` says the exchange is complete, closes it normally.
func exchange(
  url: String, token: String?, messages: [[UInt8]], gap: Duration = .zero,
  until done: @escaping @Sendable ([[UInt8]]) -> Bool = { _ in false }
) async throws -> Exchange {
  let received = Mutex<[[UInt8]]>([])
  var headers = HTTPFields()
  if let token { headers[.authorization] = "Bearer \(token)" }
  var logger = Logger(label: "relay-test-client")
  logger.logLevel = .error
  let close = try await WebSocketClient.connect(
    url: url, configuration: .init(maxFrameSize: 1 << 22, additionalHeaders: headers),
    logger: logger
  ) { inbound, outbound, _ in
    for message in messages {
      try await outbound.write(.binary(ByteBuffer(bytes: message)))
      if gap > .zero { try await Task.sleep(for: gap) }
    }
    for try await message in inbound.messages(maxSize: 1 << 22) {
      guard case .binary(let buffer) = message else { continue }
      let all = received.withLock { list in
        list.append([UInt8](buffer: buffer))
        return list
      }
      if done(all) {
        try await outbound.close(.normalClosure, reason: nil)
        break
      }
    }
  }
  return Exchange(received: received.withLock { $0 }, close: close)
}

/// A device as a test drives it: its replica's owner (in memory) on the main actor and a
/// relay client attached to it; ``status`` follows the client's statuses while ``run()``
/// runs.
@MainActor final class RelayDevice {
  let owner: DeviceReplica
  let client: RelayClient
  private(set) var status: RelayClientStatus = .offline

  /// An owner in memory whose replica id is `id`.
  static func owner(_ id: UInt64) throws -> DeviceReplica {
    var configuration = DocumentStore.Configuration()
    configuration.freshID = { ReplicaID(rawValue: id) }
    return try DeviceReplica.inMemory(configuration: configuration)
  }

  init(owner: DeviceReplica, client: RelayClient) {
    self.owner = owner
    self.client = client
  }

  /// Runs the client on the owner until the task is cancelled or the relay refuses it.
  func run() async {
    let statuses = client.statuses
    let watcher = Task { @MainActor in
      for await status in statuses { self.status = status }
    }
    await client.run(owner: owner)
    watcher.cancel()
  }

  @discardableResult
  func transact(_ body: (inout DocumentTransaction) -> Void) -> Commit { owner.transact(body) }

  var replica: Replica { owner.replica }
  /// What the relay has acknowledged, as the owner recorded it.
  var acknowledged: CausalContext { owner.acknowledgedContext(of: client.peer) }
  /// What the relay has not acknowledged.
  var pending: DocumentDelta { owner.replica.delta(since: acknowledged) }
}

/// A replica with a fixed id, and one transaction's delta on it.
func edit(_ id: UInt64, note: String, title: String) -> (Replica, DocumentDelta) {
  var replica = Replica(id: ReplicaID(rawValue: id))
  let key = EntityKey(type: "note", id: note)
  let commit = replica.transact { tx in
    tx.create(key)
    tx.setValue(.string(title), for: "title", of: key)
  }
  return (replica, commit.delta)
}

/// Waits up to `limit` for `condition`, polling; a bound, not a performance assertion.
func eventually(
  within limit: Duration = .seconds(30), isolation: isolated (any Actor)? = #isolation,
  _ condition: () async -> Bool
) async -> Bool {
  let deadline = ContinuousClock.now + limit
  while ContinuousClock.now < deadline {
    if await condition() { return true }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return await condition()
}

/// A relay's routes driven in this process through HummingbirdTesting's router mode (no
/// socket, no port), over SQLite in a temporary directory: for the HTTP routes. Tests of
/// sockets use a ``LiveRelay``.
struct RoutedRelay {
  let store: SQLiteRelayStore
  let authority: RelayTokenAuthority
  let directory: String

  static func open() async throws -> RoutedRelay {
    let directory = temporaryDirectory()
    return RoutedRelay(
      store: try await SQLiteRelayStore.open(path: directory + "/relay.sqlite"),
      authority: try await RelayTokenAuthority(secret: LiveRelay.secret), directory: directory)
  }

  /// Runs `body` with a client of the relay's router.
  func test<Value: Sendable>(
    _ body: @Sendable (any TestClientProtocol) async throws -> Value
  ) async throws -> Value {
    let application = RelayServer(
      store: store, authority: authority, configuration: RelayConfiguration()
    ).makeApplication()
    return try await application.test(.router, body)
  }

  func token(
    space: String, scope: RelayTokenClaims.Scope = .write, replicas: [ReplicaID]
  ) async throws -> String {
    try await authority.sign(
      RelayTokenClaims(
        space: space, scope: scope, expiry: Date(timeIntervalSinceNow: 600), replicas: replicas))
  }

  func close() async {
    try? await store.close()
    try? FileManager.default.removeItem(atPath: directory)
  }
}

extension TestClientProtocol {
  /// A request to `uri` with `token` as its bearer and `body` (none when empty).
  func send(
    _ uri: String, _ method: HTTPRequest.Method, token: String?, body: [UInt8] = []
  ) async throws -> TestResponse {
    var headers = HTTPFields()
    if let token { headers[.authorization] = "Bearer \(token)" }
    return try await execute(
      uri: uri, method: method, headers: headers,
      body: body.isEmpty ? nil : ByteBuffer(bytes: body))
  }
}

extension TestResponse {
  /// The body's bytes.
  var bytes: [UInt8] { [UInt8](buffer: body) }
}
