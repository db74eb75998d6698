import ConvergeCore

extension LWWRegister {
  /// Verifies the register's invariants: a value exists exactly when a stamp does (an
  /// unwritten register keeps the zero stamp, so that equal registers compare equal).
  ///
  /// Called after every mutation and merge when the package is built with
  /// `-Xswiftc -DCONVERGE_INTERNAL_CHECKS`; a no-op otherwise.
  public func _checkInvariants() {
    #if CONVERGE_INTERNAL_CHECKS
      precondition(
        value != nil || writtenStamp == Self.unwritten, "LWWRegister: a stamp without a value")
    #endif
  }
}
