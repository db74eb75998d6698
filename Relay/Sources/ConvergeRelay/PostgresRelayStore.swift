import Converge
import ConvergeRelayClient
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import ServiceLifecycle
import Synchronization

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The ``RelayStore`` for several relay nodes: PostgreSQL holds every space's log and
/// snapshot, and any node serves any space.
///
/// - Appends are written in batches: whatever appends are waiting when the previous batch
///   returns go together, one per space (a second append to a space waits for the next
///   batch). A batch is one statement, hence one transaction and one WAL flush: for each
///   space it advances the space's row in `converge_relay_heads` (`INSERT … ON CONFLICT DO
///   UPDATE … RETURNING`, which holds that row's lock until commit) and inserts the entry at
///   the new head. A second appender to a space waits for the lock, so positions are
///   gap-free and commit in position order: a reader that sees position n sees every
///   position before it. (A `bigserial` would not do: a reader can see row 2 committed
///   while row 1 is in flight and skip row 1 for good.) A batch locks its spaces' rows in
///   the order of their names, so two nodes' batches never wait for each other in a cycle.
///   One transaction per batch instead of one per append is what keeps PostgreSQL and the
///   relay's client side off the two-node bench's critical path.
/// - Once a batch has committed, its callers are answered and a second statement
///   announces its entries with `NOTIFY`, each carrying its entry when it fits the payload.
///   Not in the append's own transaction: PostgreSQL serializes the commits of every
///   transaction that notifies, in the whole cluster, behind one lock held through the
///   commit's WAL flush, so notifying appends of unrelated spaces waited for each other's
///   fsync one at a time (fan-out p99 301 ms with two nodes and 100 devices). The
///   announcement commits without waiting for its WAL flush (the entries are durable
///   already); one lost with a crash only delays other nodes until they next read the
///   space.
/// - A read is one statement, so it sees one snapshot of the database: the rows, or the
///   snapshot that replaced them.
/// - Compaction upserts the snapshot only when it covers more than the stored one (one
///   writer wins; a node computes it from a replica that applied exactly positions
///   1…through), then deletes the rows the stored snapshot covers: a reader behind it
///   gets the snapshot instead, which ``SpaceHub`` merges like any delta.
/// - ``replaceSnapshot(space:state:through:)`` (a snapshot that forgot deleted content)
///   writes the snapshot and deletes the log rows it covers like compaction, then runs
///   `VACUUM` on both tables: no row holds the forgotten content any more, and the dead
///   row versions that still do are marked free for PostgreSQL to overwrite. Their bytes
///   stay in the table's pages (and in WAL segments not recycled yet) until then;
///   `VACUUM FULL`, which rewrites the tables but locks them, is left to the operator.
/// - Existing databases gain `converge_relay_devices` (the spaces' ``RelayDeviceRecord``s)
///   and `converge_relay_device_versions` (the version of each space's records, see
///   ``RelayDeviceRecords``; filled with the count of the records already there) at
///   connect: every table is created if missing.
/// - ``events()`` reports every node's appends through `LISTEN converge_relay` (the
///   payload is `position delta space`, the delta in base64 or `-` when it does not fit)
///   on a connection of its own, reconnected with backoff after the database restarts
///   and then reported as ``RelayStoreEvent/resumed``.
public final class PostgresRelayStore: RelayStore {
  /// The PostgreSQL client (a connection pool), a `Service` of the group that runs the
  /// store (see ``services``).
  let client: PostgresClient
  let listenConfiguration: PostgresConnection.Configuration
  let startTimeout: Duration
  let address: String
  let readiness = Readiness()
  /// The service group ``connect(url:logger:startTimeout:)`` runs the store in, until
  /// ``close()``.
  let ownGroup = Mutex<(group: ServiceGroup, task: Task<Void, any Error>)?>(nil)
  let subscribers = EventSubscribers()
  let logger: Logger
  let poolLogger: Logger
  private let appends = AppendQueue()
  static let channel = "converge_relay"
  /// Appends one batch holds at most.
  static let batchLimit = 256
  /// Delta bytes one batch holds at most (a larger single delta goes alone).
  static let batchByteLimit = 4 << 20

