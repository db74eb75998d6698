import ConvergeCore

extension ORSet {
  /// Verifies the set's invariants: those of its store (``ORSetStore/_checkInvariants()``,
  /// the check a document's set fields pass too).
  ///
  /// Presences are not checked against the context: a delta computed for another peer
  /// (any delta may be applied) can leave a presence naming an event still to come, as
  /// in a document.
  ///
  /// Called after every mutation and merge when the package is built with
  /// `-Xswiftc -DCONVERGE_INTERNAL_CHECKS`; a no-op otherwise.
  public func _checkInvariants() {
    #if CONVERGE_INTERNAL_CHECKS
      store._checkInvariants()
    #endif
  }
}
