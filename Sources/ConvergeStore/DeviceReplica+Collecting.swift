import Converge

extension DeviceReplica {
  /// Drops the slot tombstones that the doubly stable cut `cut` lets every list field
  /// collect, and returns how many (see ``DocumentStore/collectListTombstones(at:)``):
  /// the next sync writes a snapshot without them and removes the files that held them.
  /// The lists show the same items in the same order, so no change is published.
  ///
  /// - Complexity: O(Σ s log s) over the list fields' s slots each.
  @discardableResult
  public func collectListTombstones(at cut: DoublyStableCut) -> Int {
    let collected = withMutation(keyPath: \.replica) { store.collectListTombstones(at: cut) }
    refreshStatus()
    return collected
  }
}
