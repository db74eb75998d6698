extension DocumentTransaction {
  // MARK: Trees

  /// Moves `node` under `parent` (`nil`: makes it a root) in the forest of the parent
  /// field `field` (``DocumentForest``), and returns whether it wrote the move.
  ///
  /// The write records the node's parent as this document shows it now, which the forest
  /// falls back to should a concurrent move elsewhere make this one close a cycle. A move
  /// under the node itself, one of its descendants or an entity that is not visible is
  /// refused here (nothing is written). Writing a field of another kind is refused too.
  ///
  /// - Complexity: O(h) for the node's depth h, plus bringing the forest up to date if
  ///   the document changed since it was last read (``Document/forest(of:)``).
  @discardableResult
  public mutating func setParent(_ parent: EntityKey?, of node: EntityKey, in field: String)
    -> Bool
  {
    if let kind = document.fieldKind(field, of: node), kind != .parent { return false }
    let forest = document.forest(of: field)
    if let parent {
      guard document.contains(parent), !forest.isAncestor(node, of: parent) else { return false }
    }
    var previous: LWWRegister<FieldValue>?
    if case .parent(let register)? = document.entities[node]?.fields[field] {
      previous = register
    }
    let wasVisible = undoLog == nil || isVisible(node)
    let before = forest.parent(of: node)
    let dot = nextDot()
    let stamp = LWWRegister<FieldValue>.Stamp(timestamp: clock.tick(), dot: dot)
    var register = LWWRegister<FieldValue>()
    register.set(ParentMove(parent: parent, previous: before).fieldValue, stamp: stamp)
    commit(event: dot, on: node, field: field, .parent(register))
    if undoLog != nil {
      noteRevival(of: node, wasVisible: wasVisible, by: dot)
      recordUndo(
        .restoreParent(
          node, field: field, previous: before, previousStamp: previous?.stamp, written: stamp))
    }
    return true
  }

  /// Moves `node` under `parent` at `index` among its children as
  /// ``Document/children(of:in:orderedBy:)`` orders them by the list field `listField`
  /// of each parent: the parent field takes the move (``setParent(_:of:in:)``), the new
  /// parent's list takes (or moves) the node's key, and the old parent's list drops it.
  /// With a `nil` parent the node becomes a root and no list changes but the old one.
  /// Returns whether the move was written (see ``setParent(_:of:in:)``).
  ///
  /// Concurrent moves of one node on two devices leave it under one parent, in one
  /// place: the parent field's later write wins, and the lists show a child only under
  /// its resolved parent.
  ///
  /// - Complexity: O(s + k + c) for the lists' s slots and k items and c children, plus
  ///   bringing the forest up to date if the document changed.
  @discardableResult
  public mutating func move(
    _ node: EntityKey, under parent: EntityKey?, at index: Int, in parentField: String,
    orderedBy listField: String
  ) -> Bool {
    let old = document.forest(of: parentField).parent(of: node)
    let item = node.fieldValue
    guard setParent(parent, of: node, in: parentField) else { return false }
    if let old, old != parent, let at = document.list(of: listField, in: old).firstIndex(of: item) {
      remove(at: at, fromList: listField, of: old)
    }
    guard let parent else { return true }
    // The place in the list: before the child shown at `index` (the node left out).
    let shown = document.children(of: parent, in: parentField, orderedBy: listField)
      .filter { $0 != node }
    var values = document.list(of: listField, in: parent)
    let from = values.firstIndex(of: item)
    if let from { values.remove(at: from) }
    var to = values.count
    if index >= 0, index < shown.count, let at = values.firstIndex(of: shown[index].fieldValue) {
      to = at
    }
    if let from {
      if from != to { move(from: from, to: to, inList: listField, of: parent) }
    } else {
      insert(item, at: to, intoList: listField, of: parent)
    }
    return true
  }
}