  /// The store for the database at `url` (`postgres://user:password@host:port/database`;
  /// add `?sslmode=require` for TLS). Nothing connects yet: a `ServiceGroup` runs
  /// ``services`` (the client, then the store), the store creates the relay's tables if
  /// missing and then serves; ``ready()`` says when. `logger` hears of lost connections;
  /// the pool's own chatter is kept to errors. The store's run throws
  /// ``RelayStoreError/unreachable(_:)`` when the tables are not in place within
  /// `startTimeout`.
  public init(
    url: String, logger: Logger = Logger(label: "converge-relay"),
    startTimeout: Duration = .seconds(30)
  ) throws {
    let configuration = try PostgresURL(url)
    var quietLogger = logger
    quietLogger.logLevel = max(logger.logLevel, .error)
    var poolConfiguration = PostgresClient.Configuration(
      host: configuration.host, port: configuration.port, username: configuration.user,
      password: configuration.password, database: configuration.database,
      tls: configuration.requireTLS ? .require(.makeClientConfiguration()) : .disable)
    poolConfiguration.options.maximumConnections = 24
    var listenConfiguration = PostgresConnection.Configuration(
      host: configuration.host, port: configuration.port, username: configuration.user,
      password: configuration.password, database: configuration.database,
      tls: configuration.requireTLS
        ? .require(try .init(configuration: .makeClientConfiguration())) : .disable)
    listenConfiguration.options.connectTimeout = .seconds(5)
    self.client = PostgresClient(configuration: poolConfiguration, backgroundLogger: quietLogger)
    self.listenConfiguration = listenConfiguration
    self.startTimeout = startTimeout
    self.address = "\(configuration.host):\(configuration.port)"
    self.logger = logger
    self.poolLogger = quietLogger
  }

  static let schema: [PostgresQuery] = [
    """
    CREATE TABLE IF NOT EXISTS converge_relay_heads(
      space text PRIMARY KEY, head bigint NOT NULL)
    """,
    """
    CREATE TABLE IF NOT EXISTS converge_relay_log(
      space text NOT NULL, position bigint NOT NULL, delta bytea NOT NULL,
      PRIMARY KEY(space, position))
    """,
    """
    CREATE TABLE IF NOT EXISTS converge_relay_snapshots(
      space text PRIMARY KEY, through bigint NOT NULL, state bytea NOT NULL)
    """,
    """
    CREATE TABLE IF NOT EXISTS converge_relay_devices(
      space text NOT NULL, replica bigint NOT NULL, seen bytea NOT NULL,
      last_heard bigint NOT NULL, expiry bigint NOT NULL, retired boolean NOT NULL,
      PRIMARY KEY(space, replica))
    """,
    """
    CREATE TABLE IF NOT EXISTS converge_relay_stable_cuts(
      space text PRIMARY KEY, stable bytea NOT NULL)
    """,
    // The version of each space's device records (``RelayDeviceRecords``); a database
    // from before it counts the records it holds. Raised, never lowered, to the count: a
    // node starting at the same time counts from a snapshot taken before its statement
    // runs, and with `DO NOTHING` a stale count it inserted first stayed (seen in CI as a
    // version of 1 for 2 records); a version at or above the count (it rises with every
    // record added, and records are never removed) is left as it is.
    """
    CREATE TABLE IF NOT EXISTS converge_relay_device_versions(
      space text PRIMARY KEY, version bigint NOT NULL)
    """,
    """
    INSERT INTO converge_relay_device_versions AS v(space, version)
    SELECT space, count(*) FROM converge_relay_devices GROUP BY space
    ON CONFLICT (space) DO UPDATE SET version = excluded.version
    WHERE v.version < excluded.version
    """,
  ]

  public func append(space: String, delta: [UInt8]) async throws -> UInt64 {
    try await withCheckedThrowingContinuation { continuation in
      let waiting = AppendQueue.Waiting(space: space, delta: delta, continuation: continuation)
      if appends.enqueue(waiting) { Task { await self.writeBatches() } }
    }
  }

