/// How to undo one local edit: the inverse a transaction records while an
/// ``UndoHistory`` records it.
///
/// Every inverse names the replica's own events (item ids, register stamps, its own
/// adds), never a position or a whole observed state, so undoing it issues new operations
/// that take back this replica's edit and nothing another replica did.
enum UndoAction: Sendable {
  /// The edit made the entity visible: hide it again by removing this replica's events
  /// on it, and only those (an edit another replica made keeps it alive).
  case hideEntity(EntityKey, replica: ReplicaID)
  /// The edit deleted the entity: add it again, which brings back all its fields.
  case restoreEntity(EntityKey)
  /// The edit wrote `written` over `previous`: write `previous` back (`.null` if there
  /// was none), but only while `written` is still the winning write.
  case restoreRegister(
    EntityKey, field: String, previous: FieldValue?,
    previousStamp: LWWRegister<FieldValue>.Stamp?, written: LWWRegister<FieldValue>.Stamp)
  /// The edit added an absent element: remove this replica's adds of it.
  case removeOwnAdds(EntityKey, field: String, element: FieldValue, replica: ReplicaID)
  /// The edit removed an element: add it again.
  case addElement(EntityKey, field: String, element: FieldValue)
  /// The edit inserted these items: delete those of them that are still visible.
  case deleteItems(EntityKey, field: String, span: RGA.ItemSpan)
  /// The edit deleted these scalars, held by the items `spans` in document order: insert
  /// them again where the first of those items stands.
  case reinsert(EntityKey, field: String, scalars: [Unicode.Scalar], spans: [RGA.ItemSpan])
}

/// Where an undo or redo moved an edit's effect: a register value rewritten under a new
/// stamp, or text re-inserted under new item ids. A later step that names the old stamp
/// or ids acts on the new ones (as Yjs follows an item's `redone` link), so undoing a
/// typed word after undoing its deletion deletes the word again.
struct UndoSubstitutions: Sendable {
  typealias Stamp = LWWRegister<FieldValue>.Stamp

  private var stamps: [Stamp: Stamp] = [:]
  /// Items `from` now live as the same number of items from `to`.
  private var items: [(from: RGA.ItemSpan, to: Dot)] = []

  mutating func note(_ old: Stamp, rewrittenAs new: Stamp) { stamps[old] = new }

  mutating func note(_ old: [RGA.ItemSpan], reinsertedFrom first: Dot) {
    var counter = first.counter
    for span in old {
      items.append((span, Dot(replica: first.replica, counter: counter)))
      counter += UInt64(span.count)
    }
  }

  /// The stamp `stamp`'s value lives under now.
  func resolve(_ stamp: Stamp) -> Stamp {
    var current = stamp
    // Each rewrite has a fresh stamp, so the chain ends; bounded by its length anyway.
    for _ in 0...stamps.count {
      guard let next = stamps[current] else { break }
      current = next
    }
    return current
  }

  /// The items `span`'s items live as now, following every re-insertion.
  ///
  /// - Complexity: O(p × s) for p pieces returned and s re-inserted spans.
  func resolve(_ span: RGA.ItemSpan) -> [RGA.ItemSpan] {
    var result: [RGA.ItemSpan] = []
    var work = [span]
    while var piece = work.popLast() {
      guard piece.count > 0 else { continue }
      guard
        let moved = items.first(where: {
          $0.from.first.replica == piece.first.replica
            && $0.from.first.counter < piece.first.counter + UInt64(piece.count)
            && piece.first.counter < $0.from.first.counter + UInt64($0.from.count)
        })
      else {
        result.append(piece)
        continue
      }
      let lower = Swift.max(piece.first.counter, moved.from.first.counter)
      let upper = Swift.min(
        piece.first.counter + UInt64(piece.count),
        moved.from.first.counter + UInt64(moved.from.count))
      if piece.first.counter < lower {
        work.append(RGA.ItemSpan(first: piece.first, count: Int(lower - piece.first.counter)))
      }
      if upper < piece.first.counter + UInt64(piece.count) {
        work.append(
          RGA.ItemSpan(
            first: Dot(replica: piece.first.replica, counter: upper),
            count: Int(piece.first.counter + UInt64(piece.count) - upper)))
      }
      // Fresh ids are never re-inserted into themselves, so the chain ends.
      piece = RGA.ItemSpan(
        first: Dot(
          replica: moved.to.replica,
          counter: moved.to.counter + (lower - moved.from.first.counter)),
        count: Int(upper - lower))
      work.append(piece)
    }
    return result
  }
}

extension DocumentTransaction {
  func isVisible(_ key: EntityKey) -> Bool {
    document.entities[key]?.isVisible ?? false
  }

