import Converge
import ConvergeRelayClient

/// Where the relay keeps each space: an append-only log of validated deltas and, for its
/// compacted prefix, a snapshot of the state.
///
/// The store, not the relay, is the source of truth, so any number of relay processes
/// may share one: per-space positions come from the database (an append returns the
/// position it was given), and a relay's in-memory replica is a cache it rebuilds from
/// ``read(space:after:)`` and refreshes the same way. Positions are gap-free and
/// increasing per space; a reader that sees position n sees every position before it,
/// or a snapshot that covers them.
///
/// Clients never see positions: what a client lacks is selected by its causal context
/// against the replica rebuilt from the store (`Replica.delta(since:)`).
public protocol RelayStore: Sendable {
  /// Appends an encoded, already validated delta (a `documentDelta` message) to the
  /// space's log and returns its position. Durable when it returns.
  func append(space: String, delta: [UInt8]) async throws -> UInt64

  /// What a reader that has applied every position up to `position` must apply next:
  /// the latest snapshot when it covers positions past `position`, and the log entries
  /// after that, in order. One consistent view of the store.
  func read(space: String, after position: UInt64) async throws -> SpaceLog

  /// Replaces the log's prefix up to `position` by `state` (a `documentState` message of
  /// the space after applying exactly positions 1…`position`). Keeps an existing snapshot
  /// that covers more; safe to call from several processes at once.
  func compact(space: String, state: [UInt8], through position: UInt64) async throws

  /// What the store records of the space's devices (see ``RelayDeviceRecord``), in no
  /// particular order, with the version of the set of records, read in one view of the
  /// store: a ``recordStableCut(space:cut:ifDevicesAt:)`` given that version fails once
  /// another record was added since.
  func deviceRecords(space: String) async throws -> RelayDeviceRecords

  /// Records `devices` in the space, each replacing the stored record of its replica:
  /// its `seen` as given, the later of the two `lastHeard` and `expiry`, and retired if
  /// either is (a retired replica never comes back). Durable when it returns.
  func record(space: String, devices: [RelayDeviceRecord]) async throws

  /// Retires the space's records of `devices` (as ``deviceRecords(space:)`` read them),
  /// each only if no process heard from the device or extended its grant since: its
  /// stored `lastHeard` and `expiry` are not later than the ones read. Returns the
  /// replicas retired now. A process judging a record it read a moment ago must not
  /// retire a device another process has just admitted or marked heard, which then serves
  /// it while the cut stops waiting for it. Nothing else of a record changes. Durable when
  /// it returns.
  func retire(space: String, devices: [RelayDeviceRecord]) async throws -> [ReplicaID]

  /// Marks the space's records of `replicas` heard from at `lastHeard` (seconds since
  /// 1970), keeping a later time already recorded and changing nothing else; replicas
  /// without a record are left out. Durable when it returns.
  func touch(space: String, replicas: [ReplicaID], lastHeard: Int64) async throws

  /// The space's stable cut as last recorded (``recordStableCut(space:cut:ifDevicesAt:)``), with the
  /// covering context it was published with, or `nil`. A cut recorded before the covering
  /// context was kept (a row holding the stable context alone) comes back with its stable
  /// context as its covering one.
  func recordedCut(space: String) async throws -> RelayStableCut?

  /// Records the space's stable cut and its covering context before anything is forgotten
  /// with it: a device that comes back holding events but not all of it is refused, and
  /// another process sharing the store adopts it before it serves a rejoin or applies one
  /// (`SpaceHub.adoptRecordedCut`). Durable when it returns.
  ///
  /// The stored cut never shrinks: it becomes the union of the stored one and `cut` (both
  /// contexts), read, merged and written as one compare-and-swap, again if another process
  /// wrote the row in between, so two processes recording at once both find their cut
  /// within the stored one (``RelayStableCut/merged(with:)``). Returns the cut stored
  /// now, which the caller forgets by once its replica holds its covering context: no
  /// process may have forgotten by that union yet.
  ///
  /// With `version` (what ``deviceRecords(space:)`` returned with the records the cut
  /// was computed from), the write is refused, and `nil` returned, if a device record was
  /// added to the space since: a cut computed without it may pass what that device (a
  /// rejoin's bootstrap, a new device) was told. The check and the write are one atomic
  /// step against the statement that adds a record, so a process that reads the recorded
  /// cut after adding one either finds this cut or makes this write fail. Records only
  /// updated do not count: a device's `seen` only grows, and a retired one no longer
  /// holds the cut back, so a cut computed from their earlier records stays stable.
  func recordStableCut(
    space: String, cut: RelayStableCut, ifDevicesAt version: RelayDeviceRecords.Version?
  ) async throws -> RelayStableCut?

  /// Replaces the space's snapshot by `state` of the space after positions
  /// 1…`position` that has forgotten deleted content, unless the stored one covers more,
  /// deletes the log rows it covers, and frees what they held (the store's own notes say
  /// how far), so that no row and, where the database allows, no page still holds what
  /// was forgotten.
  func replaceSnapshot(space: String, state: [UInt8], through position: UInt64) async throws

  /// Appends committed by any process sharing the store, as they commit, from a store
  /// that can tell (PostgreSQL's LISTEN/NOTIFY); `nil` from one that cannot, whose
  /// readers poll instead. Each call returns a new stream that ends when the store closes.
  func events() -> AsyncStream<RelayStoreEvent>?