  /// Writes batches until no append waits (see the type's notes); one writer at a time.
  private func writeBatches() async {
    while true {
      // In name order: the order the statement locks the spaces' head rows in.
      let batch = appends.nextBatch(limit: Self.batchLimit, byteLimit: Self.batchByteLimit)
        .sorted { $0.space < $1.space }
      guard !batch.isEmpty else { return }
      let positions: [UInt64]
      do {
        positions = try await appendBatch(batch)
      } catch {
        for waiting in batch { waiting.continuation.resume(throwing: error) }
        continue
      }
      for (waiting, position) in zip(batch, positions) {
        waiting.continuation.resume(returning: position)
      }
      await announce(batch, positions: positions)
    }
  }

  /// Appends `batch` (one entry per space, sorted by space) in one transaction and
  /// returns each entry's position, in the batch's order.
  private func appendBatch(_ batch: [AppendQueue.Waiting]) async throws -> [UInt64] {
    let statement = AppendBatch(
      spaces: batch.map(\.space), deltas: batch.map { ByteBuffer(bytes: $0.delta) })
    var found: [String: UInt64] = [:]
    for try await (space, position) in try await client.execute(statement) {
      guard position > 0 else { throw RelayStoreError.unexpectedRow("append position") }
      found[space] = UInt64(position)
    }
    return try batch.map { waiting in
      guard let position = found[waiting.space] else {
        throw RelayStoreError.unexpectedRow("append returned no position")
      }
      return position
    }
  }

  /// Notifies every node of a committed batch (see the type's notes). A failure is only
  /// logged: the entries are durable, and other nodes read them at their next append to
  /// the space or their next poll.
  private func announce(_ batch: [AppendQueue.Waiting], positions: [UInt64]) async {
    let payloads = zip(batch, positions).compactMap { waiting, position in
      Self.payload(space: waiting.space, position: position, delta: waiting.delta)
    }
    guard !payloads.isEmpty else { return }
    do {
      for try await _ in try await client.execute(Announce(payloads: payloads)) {}
    } catch {
      logger.warning("could not announce appends: \(String(reflecting: error))")
    }
  }

  /// Bytes a `NOTIFY` payload may hold (PostgreSQL's limit is 8,000, terminator included).
  static let payloadLimit = 7_999

  /// The `position delta space` payload announcing an entry, with `-` for a delta that
  /// would not fit; `nil` when even that does not (a space name of thousands of bytes).
  static func payload(space: String, position: UInt64, delta: [UInt8]) -> String? {
    let withDelta = "\(position) \(Data(delta).base64EncodedString()) \(space)"
    if withDelta.utf8.count <= payloadLimit { return withDelta }
    let withoutDelta = "\(position) - \(space)"
    return withoutDelta.utf8.count <= payloadLimit ? withoutDelta : nil
  }

  public func read(space: String, after position: UInt64) async throws -> SpaceLog {
    // Positions are bigints, so none lies past Int64.max (the readiness probe asks for
    // what follows UInt64.max).
    guard position < UInt64(Int64.max) else { return SpaceLog(snapshot: nil, entries: []) }
    let rows = try await client.execute(Read(space: space, after: Int64(position)))
    var read: [(isSnapshot: Bool, position: UInt64, bytes: [UInt8])] = []
    for try await (kind, at, bytes) in rows {
      guard at > 0 else { throw RelayStoreError.unexpectedRow("read") }
      read.append((kind == 0, UInt64(at), [UInt8](buffer: bytes)))
    }
    return try SpaceLog.assemble(space: space, after: position, rows: read)
  }

  public func compact(space: String, state: [UInt8], through position: UInt64) async throws {
    let through = Int64(clamping: position)
    try await client.query(
      """
      INSERT INTO converge_relay_snapshots AS s(space, through, state)
      VALUES (\(space), \(through), \(ByteBuffer(bytes: state)))
      ON CONFLICT (space) DO UPDATE SET through = excluded.through, state = excluded.state
      WHERE excluded.through > s.through
      """)
    try await client.query(
      """
      DELETE FROM converge_relay_log WHERE space = \(space)
        AND position <= (SELECT through FROM converge_relay_snapshots WHERE space = \(space))
      """)
  }

