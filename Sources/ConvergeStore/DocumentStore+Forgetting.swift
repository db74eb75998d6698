import Converge

extension DocumentStore {
  /// Forgets the deleted entities whose events all lie in the stable cut `stable` (see
  /// ``Document/forgetDeleted(stable:)``), returns how many, and makes the next sync a
  /// compaction: its snapshot holds none of their content, and the snapshot and logs
  /// that did are removed once it is durable.
  ///
  /// The content stays in the files until that sync (``flush()``, ``compact()``,
  /// ``close()`` or a due ``syncIfDue()``); call ``compact()`` to have it gone at once.
  ///
  /// - Complexity: O(e + f) for e entities and f fields, plus waiting for a running
  ///   background sync.
  @discardableResult
  public func forgetDeleted(stable: CausalContext) -> Int {
    checkOutsideTransaction()
    // A compaction still writing the document as it was would otherwise settle after
    // this call and clear the need for a fresh snapshot.
    finishBackgroundSync()
    let forgotten = storedReplica.forgetDeleted(stable: stable)
    if forgotten > 0 { needsFreshGeneration = true }
    return forgotten
  }
}
