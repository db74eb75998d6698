/// Every event a replica knows of: a version vector plus the dots that arrived out of
/// order, kept per replica as ``CounterRanges``.
///
/// Delta-state CRDTs (Almeida, Shoker and Baquero, "Delta State Replicated Data Types")
/// pair their data with a causal context. A dot that is in the context but not in the
/// data was seen and then removed; a dot in neither was never seen. That distinction is
/// what lets a remove win over the adds it observed and lose to the ones it did not.
///
/// When a missing dot arrives and closes a gap, the ranges join, so the context is
/// always compact: in the common case one range per replica, `1...n`, which is exactly a
/// version vector entry.
///
/// A whole document shares one causal context. Giving each key its own context would
/// resurrect data when a key is re-created, because the new context would forget the
/// removals the old one recorded.
///
/// - Complexity: `contains` is O(log r + log g) for r replicas and g gaps of that
///   replica; `nextDot(for:)` is O(log r); union and difference are O(r + g).
public struct CausalContext: Hashable, Sendable {
  @usableFromInline var counters = ReplicaEntries<CounterRanges>()

  /// The empty context: nothing seen.
  public init() {}

  /// The context holding exactly `1...vector[r]` for every replica `r`.
  public init(_ vector: VersionVector) {
    for (replica, counter) in vector.entries {
      counters[replica] = CounterRanges(1...counter)
    }
  }

  /// The context holding exactly the events `counters` of `replica`.
  package init(replica: ReplicaID, counters range: ClosedRange<UInt64>) {
    counters[replica] = CounterRanges(range)
  }

  /// The context holding exactly the given dots.
  public init<S: Sequence>(dots: S) where S.Element == Dot {
    for dot in dots { insert(dot) }
  }

  /// Whether no event is known.
  public var isEmpty: Bool { counters.isEmpty }

  /// The number of replicas with at least one known event.
  var replicaCount: Int { counters.count }

  /// The replicas with at least one known event, sorted.
  ///
  /// - Complexity: O(r) for r replicas.
  public var replicas: [ReplicaID] { counters.storage.map(\.replica) }

  /// The only replica with known events and its counters, if exactly one has any.
  package var onlyEntry: (replica: ReplicaID, counters: CounterRanges)? {
    guard counters.count == 1, let entry = counters.storage.first else { return nil }
    return (entry.replica, entry.value)
  }

  /// The known counters of `replica`.
  public func counters(of replica: ReplicaID) -> CounterRanges {
    counters[replica] ?? CounterRanges()
  }

  /// The gap-free prefix of every replica's events.
  ///
  /// - Complexity: O(r) for r replicas.
  public var versionVector: VersionVector {
    var vector = VersionVector()
    for (replica, ranges) in counters.storage { vector[replica] = ranges.contiguousPrefix }
    return vector
  }

  /// Whether the context has gaps: events known out of order, whose predecessors are not.
  public var hasGaps: Bool {
    counters.storage.contains { $0.value.ranges.count > 1 || $0.value.contiguousPrefix == 0 }
  }

  /// The number of known events, saturating at `UInt64.max`.
  public var eventCount: UInt64 {
    var total: UInt64 = 0
    for (_, ranges) in counters.storage {
      let (sum, overflow) = total.addingReportingOverflow(ranges.count)
      if overflow { return .max }
      total = sum
    }
    return total
  }

  /// Whether `dot` is known.
  @inlinable public func contains(_ dot: Dot) -> Bool {
    let (index, found) = counters.position(of: dot.replica)
    return found && counters.storage[index].value.contains(dot.counter)
  }

  /// Whether every event of `other` is known here.
  ///
  /// - Complexity: O(r + g) for r replicas and g gaps in the two contexts.
  public func includes(_ other: CausalContext) -> Bool {
    other.counters.storage.allSatisfy { replica, ranges in
      counters[replica]?.isSuperset(of: ranges) ?? ranges.isEmpty
    }
  }