  public func deviceRecords(space: String) async throws -> RelayDeviceRecords {
    let rows = try await client.query(
      """
      SELECT replica, seen, last_heard, expiry, retired,
        COALESCE((SELECT version FROM converge_relay_device_versions WHERE space = \(space)), 0)
      FROM converge_relay_devices WHERE space = \(space)
      """)
    var devices: [RelayDeviceRecord] = []
    var version: Int64 = 0
    for try await (replica, seen, lastHeard, expiry, retired, read) in rows.decode(
      (Int64, ByteBuffer, Int64, Int64, Bool, Int64).self)
    {
      version = read
      devices.append(
        RelayDeviceRecord(
          replica: ReplicaID(rawValue: UInt64(bitPattern: replica)),
          seen: try CausalContext(decoding: [UInt8](buffer: seen)), lastHeard: lastHeard,
          expiry: expiry, isRetired: retired))
    }
    return RelayDeviceRecords(records: devices, version: version)
  }

  public func record(space: String, devices: [RelayDeviceRecord]) async throws {
    for device in devices { try await client.query(Self.recording(device, in: space)) }
  }

  /// The statement that records `device` in `space`. A new replica's record moves the
  /// space's version in the same statement (one that finds the record already there leaves
  /// it; two adding it at once may both move it, which only makes a cut computed meanwhile
  /// be computed again). The version row's lock orders this statement against a cut's
  /// compare-and-swap (``recordStableCut(space:cut:ifDevicesAt:)``).
  static func recording(_ device: RelayDeviceRecord, in space: String) -> PostgresQuery {
    let replica = Int64(bitPattern: device.replica.rawValue)
    return """
      WITH added AS (
        INSERT INTO converge_relay_device_versions AS v(space, version)
        SELECT \(space), 1 WHERE NOT EXISTS (
          SELECT 1 FROM converge_relay_devices WHERE space = \(space) AND replica = \(replica))
        ON CONFLICT (space) DO UPDATE SET version = v.version + 1)
      INSERT INTO converge_relay_devices AS d(space, replica, seen, last_heard, expiry, retired)
      VALUES (\(space), \(replica), \(ByteBuffer(bytes: device.seen.encoded())),
        \(device.lastHeard), \(device.expiry), \(device.isRetired))
      ON CONFLICT (space, replica) DO UPDATE SET seen = excluded.seen,
        last_heard = GREATEST(d.last_heard, excluded.last_heard),
        expiry = GREATEST(d.expiry, excluded.expiry), retired = d.retired OR excluded.retired
      """
  }

  public func retire(space: String, devices: [RelayDeviceRecord]) async throws -> [ReplicaID] {
    var retired: [ReplicaID] = []
    for device in devices {
      let replica = Int64(bitPattern: device.replica.rawValue)
      // Under READ COMMITTED an UPDATE re-checks its condition on the latest version of a
      // row another statement updated meanwhile.
      let rows = try await client.query(
        """
        UPDATE converge_relay_devices SET retired = true
        WHERE space = \(space) AND replica = \(replica) AND last_heard <= \(device.lastHeard)
          AND expiry <= \(device.expiry)
        RETURNING replica
        """)
      for try await _ in rows.decode(Int64.self) { retired.append(device.replica) }
    }
    return retired
  }

  public func touch(space: String, replicas: [ReplicaID], lastHeard: Int64) async throws {
    for replica in replicas {
      let replica = Int64(bitPattern: replica.rawValue)
      try await client.query(
        """
        UPDATE converge_relay_devices SET last_heard = GREATEST(last_heard, \(lastHeard))
        WHERE space = \(space) AND replica = \(replica)
        """)
    }
  }

  public func recordedCut(space: String) async throws -> RelayStableCut? {
    let rows = try await client.query(
      "SELECT stable FROM converge_relay_stable_cuts WHERE space = \(space)")
    for try await stored in rows.decode(ByteBuffer.self) {
      return try RelayStableCut(decodingStored: [UInt8](buffer: stored)[...])
    }
    return nil
  }

