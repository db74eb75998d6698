extension DocumentTransaction {
  // MARK: Lists

  /// Inserts `value` into a list field at `index` (clamped to the list), or moves it
  /// there if the list holds it already: a list holds each value once.
  ///
  /// Inserting into a field the entity does not have yet adds a list; a field of another
  /// kind is left alone.
  ///
  /// - Complexity: O(s + k) for s slots and k items ever inserted.
  public mutating func insert(
    _ value: FieldValue, at index: Int, intoList field: String, of key: EntityKey
  ) {
    editList(field, of: key) { list, dot, timestamp in
      list.insert(value, at: index, firstDot: dot, timestamp: timestamp)
    }
  }

  /// Moves the item at `from` of a list field so that it ends at index `to` (clamped):
  /// the item takes a new slot there, and its register names that slot, so a concurrent
  /// move of the same item elsewhere leaves it in one place, never two.
  ///
  /// - Complexity: O(s + k).
  public mutating func move(from: Int, to: Int, inList field: String, of key: EntityKey) {
    editList(field, of: key) { list, dot, timestamp in
      list.move(from: from, to: to, firstDot: dot, timestamp: timestamp)
    }
  }

  /// Removes the item at `index` of a list field: the events of it this replica has seen,
  /// so a move or insert of it made concurrently elsewhere keeps it.
  ///
  /// - Complexity: O(s + k).
  public mutating func remove(at index: Int, fromList field: String, of key: EntityKey) {
    editList(field, of: key) { list, dot, _ in list.remove(at: index, firstDot: dot) }
  }

  /// Runs a local list edit with two fresh dots (an edit takes one or two) and a fresh
  /// timestamp, and commits its delta as one event of the entity.
  private mutating func editList(
    _ field: String, of key: EntityKey,
    edit: (inout MovableList, Dot, Timestamp) -> MovableListDelta
  ) {
    var list = MovableList()
    switch document.entities[key]?.fields[field] {
    case .list(let held)?: list = held
    case nil: break
    default: return  // a field of another kind
    }
    let first = nextDot()
    guard let second = first.next else { return }
    let wasVisible = undoLog == nil || isVisible(key)
    let listDelta = edit(&list, first, clock.tick())
    guard !listDelta.isEmpty else { return }
    let usesSecond = listDelta.slots.deletes.contains { $0.dot == second }
    let last = usesSecond ? second : first
    var change = DocumentDelta()
    change.context.insert(first)
    if usesSecond { change.context.insert(second) }
    var entity = EntityDelta(presence: .add(last))
    entity.fields[field] = .list(listDelta)
    change.entities[key] = entity
    commit(change)
    if undoLog != nil { noteRevival(of: key, wasVisible: wasVisible, by: last) }
  }
}