  /// Records that an edit with `dot` made `key` visible, if it was not.
  mutating func noteRevival(of key: EntityKey, wasVisible: Bool, by dot: Dot) {
    if !wasVisible { undoLog?.append(.hideEntity(key, replica: dot.replica)) }
  }

  /// Records an inverse; the inverse of typing that continues the previous insert joins
  /// it, so a typed word is one action.
  mutating func recordUndo(_ action: UndoAction) {
    // Taken out, so that the log is uniquely referenced and grows in place.
    guard var log = undoLog.take() else { return }
    if case .deleteItems(let key, let field, let span) = action,
      case .deleteItems(let lastKey, let lastField, let lastSpan)? = log.last,
      lastKey == key, lastField == field, lastSpan.first.replica == span.first.replica,
      lastSpan.first.counter + UInt64(lastSpan.count) == span.first.counter
    {
      log[log.count - 1] = .deleteItems(
        key, field: field,
        span: RGA.ItemSpan(first: lastSpan.first, count: lastSpan.count + span.count))
    } else {
      log.append(action)
    }
    undoLog = log
  }

  /// The text field `field` of `key`, if it holds text.
  private func text(_ field: String, of key: EntityKey) -> RGA? {
    guard case .text(let text)? = document.entities[key]?.fields[field] else { return nil }
    return text
  }

  /// Carries out `action`, recording its own inverse if this transaction records.
  mutating func perform(_ action: UndoAction, substitutions: inout UndoSubstitutions) {
    switch action {
    case .hideEntity(let key, let replica):
      guard let record = document.entities[key], record.isVisible else { return }
      let own = record.presence.added[replica]
      var hidden = record.presence
      hidden.removed[replica] = Swift.max(hidden.removed[replica], own)
      // Kept visible by another replica's events: nothing of this replica's to take back.
      guard !hidden.isPresent else { return }
      let dot = nextDot()
      var change = DocumentDelta()
      change.context.insert(dot)
      let observed = Presence(added: VersionVector(replica: replica, counter: own))
      change.entities[key] = EntityDelta(presence: .remove(observing: observed, dot: dot))
      commit(change)
      if !isVisible(key) { undoLog?.append(.restoreEntity(key)) }
    case .restoreEntity(let key):
      guard !isVisible(key) else { return }
      create(key)
    case .restoreRegister(let key, let field, let previous, let previousStamp, let written):
      guard case .register(let register)? = document.entities[key]?.fields[field],
        let current = register.stamp, current == substitutions.resolve(written)
      else { return }
      let stamp = write(previous ?? .null, for: field, of: key)
      if let previousStamp { substitutions.note(previousStamp, rewrittenAs: stamp) }
    case .removeOwnAdds(let key, let field, let element, let replica):
      guard case .set(let elements)? = document.entities[key]?.fields[field],
        let presence = elements[element]
      else { return }
      let own = presence.added[replica]
      var removed = presence
      removed.removed[replica] = Swift.max(removed.removed[replica], own)
      // Kept by another replica's add: nothing of this replica's to take back.
      guard presence.isPresent, !removed.isPresent else { return }
      _ = consume elements  // no second reference to the set while it changes
      let wasVisible = isVisible(key)
      let dot = nextDot()
      let observed = Presence(added: VersionVector(replica: replica, counter: own))
      commit(
        event: dot, on: key, field: field,
        .set([element: .remove(observing: observed, dot: dot)]))
      undoLog?.append(.addElement(key, field: field, element: element))
      noteRevival(of: key, wasVisible: wasVisible, by: dot)
    case .addElement(let key, let field, let element):
      insert(element, into: field, of: key)
    case .deleteItems(let key, let field, let span):
      // Found in a text that is released before the edits, which then happen in place.
      let ranges =
        text(field, of: key).map { text in
          substitutions.resolve(span).flatMap { text.visibleRanges(of: $0) }
        } ?? []
      // From the end, so that each range's positions still hold when it is deleted.
      for range in ranges.sorted(by: { $0.lowerBound > $1.lowerBound }) {
        deleteText(range, in: field, of: key)
      }
    case .reinsert(let key, let field, let scalars, let spans):
      let anchor = spans.first.map { TextAnchor(character: $0.first, affinity: .following) }
      guard let anchor, let position = text(field, of: key)?.position(of: anchor) else { return }
      let utf16Count = scalars.reduce(0) { $0 + UTF16.width($1) }
      guard
        let first = insertScalars(
          scalars, utf16Count: utf16Count, at: position, in: field, of: key)
      else { return }
      substitutions.note(spans, reinsertedFrom: first)
    }
  }
}
