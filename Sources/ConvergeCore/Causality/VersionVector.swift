/// For each replica, how many of its events have been seen without a gap.
///
/// `vector[r] == n` means events `1...n` of replica `r` are known. A version vector is the
/// compact summary two peers exchange in a sync handshake; the exact knowledge of a
/// replica (including events received out of order) is its ``CausalContext``.
///
/// - Complexity: lookups are O(log r); `merge` and comparisons are O(r) for r replicas.
public struct VersionVector: Hashable, Sendable {
  private var counters = ReplicaEntries<UInt64>()

  /// The empty vector: nothing seen.
  public init() {}

  /// A vector with the given counters; zero entries are dropped.
  public init(_ counters: [ReplicaID: UInt64]) {
    self.counters = ReplicaEntries(
      uniquePairs: counters.lazy.filter { $0.value > 0 }.map { ($0.key, $0.value) })
  }

  /// The vector of `entries`: ascending by replica, each replica once, no zero counter.
  package init(sortedEntries entries: [(replica: ReplicaID, value: UInt64)]) {
    counters = ReplicaEntries(sorted: entries)
  }

  /// The vector holding one entry, `replica: counter` (nothing if `counter` is 0).
  ///
  /// This and the other package members the presences of sets and entities use
  /// (`Presence`, in the module above) are `@usableFromInline`, so its inlinable members can
  /// call them.
  @usableFromInline
  package init(replica: ReplicaID, counter: UInt64) {
    if counter > 0 { counters[replica] = counter }
  }

  /// The number of entries.
  @usableFromInline
  package var count: Int { counters.count }

  /// The number of events of `replica` seen without a gap (0 if none).
  public subscript(replica: ReplicaID) -> UInt64 {
    get { counters[replica] ?? 0 }
    set { counters[replica] = newValue == 0 ? nil : newValue }
  }

  /// The replicas with a non-zero entry, sorted so every device lists them alike.
  public var replicas: [ReplicaID] { counters.storage.map(\.replica) }

  /// The entries as (replica, counter) pairs sorted by replica.
  public var entries: [(replica: ReplicaID, counter: UInt64)] {
    counters.storage.map { (replica: $0.replica, counter: $0.value) }
  }

  /// The only entry, if the vector has exactly one.
  @usableFromInline
  package var onlyEntry: (replica: ReplicaID, counter: UInt64)? {
    guard counters.count == 1, let entry = counters.storage.first else { return nil }
    return (entry.replica, entry.value)
  }

  /// Calls `body` with every entry, in replica order, without building a list.
  @usableFromInline
  package func forEachEntry(_ body: (ReplicaID, UInt64) -> Void) {
    for entry in counters.storage { body(entry.replica, entry.value) }
  }

  /// Whether some entry satisfies `predicate`, in no particular order.
  @usableFromInline
  package func containsEntry(where predicate: (ReplicaID, UInt64) -> Bool) -> Bool {
    counters.storage.contains { predicate($0.replica, $0.value) }
  }

  /// Whether no event of any replica has been seen.
  public var isEmpty: Bool { counters.isEmpty }

  /// Whether `dot` is covered by this vector.
  public func contains(_ dot: Dot) -> Bool {
    dot.counter <= self[dot.replica]
  }

  /// Raises the entry of `dot`'s replica to `dot.counter` if it is lower: the same as
  /// merging the vector of that one entry, without building it.
  @usableFromInline
  package mutating func advance(to dot: Dot) {
    if dot.counter > self[dot.replica] { self[dot.replica] = dot.counter }
  }

  /// Takes the larger entry for every replica.
  public mutating func merge(_ other: VersionVector) {
    counters.merge(other.counters) { Swift.max($0, $1) }
  }

  /// The entry-wise maximum of the two vectors.
  public func merging(_ other: VersionVector) -> VersionVector {
    var result = self
    result.merge(other)
    return result
  }

  /// Whether every entry of `other` is at most the entry here.
  public func dominates(_ other: VersionVector) -> Bool {
    other.counters.storage.allSatisfy { self[$0.replica] >= $0.value }
  }
}

extension VersionVector: CustomStringConvertible {
  /// The entries for debugging: `{replica:counter, …}`.
  public var description: String {
    "{" + entries.map { "\($0.replica):\($0.counter)" }.joined(separator: ", ") + "}"
  }
}
