extension Document {
  /// Traps if the document's internal structure is inconsistent. Compiled into every
  /// mutation when built with `-DCONVERGE_INTERNAL_CHECKS` (the CI's second test pass);
  /// a failure is a bug in Converge, never a consequence of bad input.
  ///
  /// - Complexity: O(n) for n entries and characters in the document.
  public func _checkInvariants() {
    // Presence entries are not checked against the context here: a delta applied to a
    // replica that lacks what it was computed against (any delta may be applied) leaves
    // a presence naming an event still to come. The simulator checks that none is left
    // at the end of a run (`presenceNamingAbsentEvent()`).
    entities._checkInvariants()
    events.checkCovers(entities)
    for waiting in waitingTexts {
      switch entities[waiting.entity]?.fields[waiting.field] {
      case .text?, .list?: continue
      default:
        preconditionFailure("\(waiting.entity).\(waiting.field): a waiting text that is not there")
      }
    }
    for (key, record) in entities {
      for (name, field) in record.fields {
        switch field {
        case .register(let register), .parent(let register):
          register._checkInvariants()
          if let stamp = register.stamp {
            precondition(context.contains(stamp.dot), "\(key).\(name): register dot unknown")
            precondition(
              stamp.dot.counter <= record.presence.added[stamp.dot.replica],
              "\(key).\(name): a write newer than the entity's version")
          }
        case .set(let elements):
          elements._checkInvariants()
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
        case .list(let list):
          list._checkInvariants()
          let waiting = waitingTexts.contains(TextFieldKey(entity: key, field: name))
          precondition(list.hasPending == waiting, "\(key).\(name): waiting lists out of date")
          for item in list.items.values {
            if let stamp = item.position.stamp {
              precondition(context.contains(stamp.dot), "\(key).\(name): move dot unknown")
            }
          }
        }
      }
    }
  }
}

extension Document {
  /// The first entity or set element whose presence names an add the document does not
  /// hold, described, or `nil` when every add it names is in the context.
  ///
  /// A presence's adds summarize events (an entity's latest event of each replica, an
  /// element's latest add). One that names an event the document lacks came from a delta
  /// applied without what it was computed against; should that event be lost for good
  /// (its device restored from a stale backup) no sync could bring the replicas to one
  /// presence (see `SyncSession.canApply(_:to:)`). Removes may name adds not yet here (a
  /// remove that arrives before the add it observed still removes it), so only adds are
  /// checked.
  ///
  /// - Complexity: O(n) for n entities, fields and set elements.
  package func presenceNamingAbsentEvent() -> String? {
    func absent(_ presence: Presence) -> Dot? {
      var found: Dot?
      presence.added.forEachEntry { replica, counter in
        let dot = Dot(replica: replica, counter: counter)
        if found == nil, !context.contains(dot) { found = dot }
      }
      return found
    }
    for (key, record) in entities {
      if let dot = absent(record.presence) { return "\(key) names \(dot)" }
      for case (let name, .set(let elements)) in record.fields {
        for (value, presence) in elements {
          if let dot = absent(presence) { return "\(key).\(name) \(value) names \(dot)" }
        }
      }
    }
    return nil
  }
}