  public func recordStableCut(
    space: String, cut: RelayStableCut, ifDevicesAt version: RelayDeviceRecords.Version?
  ) async throws -> RelayStableCut? {
    // Read, merge, then write only if the row is still what was read and the space's
    // device records are at `version` (one statement, hence one transaction); another
    // node's write in between makes the write change nothing, and the cut is merged again
    // with what it wrote, unless a record was added. Under READ COMMITTED a statement's
    // subquery reads its snapshot, which may predate a record added while it runs: the
    // version is read `FOR SHARE`, which waits for a statement adding a record to commit
    // and then reads the version it wrote, and makes one that comes later wait for this
    // write's commit (so the process that added the record reads this cut after it). The
    // column keeps its name: it holds the whole cut (stable and covering contexts).
    for _ in 0..<RelayStableCut.recordAttempts {
      var stored: [UInt8]?
      let rows = try await client.query(
        "SELECT stable FROM converge_relay_stable_cuts WHERE space = \(space)")
      for try await bytes in rows.decode(ByteBuffer.self) { stored = [UInt8](buffer: bytes) }
      let current = try stored.map { try RelayStableCut(decodingStored: $0[...]) }
      let merged = cut.merged(with: current)
      if let current, merged == current { return current }
      let encoded = ByteBuffer(bytes: merged.encoded())
      let written: PostgresRowSequence
      if let stored {
        written = try await client.query(
          """
          UPDATE converge_relay_stable_cuts SET stable = \(encoded)
          WHERE space = \(space) AND stable = \(ByteBuffer(bytes: stored))
            AND (\(version)::bigint IS NULL OR COALESCE((
              SELECT version FROM converge_relay_device_versions WHERE space = \(space)
              FOR SHARE), 0) = \(version))
          RETURNING space
          """)
      } else {
        written = try await client.query(
          """
          INSERT INTO converge_relay_stable_cuts(space, stable) SELECT \(space), \(encoded)
          WHERE \(version)::bigint IS NULL OR COALESCE((
            SELECT version FROM converge_relay_device_versions WHERE space = \(space)
            FOR SHARE), 0) = \(version)
          ON CONFLICT (space) DO NOTHING RETURNING space
          """)
      }
      var wrote = false
      for try await _ in written.decode(String.self) { wrote = true }
      if wrote { return merged }
      if let version, try await deviceVersion(space: space) != version { return nil }
    }
    throw RelayStoreError.contended("converge_relay_stable_cuts")
  }

  /// The version of the space's device records (0 before the first).
  private func deviceVersion(space: String) async throws -> RelayDeviceRecords.Version {
    let rows = try await client.query(
      "SELECT version FROM converge_relay_device_versions WHERE space = \(space)")
    for try await version in rows.decode(Int64.self) { return version }
    return 0
  }

  public func replaceSnapshot(space: String, state: [UInt8], through position: UInt64)
    async throws
  {
    let through = Int64(clamping: position)
    try await client.query(
      """
      INSERT INTO converge_relay_snapshots AS s(space, through, state)
      VALUES (\(space), \(through), \(ByteBuffer(bytes: state)))
      ON CONFLICT (space) DO UPDATE SET through = excluded.through, state = excluded.state
      WHERE excluded.through >= s.through
      """)
    try await client.query(
      """
      DELETE FROM converge_relay_log WHERE space = \(space)
        AND position <= (SELECT through FROM converge_relay_snapshots WHERE space = \(space))
      """)
    try await client.query("VACUUM converge_relay_log, converge_relay_snapshots")
  }

  public func events() -> AsyncStream<RelayStoreEvent>? {
    subscribers.subscribe()
  }

  /// Listens on one dedicated connection for as long as the store is open: after a lost
  /// connection it reconnects (backing off up to a second), listens again, and reports
  /// ``RelayStoreEvent/resumed`` so readers catch up on what was not reported meanwhile.
  static func listen(
    configuration: PostgresConnection.Configuration, subscribers: EventSubscribers,
    logger: Logger
  ) async {
    var poolLogger = logger
    poolLogger.logLevel = max(logger.logLevel, .error)
    let backoff = RelayBackoff(base: .milliseconds(50), maximum: .seconds(1))
    var attempt = 0
    while !Task.isCancelled {
      do {
        let connection = try await PostgresConnection.connect(
          configuration: configuration, id: 0, logger: poolLogger)
        do {
          try await connection.listen(on: channel) { notifications in
            subscribers.resume()
            attempt = 0
            for try await notification in notifications {
              guard let event = Self.event(notification.payload) else { continue }
              subscribers.send(event)
            }
          }
        } catch {
          logger.warning("lost the LISTEN connection; reconnecting: \(String(reflecting: error))")
        }
        subscribers.lose()
        try? await connection.close()
      } catch {
        logger.warning("cannot connect to LISTEN; retrying: \(String(reflecting: error))")
      }
      try? await Task.sleep(for: backoff.delay(attempt: attempt))
      attempt += 1
    }
  }

