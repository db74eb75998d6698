import ConvergeCore

/// Dropping what waits for events that will never come: the inserts and delete targets
/// of a retired replica that its peers received ahead of an earlier event of its own that
/// no peer holds (a push lost before the device left). See
/// ``Document/dropPending(of:)``.
extension RGA {
  /// Drops the buffered inserts that are events of `replicas` or wait for one of their
  /// events, the buffered inserts that wait for a dropped one, and the delete targets
  /// waited for among those ids; returns the number of scalars dropped and delete targets
  /// given up. The integrated items, the delete log and everything else stay.
  ///
  /// - Complexity: O(p log p) for p buffered inserts, plus O(u) for u waited-for delete
  ///   target ranges.
  package mutating func dropPending(of replicas: Set<ReplicaID>) -> Int {
    guard hasPending(of: replicas) else { return 0 }
    var dropped = 0
    var work = pendingInserts.removeAll { insert, waitedFor in
      replicas.contains(insert.id.replica) || replicas.contains(waitedFor.replica)
    }
    // An insert waiting for a dropped one would wait for ever: dropped too.
    var droppedRanges: [(replica: ReplicaID, range: Range<UInt64>)] = []
    while let insert = work.popLast() {
      let lower = insert.id.counter
      let upper = lower &+ UInt64(insert.length)
      droppedRanges.append((insert.id.replica, lower..<upper))
      dropped &+= insert.length
      guard !pendingInserts.isEmpty else { continue }
      work += pendingInserts.takeWaiting(replica: insert.id.replica, lower: lower, upper: upper)
    }
    if !unresolvedDeletes.isEmpty {
      var given: [Range<UInt64>] = []
      for (replica, ranges) in unresolvedDeletes.ranges where replicas.contains(replica) {
        for range in ranges { given += unresolvedDeletes.take(replica: replica, range) }
      }
      for (replica, range) in droppedRanges {
        given += unresolvedDeletes.take(replica: replica, range)
      }
      for range in given { dropped &+= Int(clamping: range.count) }
    }
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return dropped
  }

  /// Whether a buffered insert is an event of `replicas` or waits for one of theirs, or a
  /// delete target of theirs is waited for: what ``dropPending(of:)`` would drop first.
  ///
  /// - Complexity: O(p + u) for p buffered inserts and u waited-for target ranges.
  package func hasPending(of replicas: Set<ReplicaID>) -> Bool {
    guard hasPending, !replicas.isEmpty else { return false }
    for insert in pendingInserts {
      if replicas.contains(insert.id.replica) { return true }
      if let origin = insert.origin, replicas.contains(origin.replica) { return true }
      if let right = insert.rightOrigin, replicas.contains(right.replica) { return true }
    }
    for (replica, ranges) in unresolvedDeletes.ranges where !ranges.isEmpty {
      if replicas.contains(replica) { return true }
    }
    return false
  }
}