  /// Returns once the store can serve (its tables exist), or throws what keeps it from
  /// serving; the server starts accepting only after it returned. A store that is ready
  /// when it is opened (``SQLiteRelayStore``) returns at once; ``PostgresRelayStore``
  /// waits for its services' run.
  func ready() async throws
}

extension RelayStore {
  public func ready() async throws {}

  /// What the store records of the space's devices, in no particular order.
  public func devices(space: String) async throws -> [RelayDeviceRecord] {
    try await deviceRecords(space: space).records
  }

  /// Records the space's stable cut whatever device records were added meanwhile (see
  /// ``recordStableCut(space:cut:ifDevicesAt:)``), and returns the cut stored now.
  @discardableResult
  public func recordStableCut(space: String, cut: RelayStableCut) async throws
    -> RelayStableCut
  {
    guard let stored = try await recordStableCut(space: space, cut: cut, ifDevicesAt: nil)
    else { throw RelayStoreError.unexpectedRow("a cut recorded unconditionally was refused") }
    return stored
  }
}

/// A space's device records and the version of their set (``RelayStore/deviceRecords(space:)``).
public struct RelayDeviceRecords: Sendable, Equatable {
  /// Counts the records added to a space (a new replica's first record); updates of a
  /// record leave it as it is. Only compared for equality.
  public typealias Version = Int64

  public var records: [RelayDeviceRecord]
  public var version: Version

  /// `records`, read at `version`.
  public init(records: [RelayDeviceRecord], version: Version) {
    self.records = records
    self.version = version
  }
}

/// What ``RelayStore/events()`` reports.
public enum RelayStoreEvent: Sendable, Equatable {
  /// Some process committed `position` in `space`, with the entry's bytes when the
  /// report could carry them (small entries; `nil`: read the entry from the store).
  case appended(space: String, position: UInt64, delta: [UInt8]?)
  /// The store (re)started reporting, and appends committed before this may have gone
  /// unreported (its connection to the database was lost): read every space served.
  case resumed
}

/// A slice of a space's history as ``RelayStore/read(space:after:)`` returns it.
public struct SpaceLog: Sendable, Equatable {
  /// A snapshot to start from, covering positions 1…`through`.
  public var snapshot: (through: UInt64, state: [UInt8])?
  /// Log entries after the snapshot (or after the position asked for), in order.
  public var entries: [(position: UInt64, delta: [UInt8])]

  /// A slice with `snapshot` and `entries`.
  public init(
    snapshot: (through: UInt64, state: [UInt8])?, entries: [(position: UInt64, delta: [UInt8])]
  ) {
    self.snapshot = snapshot
    self.entries = entries
  }

  /// The last position the slice covers, or `position` when it is empty.
  public func end(after position: UInt64) -> UInt64 {
    entries.last?.position ?? snapshot?.through ?? position
  }

  /// The slice that rows of a read make, checked for gaps: `rows` holds at most one
  /// snapshot row, then log rows by increasing position, all past `position`. Log rows
  /// that the snapshot covers are skipped (compaction may not have deleted them yet).
  static func assemble(
    space: String, after position: UInt64,
    rows: [(isSnapshot: Bool, position: UInt64, bytes: [UInt8])]
  ) throws -> SpaceLog {
    var log = SpaceLog(snapshot: nil, entries: [])
    var expected = position + 1
    for row in rows {
      if row.isSnapshot {
        log.snapshot = (row.position, row.bytes)
        expected = row.position + 1
        continue
      }
      guard row.position >= expected else { continue }
      guard row.position == expected else {
        throw RelayStoreError.gap(space: space, expected: expected, found: row.position)
      }
      log.entries.append((row.position, row.bytes))
      expected += 1
    }
    return log
  }

  public static func == (lhs: SpaceLog, rhs: SpaceLog) -> Bool {
    lhs.snapshot?.through == rhs.snapshot?.through && lhs.snapshot?.state == rhs.snapshot?.state
      && lhs.entries.map(\.position) == rhs.entries.map(\.position)
      && lhs.entries.map(\.delta) == rhs.entries.map(\.delta)
  }
}

/// A store that breaks its own guarantees: a gap in a space's positions.
public enum RelayStoreError: Error, Equatable, Sendable {
  /// The log skips from one position to a later one with no snapshot covering the gap.
  case gap(space: String, expected: UInt64, found: UInt64)
  /// The database returned a row of an unexpected shape.
  case unexpectedRow(String)
  /// The store was closed; nothing more is read or written through it.
  case closed
  /// The database did not answer when the store was opened.
  case unreachable(String)
  /// Other processes kept writing the row between this one's read and its write, every
  /// time it tried (``RelayStore/recordStableCut(space:cut:ifDevicesAt:)``).
  case contended(String)
}

extension RelayStableCut {
  /// The cut that includes both `self` and `stored` (the union of their stable contexts
  /// and of their covering ones): the union of two stable cuts is stable, and a replica
  /// forgets with it once it holds both covering contexts.
  func merged(with stored: RelayStableCut?) -> RelayStableCut {
    guard let stored else { return self }
    var merged = self
    merged.stable.formUnion(stored.stable)
    merged.covering.formUnion(stored.covering)
    return merged
  }

  /// How many times a store tries its compare-and-swap of the cut against other writers
  /// before it gives up (``RelayStoreError/contended``).
  static let recordAttempts = 64
}

extension RelayStore {
  /// The space's stable context as last recorded, or an empty context.
  public func stableCut(space: String) async throws -> CausalContext {
    try await recordedCut(space: space)?.stable ?? CausalContext()
  }
}