  /// The event a `position delta space` payload names, or `nil` for another shape. A
  /// delta that is not valid base64 is left out: the reader then reads the entry.
  static func event(_ payload: String) -> RelayStoreEvent? {
    let fields = payload.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
    guard fields.count == 3, let position = UInt64(fields[0]), position > 0 else { return nil }
    let delta = fields[1] == "-" ? nil : Data(base64Encoded: String(fields[1])).map { [UInt8]($0) }
    return .appended(space: String(fields[2]), position: position, delta: delta)
  }
}

/// The statements every append, announcement and read runs, prepared once per pooled
/// connection: parsing and planning them on every execution took about a third of
/// PostgreSQL's CPU time in the two-node bench (`perf record -a`).
extension PostgresRelayStore {
  /// A batch of appends, one per space, the spaces in ascending order (see the type's
  /// notes): each space's head row advanced and its entry inserted at it, in one
  /// statement. Returns each space and its entry's position.
  struct AppendBatch: PostgresPreparedStatement {
    static let sql = """
      WITH input AS (
        SELECT space, delta, ord FROM unnest($1::text[], $2::bytea[]) WITH ORDINALITY
          AS t(space, delta, ord)),
      head AS (
        INSERT INTO converge_relay_heads AS h(space, head)
        SELECT space, 1 FROM input ORDER BY ord
        ON CONFLICT (space) DO UPDATE SET head = h.head + 1
        RETURNING h.space, h.head)
      INSERT INTO converge_relay_log(space, position, delta)
      SELECT input.space, head.head, input.delta FROM input JOIN head USING (space)
      RETURNING space, position
      """
    static let bindingDataTypes: [PostgresDataType] = [.textArray, .byteaArray]
    typealias Row = (String, Int64)

    var spaces: [String]
    var deltas: [ByteBuffer]

    func makeBindings() -> PostgresBindings { PostgresBindings(spaces, deltas) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((String, Int64).self) }
  }

  /// The announcement of committed entries, one notification each, committed without
  /// waiting for its WAL flush.
  struct Announce: PostgresPreparedStatement {
    static let sql = """
      SELECT set_config('synchronous_commit', 'off', true),
        pg_notify('converge_relay', payload)::text
      FROM unnest($1::text[]) AS payload
      """
    static let bindingDataTypes: [PostgresDataType] = [.textArray]
    typealias Row = Void

    var payloads: [String]

    func makeBindings() -> PostgresBindings {
      var bindings = PostgresBindings(capacity: 1)
      bindings.append(payloads)
      return bindings
    }

    func decodeRow(_ row: PostgresRow) throws {}
  }

  /// A space's snapshot past a position, if any, then its entries past it.
  struct Read: PostgresPreparedStatement {
    static let sql = """
      SELECT 0 AS kind, through AS position, state AS bytes FROM converge_relay_snapshots
        WHERE space = $1 AND through > $2
      UNION ALL
      SELECT 1, position, delta FROM converge_relay_log
        WHERE space = $1 AND position > $2
      ORDER BY kind, position
      """
    static let bindingDataTypes: [PostgresDataType] = [.text, .int8]
    typealias Row = (Int32, Int64, ByteBuffer)

    var space: String
    var after: Int64

    func makeBindings() -> PostgresBindings { PostgresBindings(space, after) }

    func decodeRow(_ row: PostgresRow) throws -> Row {
      try row.decode((Int32, Int64, ByteBuffer).self)
    }
  }
}

extension PostgresBindings {
  /// The bindings `$1` and `$2` of a prepared statement.
  init(_ first: some PostgresNonThrowingEncodable, _ second: some PostgresNonThrowingEncodable) {
    self.init(capacity: 2)
    append(first)
    append(second)
  }
}

/// The appends waiting for ``PostgresRelayStore``'s next batch, oldest first.
final class AppendQueue: Sendable {
  struct Waiting: Sendable {
    var space: String
    var delta: [UInt8]
    var continuation: CheckedContinuation<UInt64, any Error>
  }

  private struct State {
    var waiting: [Waiting] = []
    var isWriting = false
  }
  private let state = Mutex(State())

