extension Document {
  /// Traps if the document's internal structure is inconsistent. Compiled into every
  /// mutation when built with `-DCONVERGE_INTERNAL_CHECKS` (the CI's second test pass);
  /// a failure is a bug in Converge, never a consequence of bad input.
  ///
  /// - Complexity: O(n) for n entries and characters in the document.
  public func _checkInvariants() {
    // Adds are events this document integrated. A remove may name adds that have not
    // arrived yet (it was made by a replica that saw them), so `removed` is not checked.
    func checkKnown(_ presence: Presence, _ what: @autoclosure () -> String) {
      for (replica, counter) in presence.added.entries {
        precondition(
          context.contains(Dot(replica: replica, counter: counter)),
          "\(what()): version \(replica)@\(counter) is not in the context")
      }
    }
    for (key, record) in entities {
      checkKnown(record.presence, "\(key)")
      for (name, field) in record.fields {
        switch field {
        case .register(let register):
          register._checkInvariants()
          if let stamp = register.stamp {
            precondition(context.contains(stamp.dot), "\(key).\(name): register dot unknown")
            precondition(
              stamp.dot.counter <= record.presence.added[stamp.dot.replica],
              "\(key).\(name): a write newer than the entity's version")
          }
        case .set(let elements):
          for (value, presence) in elements {
            precondition(!presence.added.isEmpty, "\(key).\(name): \(value) was never added")
            checkKnown(presence, "\(key).\(name).\(value)")
          }
        case .text(let text):
          text._checkInvariants()
        }
      }
    }
  }
}
