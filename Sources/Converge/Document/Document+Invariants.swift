extension Document {
  /// Traps if the document's internal structure is inconsistent. Compiled into every
  /// mutation when built with `-DCONVERGE_INTERNAL_CHECKS` (the CI's second test pass);
  /// a failure is a bug in Converge, never a consequence of bad input.
  ///
  /// - Complexity: O(n) for n entries and characters in the document.
  public func _checkInvariants() {
    // Presence entries are not checked against the context: they are version-vector
    // summaries, and a delta computed against an optimistic view of its receiver (a sync
    // session after a lost message) may carry an entry whose event arrives later.
    // Presence is a join on its own, so this never affects convergence.
    entities._checkInvariants()
    events.checkCovers(entities)
    for waiting in waitingTexts {
      guard case .text? = entities[waiting.entity]?.fields[waiting.field] else {
        preconditionFailure("\(waiting.entity).\(waiting.field): a waiting text that is not there")
      }
    }
    for (key, record) in entities {
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
          }
        case .text(let storage):
          let waiting = waitingTexts.contains(TextFieldKey(entity: key, field: name))
          // A deferred text is bytes that never change, checked each time they are
          // decoded (`RGA(from:)`): decoding every one for every mutation's check made
          // replaying a long log quadratic. A load defers only texts that wait for nothing.
          guard !storage.isDeferred else {
            precondition(!waiting, "\(key).\(name): a deferred text listed as waiting")
            continue
          }
          let text = storage.text
          text._checkInvariants()
          precondition(text.hasPending == waiting, "\(key).\(name): waiting texts out of date")
        }
      }
    }
  }
}