  /// Queues `waiting`; returns whether the caller must start the writer (none runs).
  func enqueue(_ waiting: Waiting) -> Bool {
    state.withLock { state in
      state.waiting.append(waiting)
      guard !state.isWriting else { return false }
      state.isWriting = true
      return true
    }
  }

  /// Takes the next batch: the oldest waiting append of each space, oldest first, up to
  /// `limit` appends and `byteLimit` delta bytes (at least one append). Empty, and the
  /// writer done, when nothing waits.
  func nextBatch(limit: Int, byteLimit: Int) -> [Waiting] {
    state.withLock { state in
      guard !state.waiting.isEmpty else {
        state.isWriting = false
        return []
      }
      var batch: [Waiting] = []
      var rest: [Waiting] = []
      var spaces: Set<String> = []
      var bytes = 0
      for waiting in state.waiting {
        // A space's later appends wait behind its first, taken or not.
        let isFirstOfSpace = spaces.insert(waiting.space).inserted
        let fits =
          batch.isEmpty
          || (batch.count < limit && bytes + waiting.delta.count <= byteLimit)
        if isFirstOfSpace, fits {
          batch.append(waiting)
          bytes += waiting.delta.count
        } else {
          rest.append(waiting)
        }
      }
      state.waiting = rest
      return batch
    }
  }
}

/// The open streams of ``PostgresRelayStore/events()``.
final class EventSubscribers: Sendable {
  private struct State {
    var next: UInt64 = 0
    var open: [UInt64: AsyncStream<RelayStoreEvent>.Continuation] = [:]
    var finished = false
    /// Listening now: a new subscriber is told ``RelayStoreEvent/resumed`` at once.
    var live = false
  }
  private let state = Mutex(State())

  /// Events a slow subscriber may fall behind by before the oldest are dropped: memory
  /// stays bounded, and the relay's slow poll reads anything a dropped event announced.
  static let bufferLimit = 65_536

  func subscribe() -> AsyncStream<RelayStoreEvent> {
    let (stream, continuation) = AsyncStream<RelayStoreEvent>.makeStream(
      bufferingPolicy: .bufferingNewest(Self.bufferLimit))
    let id: UInt64? = state.withLock { state in
      guard !state.finished else { return nil }
      state.next += 1
      state.open[state.next] = continuation
      if state.live { continuation.yield(.resumed) }
      return state.next
    }
    guard let id else {
      continuation.finish()
      return stream
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.state.withLock { $0.open.removeValue(forKey: id) }
    }
    return stream
  }

  func send(_ event: RelayStoreEvent) {
    state.withLock { state in
      for continuation in state.open.values { continuation.yield(event) }
    }
  }

  /// Listening (again): every subscriber hears ``RelayStoreEvent/resumed``.
  func resume() {
    state.withLock { state in
      state.live = true
      for continuation in state.open.values { continuation.yield(.resumed) }
    }
  }

  /// The listening connection is gone; appends go unreported until ``resume()``.
  func lose() {
    state.withLock { $0.live = false }
  }

  func finish() {
    let open = state.withLock { state in
      state.finished = true
      defer { state.open.removeAll() }
      return Array(state.open.values)
    }
    for continuation in open { continuation.finish() }
  }
}

/// The parts of a `postgres://` URL the store connects with.
struct PostgresURL: Sendable, Equatable {
  var host: String
  var port: Int
  var user: String
  var password: String?
  var database: String?
  var requireTLS: Bool

  /// The URL is not `postgres://` or `postgresql://` with a host and a user.
  struct Invalid: Error, CustomStringConvertible {
    var description: String
  }

  init(_ text: String) throws {
    guard let components = URLComponents(string: text),
      components.scheme == "postgres" || components.scheme == "postgresql",
      let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
    else {
      throw Invalid(description: "expected postgres://user[:password]@host[:port]/database")
    }
    self.host = host
    self.port = components.port ?? 5432
    self.user = user
    self.password = components.password
    let path = components.path.drop { $0 == "/" }
    self.database = path.isEmpty ? nil : String(path)
    let sslmode = components.queryItems?.first { $0.name == "sslmode" }?.value
    self.requireTLS = sslmode == "require" || sslmode == "verify-full"
  }
}