  /// The dot that `replica`'s next local event must use: one past the largest counter of
  /// that replica seen so far, or `nil` if the counter space is exhausted.
  ///
  /// Counters are never reused as long as the context holds every event `replica` ever
  /// made; a replica restored from a stale copy must therefore take a fresh id.
  public func nextDot(for replica: ReplicaID) -> Dot? {
    let maximum = counters[replica]?.maximum ?? 0
    guard maximum < .max else { return nil }
    return Dot(replica: replica, counter: maximum + 1)
  }

  /// Records `dot` as known.
  public mutating func insert(_ dot: Dot) {
    counters.update(dot.replica, default: CounterRanges()) { $0.insert(dot.counter) }
  }

  /// Records the events `counters` of `replica` as known.
  public mutating func insert(replica: ReplicaID, counters range: ClosedRange<UInt64>) {
    counters.update(replica, default: CounterRanges()) { $0.insert(range) }
  }

  /// Records the events `ranges` of `replica` as known.
  public mutating func insert(replica: ReplicaID, counters ranges: CounterRanges) {
    guard !ranges.isEmpty else { return }
    counters.update(replica, default: CounterRanges()) { $0.formUnion(ranges) }
  }

  /// Records every event of `other` as known.
  public mutating func formUnion(_ other: CausalContext) {
    counters.merge(other.counters) { $0.union($1) }
  }

  /// The events known here or in `other`.
  public func union(_ other: CausalContext) -> CausalContext {
    var result = self
    result.formUnion(other)
    return result
  }

  /// The events known here but not in `other`: what a peer that knows `other` lacks.
  public func subtracting(_ other: CausalContext) -> CausalContext {
    var result = CausalContext()
    for (replica, ranges) in counters.storage {
      let remaining = other.counters[replica].map { ranges.subtracting($0) } ?? ranges
      if !remaining.isEmpty { result.counters[replica] = remaining }
    }
    return result
  }

  /// The (replica, ranges) pairs sorted by replica, for canonical encodings.
  ///
  /// - Complexity: O(r) for r replicas.
  public var entries: [(replica: ReplicaID, counters: CounterRanges)] {
    counters.storage.map { (replica: $0.replica, counters: $0.value) }
  }
}

extension CausalContext: CustomStringConvertible {
  /// The known counters per replica, for debugging: `{replica:[1-5,8], …}`.
  public var description: String {
    "{" + entries.map { "\($0.replica):\($0.counters)" }.joined(separator: ", ") + "}"
  }
}

// MARK: - Stability

extension CausalContext {
  /// The events known both here and in `other`: the meet of two contexts.
  ///
  /// The meet of the contexts of every device of a space is what all of them have seen,
  /// the candidate for a stable context (see ``stableCut(of:seenBy:)``). Like the union,
  /// it is commutative, associative and idempotent, and it is included in both inputs.
  ///
  /// - Complexity: O(r + g) for r replicas and g gaps in the two contexts.
  public func intersection(_ other: CausalContext) -> CausalContext {
    var result = CausalContext()
    for (replica, ranges) in counters.storage {
      guard let theirs = other.counters[replica] else { continue }
      let shared = ranges.intersection(theirs)
      if !shared.isEmpty { result.counters[replica] = shared }
    }
    return result
  }

  /// The stable cut that the contexts `reported` by every device that may still send an
  /// edit allow a replica whose context is `receiver` to forget with: their meet, once
  /// `receiver` holds their union; empty before.
  ///
  /// Every device has seen the meet, so whatever a device makes from then on comes after
  /// it. An edit made before its device had seen the meet (concurrent with a delete in
  /// it) is in that device's report, hence in the union: once the receiver holds the
  /// union, such an edit is in its document and keeps its entity alive, so
  /// ``Document/forgetDeleted(stable:)`` cannot forget the entity under it.
  ///
  /// - Complexity: O(k (r + g)) for k reports of r replicas and g gaps.
  public static func stableCut(of reported: [CausalContext], seenBy receiver: CausalContext)
    -> CausalContext
  {
    guard var meet = reported.first else { return CausalContext() }
    var union = meet
    for context in reported.dropFirst() {
      meet = meet.intersection(context)
      union.formUnion(context)
    }
    return receiver.includes(union) ? meet : CausalContext()
  }
}
