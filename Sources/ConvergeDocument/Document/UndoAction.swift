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
  /// The edit deleted these items (the delta's deletes, in document order): insert each
  /// piece's scalars, read from its tombstones, again right after the piece's own last
  /// item (as Yjs redoes an item next to itself).
  case restoreDeleted(EntityKey, field: String, deletes: [RGADelta.Delete])
  /// Take back a list item's insert or move (``DocumentTransaction/undoListEdit(_:)``).
  case listEdit(ListUndo)
  /// The edit moved a tree node from `previous` (`nil`: a root) with the write
  /// `written`: move it back, but only while `written` is still the winning write.
  case restoreParent(
    EntityKey, field: String, previous: EntityKey?,
    previousStamp: LWWRegister<FieldValue>.Stamp?, written: LWWRegister<FieldValue>.Stamp)
}

/// The inverses a transaction records: the step it adds to (its earlier actions
/// included, so that typing that continues a word joins its action) and whether the
/// transaction recorded anything.
struct UndoLog: Sendable {
  private(set) var actions: [UndoAction] = []
  var recorded = false
  /// The latest insert's inverse while typing may still extend it: kept out of `actions`
  /// so that a keystroke grows a count instead of rebuilding an action.
  private var typing: (key: EntityKey, field: String, span: RGA.ItemSpan)?

  init(actions: [UndoAction] = []) { self.actions = actions }

  mutating func append(_ action: UndoAction) {
    finishTyping()
    actions.append(action)
  }

  /// Records that items `span` were typed into `field` of `key`: joins the typing before
  /// if they continue it.
  mutating func noteTyped(_ span: RGA.ItemSpan, field: String, of key: EntityKey) {
    if let last = typing?.span, last.first.replica == span.first.replica,
      last.first.counter &+ UInt64(last.count) == span.first.counter,
      typing?.field == field, typing?.key == key
    {
      typing?.span.count += span.count
      return
    }
    finishTyping()
    typing = (key, field, span)
  }

  /// The actions, typing included.
  var finished: [UndoAction] {
    var log = self
    log.finishTyping()
    return log.actions
  }

  private mutating func finishTyping() {
    guard let typing = typing.take() else { return }
    actions.append(.deleteItems(typing.key, field: typing.field, span: typing.span))
  }
}

/// Where an undo or redo moved an edit's effect: a register value rewritten under a new
/// stamp, or text re-inserted under new item ids. A later step that names the old stamp
/// or ids acts on the new ones (as Yjs follows an item's `redone` link), so undoing a
/// typed word after undoing its deletion deletes the word again.
struct UndoSubstitutions: Sendable {
  typealias Stamp = LWWRegister<FieldValue>.Stamp

  /// A re-insertion: items `from.lower..<from.upper` live on as the same number of items
  /// from `to`.
  struct Move: Sendable {
    var from: Range<UInt64>
    var to: Dot
  }

  private var stamps: [Stamp: Stamp] = [:]
  /// Per replica, the re-inserted ranges sorted by their lower bound. An item is deleted,
  /// and so re-inserted, at most once (what comes back has new ids), so they never overlap.
  private var moves = ReplicaMap<[Move]>()

  mutating func note(_ old: Stamp, rewrittenAs new: Stamp) { stamps[old] = new }

  /// List items' moves rewritten by an undo or redo (a list item's position is a register
  /// of slots), followed as register stamps are.
  private var listStamps: [LWWRegister<Dot>.Stamp: LWWRegister<Dot>.Stamp] = [:]

  mutating func note(_ old: LWWRegister<Dot>.Stamp, rewrittenAs new: LWWRegister<Dot>.Stamp) {
    listStamps[old] = new
  }

  /// The move a list item's move `stamp` lives on as now.
  func resolve(_ stamp: LWWRegister<Dot>.Stamp) -> LWWRegister<Dot>.Stamp {
    var current = stamp
    for _ in 0...listStamps.count {
      guard let next = listStamps[current] else { break }
      current = next
    }
    return current
  }

