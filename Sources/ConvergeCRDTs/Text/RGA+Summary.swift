import ConvergeCore

extension RGA {
  /// Whether the text may hold an event (an inserted id, a delete dot, a buffered item)
  /// that a replica knowing every event up to `prefix` lacks. `false` means that
  /// ``delta(since:)`` of any context with that gap-free prefix is empty, so a handshake
  /// can skip the text without walking it.
  ///
  /// - Complexity: O(r) for r replicas: the id index and the delete log are sorted, so
  ///   each replica's latest event is its last entry (a text of one leaf, which keeps no
  ///   index, checks its at most ``maxRunsPerLeaf`` runs).
  package func mayHaveEvents(unknownTo prefix: VersionVector) -> Bool {
    guard pendingInserts.isEmpty, unresolvedDeletes.isEmpty else { return true }
    if leaves.count == 1 {
      for run in leaves[0].runs where run.counter + UInt64(run.length - 1) > prefix[run.replica] {
        return true
      }
    }
    for (replica, replicaIndex) in index {
      if let last = replicaIndex.last, last.upper - 1 > prefix[replica] { return true }
    }
    for (replica, log) in deleteLog {
      // Delete runs are sorted and disjoint (see `_checkInvariants`); the last one ends
      // last. Its end does not overflow: runs are checked when they arrive.
      if let last = log.last, last.dot.counter + (last.count - 1) > prefix[replica] {
        return true
      }
    }
    return false
  }
}
