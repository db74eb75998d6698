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
}