  /// Notes that the items `old` were re-inserted as the same number of items from
  /// `first`.
  mutating func note(_ old: RGA.ItemSpan, reinsertedFrom first: Dot) {
    let (upper, overflow) = old.first.counter.addingReportingOverflow(UInt64(old.count))
    guard !overflow, old.count > 0 else { return }
    let move = Move(from: old.first.counter..<upper, to: first)
    let replica = moves.slotCreating(old.first.replica, default: [])
    let slot = moves.values[replica].partitioningIndex {
      $0.from.lowerBound >= move.from.lowerBound
    }
    moves.values[replica].insert(move, at: slot)
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
  /// - Complexity: O(p log m) for p pieces returned and m re-inserted ranges.
  func resolve(_ span: RGA.ItemSpan) -> [RGA.ItemSpan] {
    var result: [RGA.ItemSpan] = []
    var work = [span]
    while let piece = work.popLast() {
      let (end, overflow) = piece.first.counter.addingReportingOverflow(UInt64(piece.count))
      guard piece.count > 0, !overflow else { continue }
      guard let list = moves[piece.first.replica] else {
        result.append(piece)
        continue
      }
      // The first move that ends above the piece's start, if it starts below its end.
      let slot = list.partitioningIndex { $0.from.upperBound > piece.first.counter }
      guard slot < list.count, list[slot].from.lowerBound < end else {
        result.append(piece)
        continue
      }
      let move = list[slot]
      let lower = Swift.max(piece.first.counter, move.from.lowerBound)
      let upper = Swift.min(end, move.from.upperBound)
      if piece.first.counter < lower {
        work.append(RGA.ItemSpan(first: piece.first, count: Int(lower - piece.first.counter)))
      }
      if upper < end {
        work.append(
          RGA.ItemSpan(
            first: Dot(replica: piece.first.replica, counter: upper), count: Int(end - upper)))
      }
      // Re-inserted items have fresh ids, never moved into themselves: the chain ends.
      work.append(
        RGA.ItemSpan(
          first: Dot(
            replica: move.to.replica, counter: move.to.counter &+ (lower - move.from.lowerBound)),
          count: Int(upper - lower)))
    }
    return result
  }
}

extension DocumentTransaction {
  mutating func isVisible(_ key: EntityKey) -> Bool {
    document.entities[key]?.isVisible ?? false
  }

  /// Records that an edit with `dot` made `key` visible, if it was not.
  mutating func noteRevival(of key: EntityKey, wasVisible: Bool, by dot: Dot) {
    if !wasVisible { recordUndo(.hideEntity(key, replica: dot.replica)) }
  }

  /// Records an inverse; the inverse of typing that continues the previous insert joins
  /// it, so a typed word is one action.
  mutating func recordUndo(_ action: UndoAction) {
    // Changed in place through the optional: no copy of the log.
    guard undoLog != nil else { return }
    undoLog?.recorded = true
    if case .deleteItems(let key, let field, let span) = action {
      undoLog?.noteTyped(span, field: field, of: key)
    } else {
      undoLog?.append(action)
    }
  }

  /// The text field `field` of `key`, if it holds text.
  private mutating func text(_ field: String, of key: EntityKey) -> RGA? {
    guard case .text(let text)? = document.entities[key]?.fields[field] else { return nil }
    return text.text
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
      if !isVisible(key) { recordUndo(.restoreEntity(key)) }
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
      // The revival first, as every edit records it: redo then restores the element
      // before it hides the entity again.
      noteRevival(of: key, wasVisible: wasVisible, by: dot)
      recordUndo(.addElement(key, field: field, element: element))
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
    case .restoreDeleted(let key, let field, let deletes):
      // Each piece next to its own tombstones, so that pieces come back in their order
      // wherever the text around them went since; its scalars are still in them.
      for delete in deletes where delete.count > 0 && delete.count <= UInt64(Int.max) {
        let range = delete.targetRange
        let span = RGA.ItemSpan(
          first: Dot(replica: range.replica, counter: range.lower), count: Int(delete.count))
        guard let scalars = text(field, of: key)?.deletedScalars(of: span) else { continue }
        let last = Dot(replica: range.replica, counter: range.upper &- 1)
        guard let first = insertScalars(scalars, after: last, in: field, of: key) else { continue }
        substitutions.note(span, reinsertedFrom: first)
      }
    case .listEdit(let undo):
      undoListEdit(undo, substitutions: &substitutions)
    case .restoreParent(let key, let field, let previous, let previousStamp, let written):
      guard case .parent(let register)? = document.entities[key]?.fields[field],
        let current = register.stamp, current == substitutions.resolve(written),
        setParent(previous, of: key, in: field),
        case .parent(let now)? = document.entities[key]?.fields[field], let stamp = now.stamp
      else { return }
      if let previousStamp { substitutions.note(previousStamp, rewrittenAs: stamp) }
    }
  }
}
