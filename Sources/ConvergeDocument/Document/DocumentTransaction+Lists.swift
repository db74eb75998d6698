extension DocumentTransaction {
  // MARK: Lists

  /// Inserts `value` into a list field at `index` (clamped to the list), or moves it
  /// there if the list holds it already: a list holds each value once.
  ///
  /// Inserting into a field the entity does not have yet adds a list; a field of another
  /// kind is left alone.
  ///
  /// - Complexity: O(log s + m log s) for s slots and m orphaned slots (see
  ///   ``MovableList``).
  public mutating func insert(
    _ value: FieldValue, at index: Int, intoList field: String, of key: EntityKey
  ) {
    editList(field, of: key) { list, dot, timestamp in
      list.insertDelta(value, at: index, firstDot: dot, timestamp: timestamp)
    }
  }

  /// Moves the item at `from` of a list field so that it ends at index `to` (clamped):
  /// the item takes a new slot there, and its register names that slot, so a concurrent
  /// move of the same item elsewhere leaves it in one place, never two.
  ///
  /// - Complexity: O(log s + m log s).
  public mutating func move(from: Int, to: Int, inList field: String, of key: EntityKey) {
    editList(field, of: key) { list, dot, timestamp in
      list.moveDelta(from: from, to: to, firstDot: dot, timestamp: timestamp)
    }
  }

  /// Removes the item at `index` of a list field: the events of it this replica has seen,
  /// so a move or insert of it made concurrently elsewhere keeps it.
  ///
  /// - Complexity: O(log s + m log s).
  public mutating func remove(at index: Int, fromList field: String, of key: EntityKey) {
    editList(field, of: key) { list, dot, _ in list.removeDelta(at: index, firstDot: dot) }
  }

  /// Plans a local list edit with two fresh dots (an edit takes one or two) and a fresh
  /// timestamp on the list as it is, and commits its delta as one event of the entity:
  /// the document applies it to its list in place (the list is not copied to be edited).
  private mutating func editList(
    _ field: String, of key: EntityKey,
    edit: (MovableList, Dot, Timestamp) -> MovableListDelta
  ) {
    // Two consecutive dots: a move's new slot and the delete of its old one.
    let first = nextDots(2)
    let second = Dot(replica: first.replica, counter: first.counter + 1)
    let listDelta: MovableListDelta
    // Where each edited item was and its move, for undo, read before the edit.
    var undoBefore: [FieldValue: (index: Int?, move: LWWRegister<Dot>.Stamp?)] = [:]
    do {
      // Scoped: the document's list must have no other reference when the commit
      // applies the edit to it, or it would be copied there.
      let list: MovableList
      switch document.entities[key]?.fields[field] {
      case .list(let held)?: list = held
      case nil: list = MovableList()
      default: return  // a field of another kind
      }
      listDelta = edit(list, first, clock.tick())
      if undoLog != nil {
        for value in listDelta.items.keys {
          undoBefore[value] = (list.index(of: value), list.items[value]?.position.stamp)
        }
      }
    }
    guard !listDelta.isEmpty else { return }
    let wasVisible = undoLog == nil || isVisible(key)
    let usesSecond = listDelta.slots.deletes.contains { $0.dot == second }
    let last = usesSecond ? second : first
    var change = DocumentDelta()
    change.context.insert(first)
    if usesSecond { change.context.insert(second) }
    var entity = EntityDelta(presence: .add(last))
    entity.fields[field] = .list(listDelta)
    change.entities[key] = entity
    commit(change)
    if undoLog != nil {
      noteRevival(of: key, wasVisible: wasVisible, by: last)
      recordListUndo(listDelta, before: undoBefore, field: field, of: key)
    }
  }

  /// Records how to take back a list edit whose delta is `listDelta`, each edited item
  /// having been at `before`'s index with `before`'s move: a removed item goes back to
  /// its index, an inserted one is removed and a moved one goes back, each only while no
  /// later move superseded it.
  private mutating func recordListUndo(
    _ listDelta: MovableListDelta,
    before: [FieldValue: (index: Int?, move: LWWRegister<Dot>.Stamp?)], field: String,
    of key: EntityKey
  ) {
    for (value, item) in listDelta.items {
      let index = before[value]?.index ?? nil
      let written = item.position.stamp
      // A removal of an item that was not shown has nothing to take back.
      guard written != nil || index != nil else { continue }
      recordUndo(
        .listEdit(
          ListUndo(
            key: key, field: field, item: value, index: index, written: written,
            previous: before[value]?.move ?? nil)))
    }
  }

  /// Takes back one item's edit. A move or insert is taken back while it is still the
  /// item's winning move, or lives on as one: an undo that put the item back where an
  /// earlier edit of this device had it rewrote that edit's move (noted in
  /// `substitutions`), so undoing the earlier edit next still finds it.
  mutating func undoListEdit(_ undo: ListUndo, substitutions: inout UndoSubstitutions) {
    let current = document.movableList(of: undo.field, in: undo.key)?.index(of: undo.item)
    guard let written = undo.written else {
      // A removal: insert it back, unless it is there again.
      if current == nil, let index = undo.index {
        insert(undo.item, at: index, intoList: undo.field, of: undo.key)
        noteRewrite(of: undo, substitutions: &substitutions)
      }
      return
    }
    guard let current, case .list(let list)? = document.entities[undo.key]?.fields[undo.field],
      list.items[undo.item]?.position.stamp == substitutions.resolve(written)
    else { return }
    if let index = undo.index {
      move(from: current, to: index, inList: undo.field, of: undo.key)
      noteRewrite(of: undo, substitutions: &substitutions)
    } else {
      remove(at: current, fromList: undo.field, of: undo.key)
    }
  }

  /// Notes that the move `undo` took back to now lives on as the item's current move.
  private mutating func noteRewrite(of undo: ListUndo, substitutions: inout UndoSubstitutions) {
    guard let previous = undo.previous,
      case .list(let list)? = document.entities[undo.key]?.fields[undo.field],
      let now = list.items[undo.item]?.position.stamp
    else { return }
    substitutions.note(previous, rewrittenAs: now)
  }
}

/// One list item's edit to take back: the item, where it was before (nil: it was not in
/// the list) and the move the edit wrote (nil: the edit removed it).
struct ListUndo: Sendable {
  var key: EntityKey
  var field: String
  var item: FieldValue
  var index: Int?
  var written: LWWRegister<Dot>.Stamp?
  /// The item's move before the edit (nil: it had none), which an undo rewrites.
  var previous: LWWRegister<Dot>.Stamp?
}
