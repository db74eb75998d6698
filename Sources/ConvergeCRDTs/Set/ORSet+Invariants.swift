import ConvergeCore

extension ORSet {
  /// Verifies the set's invariants: every live dot is in the context, and no element is
  /// present with an empty dot set (the canonical form, so equal knowledge gives `==`).
  ///
  /// Called after every mutation and merge when the package is built with
  /// `-Xswiftc -DCONVERGE_INTERNAL_CHECKS`; a no-op otherwise.
  public func _checkInvariants() {
    #if CONVERGE_INTERNAL_CHECKS
      for (element, dots) in store.entries {
        precondition(!dots.isEmpty, "ORSet: \(element) is present with no dot")
        for dot in dots {
          precondition(context.contains(dot), "ORSet: live dot \(dot) missing from context")
        }
      }
    #endif
  }
}
