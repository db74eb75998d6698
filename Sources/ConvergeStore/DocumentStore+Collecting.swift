import Converge

extension DocumentStore {
  /// Drops the slot tombstones that the doubly stable cut `cut` lets every list field
  /// collect (see ``Document/collectListTombstones(at:)``), returns how many, and makes
  /// the next sync a compaction: its snapshot holds none of the collected slots, and the
  /// snapshot and logs that did are removed once it is durable.
  ///
  /// A log replayed over that snapshot does not bring them back: applying leaves out the
  /// slots whose events the document's context holds.
  ///
  /// - Complexity: O(Σ s log s) over the list fields' s slots each, plus waiting for a
  ///   running background sync.
  @discardableResult
  public func collectListTombstones(at cut: DoublyStableCut) -> Int {
    checkOutsideTransaction()
    // As for forgetting: a compaction still writing the uncollected document would
    // otherwise settle after this call and clear the need for a fresh snapshot.
    finishBackgroundSync()
    let collected = storedReplica.collectListTombstones(at: cut)
    if collected > 0 { needsFreshGeneration = true }
    return collected
  }
}
