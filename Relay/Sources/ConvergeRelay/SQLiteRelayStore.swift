import Converge
import ConvergeRelayClient
import NIOCore
import SQLiteNIO

/// The embedded ``RelayStore``: one SQLite file in write-ahead-log mode with
/// `synchronous=FULL`, so an append is on disk before it returns.
///
/// Every operation is a single SQL statement, hence atomic on its own and consistent when
/// several processes share the file: an append computes its position from the space's
/// head inside the insert (a trigger advances the head in the same statement), a read
/// sees one snapshot of the database, and compaction writes the snapshot before it
/// deletes the rows it covers, so a reader always finds either the rows or a snapshot.
///
/// Forgetting: the connection runs with `secure_delete` on, so SQLite overwrites with
/// zeros the content of every row it deletes and every page it frees; after
/// ``replaceSnapshot(space:state:through:)`` a `wal_checkpoint(TRUNCATE)` moves the new
/// pages into the database file and empties the write-ahead log, whose frames would
/// still hold the old ones (a checkpoint that another process's open read holds back is
/// finished by the next one).
///
/// Existing databases gain the `devices` table (the space's ``RelayDeviceRecord``s) when
/// opened: every table is created if missing. The version of a space's device records
/// (``RelayDeviceRecords``) is their count, so no table or column was added for it.
public actor SQLiteRelayStore: RelayStore {
  private let connectionIfOpen: SQLiteConnection
  private var isClosed = false

  private init(connection: SQLiteConnection) {
    self.connectionIfOpen = connection
  }

  /// The connection, or ``RelayStoreError/closed`` once ``close()`` was called: a socket
  /// still being served when its relay stops gets an error rather than a query on a
  /// closed database, which SQLiteNIO may never answer.
  private var connection: SQLiteConnection {
    get throws {
      guard !isClosed else { throw RelayStoreError.closed }
      return connectionIfOpen
    }
  }

  /// Opens (creating if needed) the database at `path`.
  public static func open(path: String) async throws -> SQLiteRelayStore {
    let connection = try await SQLiteConnection.open(storage: .file(path: path))
    do {
      for statement in schema { _ = try await connection.query(statement) }
    } catch {
      try? await connection.close()
      throw error
    }
    return SQLiteRelayStore(connection: connection)
  }

  private static let schema = [
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA busy_timeout=10000",
    "PRAGMA secure_delete=ON",
    """
    CREATE TABLE IF NOT EXISTS heads(space TEXT PRIMARY KEY, head INTEGER NOT NULL) WITHOUT ROWID
    """,
    """
    CREATE TABLE IF NOT EXISTS log(
      space TEXT NOT NULL, position INTEGER NOT NULL, delta BLOB NOT NULL,
      PRIMARY KEY(space, position)) WITHOUT ROWID
    """,
    """
    CREATE TABLE IF NOT EXISTS snapshots(
      space TEXT PRIMARY KEY, through INTEGER NOT NULL, state BLOB NOT NULL)
    """,
    """
    CREATE TABLE IF NOT EXISTS devices(
      space TEXT NOT NULL, replica INTEGER NOT NULL, seen BLOB NOT NULL,
      last_heard INTEGER NOT NULL, expiry INTEGER NOT NULL, retired INTEGER NOT NULL,
      PRIMARY KEY(space, replica)) WITHOUT ROWID
    """,
    """
    CREATE TABLE IF NOT EXISTS stable_cuts(space TEXT PRIMARY KEY, stable BLOB NOT NULL)
    """,
    """
    CREATE TRIGGER IF NOT EXISTS log_advances_head AFTER INSERT ON log BEGIN
      INSERT INTO heads(space, head) VALUES (NEW.space, NEW.position)
      ON CONFLICT(space) DO UPDATE SET head = excluded.head;
    END
    """,
  ]

  /// Closes the database.
  public func close() async throws {
    guard !isClosed else { return }
    isClosed = true
    try await connectionIfOpen.close()
  }

  public func append(space: String, delta: [UInt8]) async throws -> UInt64 {
    let rows = try await write(
      """
      INSERT INTO log(space, position, delta)
      VALUES (?1, COALESCE((SELECT head FROM heads WHERE space = ?1), 0) + 1, ?2)
      RETURNING position
      """, [.text(space), .blob(ByteBuffer(bytes: delta))])
    guard let value = rows.first?.column("position")?.integer, value > 0 else {
      throw RelayStoreError.unexpectedRow("append returned no position")
    }
    return UInt64(value)
  }

  public func read(space: String, after position: UInt64) async throws -> SpaceLog {
    // Positions are SQLite integers, so none lies past Int64.max (the readiness probe
    // asks for what follows UInt64.max).
    guard position < UInt64(Int64.max) else { return SpaceLog(snapshot: nil, entries: []) }
    let after = Int64(position)
    let rows = try await connection.query(
      """
      SELECT 0 AS kind, through AS position, state AS bytes FROM snapshots
        WHERE space = ?1 AND through > ?2
      UNION ALL
      SELECT 1, position, delta FROM log WHERE space = ?1 AND position > ?2
      ORDER BY kind, position
      """, [.text(space), .integer(Int(after))])
    var read: [(isSnapshot: Bool, position: UInt64, bytes: [UInt8])] = []
    for row in rows {
      guard let kind = row.column("kind")?.integer, let at = row.column("position")?.integer,
        at > 0, let buffer = row.column("bytes")?.blob
      else { throw RelayStoreError.unexpectedRow("read") }
      read.append((kind == 0, UInt64(at), [UInt8](buffer: buffer)))
    }
    return try SpaceLog.assemble(space: space, after: position, rows: read)
  }

  /// SQLite cannot tell other processes about an append: readers poll.
  public nonisolated func events() -> AsyncStream<RelayStoreEvent>? { nil }

  public func compact(space: String, state: [UInt8], through position: UInt64) async throws {
    let through = Int(Int64(clamping: position))
    _ = try await write(
      """
      INSERT INTO snapshots(space, through, state) VALUES (?1, ?2, ?3)
      ON CONFLICT(space) DO UPDATE SET through = excluded.through, state = excluded.state
      WHERE excluded.through > snapshots.through
      """, [.text(space), .integer(through), .blob(ByteBuffer(bytes: state))])
    _ = try await write(
      """
      DELETE FROM log WHERE space = ?1
        AND position <= (SELECT through FROM snapshots WHERE space = ?1)
      """, [.text(space)])
  }

  /// The version of a space's records is their number: a record is never deleted, and
  /// one statement both reads it and writes a cut (see ``recordStableCut(space:cut:ifDevicesAt:)``).
  public func deviceRecords(space: String) async throws -> RelayDeviceRecords {
    let rows = try await connection.query(
      """
      SELECT replica, seen, last_heard, expiry, retired,
        (SELECT count(*) FROM devices WHERE space = ?1) AS version
      FROM devices WHERE space = ?1
      """, [.text(space)])
    var version: Int64 = 0
    let records = try rows.map { row in
      guard let replica = row.column("replica")?.integer, let seen = row.column("seen")?.blob,
        let lastHeard = row.column("last_heard")?.integer,
        let expiry = row.column("expiry")?.integer, let retired = row.column("retired")?.integer,
        let count = row.column("version")?.integer
      else { throw RelayStoreError.unexpectedRow("devices") }
      version = Int64(count)
      return RelayDeviceRecord(
        replica: ReplicaID(rawValue: UInt64(bitPattern: Int64(replica))),
        seen: try CausalContext(decoding: [UInt8](buffer: seen)), lastHeard: Int64(lastHeard),
        expiry: Int64(expiry), isRetired: retired != 0)
    }
    return RelayDeviceRecords(records: records, version: version)
  }

  public func record(space: String, devices: [RelayDeviceRecord]) async throws {
    for device in devices {
      _ = try await write(
        """
        INSERT INTO devices(space, replica, seen, last_heard, expiry, retired)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6)
        ON CONFLICT(space, replica) DO UPDATE SET seen = excluded.seen,
          last_heard = MAX(last_heard, excluded.last_heard),
          expiry = MAX(expiry, excluded.expiry), retired = MAX(retired, excluded.retired)
        """,
        [
          .text(space), .integer(Int(Int64(bitPattern: device.replica.rawValue))),
          .blob(ByteBuffer(bytes: device.seen.encoded())), .integer(Int(device.lastHeard)),
          .integer(Int(device.expiry)), .integer(device.isRetired ? 1 : 0),
        ])
    }
  }

  public func retire(space: String, devices: [RelayDeviceRecord]) async throws -> [ReplicaID] {
    var retired: [ReplicaID] = []
    for device in devices {
      let rows = try await write(
        """
        UPDATE devices SET retired = 1
        WHERE space = ?1 AND replica = ?2 AND last_heard <= ?3 AND expiry <= ?4
        RETURNING replica
        """,
        [
          .text(space), .integer(Int(Int64(bitPattern: device.replica.rawValue))),
          .integer(Int(device.lastHeard)), .integer(Int(device.expiry)),
        ])
      if !rows.isEmpty { retired.append(device.replica) }
    }
    return retired
  }

  public func touch(space: String, replicas: [ReplicaID], lastHeard: Int64) async throws {
    for replica in replicas {
      _ = try await write(
        "UPDATE devices SET last_heard = MAX(last_heard, ?3) WHERE space = ?1 AND replica = ?2",
        [
          .text(space), .integer(Int(Int64(bitPattern: replica.rawValue))),
          .integer(Int(lastHeard)),
        ])
    }
  }

  public func recordedCut(space: String) async throws -> RelayStableCut? {
    let rows = try await connection.query(
      "SELECT stable FROM stable_cuts WHERE space = ?1", [.text(space)])
    guard let row = rows.first else { return nil }
    guard let stored = row.column("stable")?.blob else {
      throw RelayStoreError.unexpectedRow("stable_cuts")
    }
    return try RelayStableCut(decodingStored: [UInt8](buffer: stored)[...])
  }

  public func recordStableCut(
    space: String, cut: RelayStableCut, ifDevicesAt version: RelayDeviceRecords.Version?
  ) async throws -> RelayStableCut? {
    // Read, merge, then write only if the row is still what was read and the space has as
    // many device records as the cut was computed from (one statement, hence atomic: it
    // holds the write lock from its first read, and one that started on an older snapshot
    // is refused and run again by `write`); another process's write in between makes the
    // write change nothing, and the cut is merged again with what it wrote, unless a
    // record was added. The column keeps its name: it holds the whole cut (stable and
    // covering contexts).
    let expected: SQLiteData = version.map { .integer(Int($0)) } ?? .null
    for _ in 0..<RelayStableCut.recordAttempts {
      let rows = try await connection.query(
        "SELECT stable FROM stable_cuts WHERE space = ?1", [.text(space)])
      let stored = try rows.first.map { row in
        guard let blob = row.column("stable")?.blob else {
          throw RelayStoreError.unexpectedRow("stable_cuts")
        }
        return [UInt8](buffer: blob)
      }
      let current = try stored.map { try RelayStableCut(decodingStored: $0[...]) }
      let merged = cut.merged(with: current)
      if let current, merged == current { return current }
      let written: [SQLiteRow]
      if let stored {
        written = try await write(
          """
          UPDATE stable_cuts SET stable = ?2 WHERE space = ?1 AND stable = ?3
            AND (?4 IS NULL OR (SELECT count(*) FROM devices WHERE space = ?1) = ?4)
          RETURNING space
          """,
          [
            .text(space), .blob(ByteBuffer(bytes: merged.encoded())),
            .blob(ByteBuffer(bytes: stored)), expected,
          ])
      } else {
        written = try await write(
          """
          INSERT INTO stable_cuts(space, stable) SELECT ?1, ?2
            WHERE ?3 IS NULL OR (SELECT count(*) FROM devices WHERE space = ?1) = ?3
          ON CONFLICT(space) DO NOTHING RETURNING space
          """, [.text(space), .blob(ByteBuffer(bytes: merged.encoded())), expected])
      }
      if !written.isEmpty { return merged }
      if let version, try await deviceVersion(space: space) != version { return nil }
    }
    throw RelayStoreError.contended("stable_cuts")
  }

  /// How many device records the space holds (their set's version).
  private func deviceVersion(space: String) async throws -> RelayDeviceRecords.Version {
    let rows = try await connection.query(
      "SELECT count(*) AS version FROM devices WHERE space = ?1", [.text(space)])
    guard let count = rows.first?.column("version")?.integer else {
      throw RelayStoreError.unexpectedRow("device count")
    }
    return Int64(count)
  }

  public func replaceSnapshot(space: String, state: [UInt8], through position: UInt64)
    async throws
  {
    let through = Int(Int64(clamping: position))
    _ = try await write(
      """
      INSERT INTO snapshots(space, through, state) VALUES (?1, ?2, ?3)
      ON CONFLICT(space) DO UPDATE SET through = excluded.through, state = excluded.state
      WHERE excluded.through >= snapshots.through
      """, [.text(space), .integer(through), .blob(ByteBuffer(bytes: state))])
    _ = try await write(
      """
      DELETE FROM log WHERE space = ?1
        AND position <= (SELECT through FROM snapshots WHERE space = ?1)
      """, [.text(space)])
    _ = try await connection.query("PRAGMA wal_checkpoint(TRUNCATE)")
  }

  /// Runs one writing statement, again if SQLite refused it with `SQLITE_BUSY_SNAPSHOT`.
  ///
  /// A statement that reads before it writes (an append reads the head, compaction reads
  /// the snapshot) starts on the database as it was; when another process commits before
  /// this one takes the write lock, SQLite refuses the upgrade at once, without calling
  /// the busy handler, since waiting cannot make that snapshot current. The refused
  /// statement changed nothing (it is its own transaction), so running it again on a
  /// fresh snapshot is the documented remedy. The retries are bounded; the last refusal
  /// is thrown.
  private func write(_ sql: String, _ binds: [SQLiteData]) async throws -> [SQLiteRow] {
    var attempt = 0
    while true {
      do {
        return try await connection.query(sql, binds)
      } catch let error as SQLiteError
        where error.reason == .busyInSnapshot && attempt < Self.snapshotRetries
      {
        // A short, growing, jittered pause lets the other writer finish.
        try await Task.sleep(for: Self.snapshotBackoff.delay(attempt: attempt))
        attempt += 1
      }
    }
  }

  private static let snapshotRetries = 50
  /// 50–100 µs before the first retry, doubling up to 6.4–12.8 ms.
  private static let snapshotBackoff = RelayBackoff(
    base: .microseconds(100), maximum: .microseconds(12_800))
}
