extension EntityField {
  /// A movable list: an ordered array of distinct values whose order survives
  /// concurrent moves (``MovableList``). A card moved on two devices at once ends in one
  /// place; cards one device inserts at one place stay together.
  ///
  /// Writes compare the stored order with the new array and record the fewest moves
  /// that turn one into the other: the items outside a longest run kept in order move,
  /// each to just after its new predecessor, so reordering one card is one move, not a
  /// rewrite of the cards around it. A value that appears twice in the array is kept
  /// once, at its first place.
  ///
  /// - Complexity: a write is O(n log n + m (s + k)) for n items, m of them inserted,
  ///   moved or removed, s slots and k items ever inserted.
  @inlinable
  public static func list<Element: FieldValueConvertible & Hashable>(
    _ name: String, _ keyPath: WritableKeyPath<Model, [Element]> & Sendable
  ) -> EntityField {
    let property = ModelProperty(keyPath)
    return EntityField(
      name: name, kind: .list, keyPath: keyPath,
      read: { model, stored in
        property.set(stored.listValues.compactMap { Element(fieldValue: $0) }, in: &model)
      },
      write: { old, new, creating, transaction, key in
        let after = property.get(from: new)
        guard creating || after != property.get(from: old) else { return }
        transaction.writeList(after.map(\.fieldValue), to: name, of: key)
      })
  }
}

extension StoredField {
  /// The list field's items in order, empty if the field is not a list.
  @usableFromInline var listValues: [FieldValue] {
    guard case .list(let list)? = state else { return [] }
    return list.values
  }
}

extension DocumentTransaction {
  /// Turns the list field's stored order into `target` with the fewest edits: removes
  /// the items `target` lacks, keeps a longest run of the others that is already in
  /// `target`'s order, and moves or inserts each remaining item just after its
  /// predecessor in `target`. Duplicates in `target` are kept once, at their first place.
  @usableFromInline
  mutating func writeList(_ target: [FieldValue], to field: String, of key: EntityKey) {
    var seen = Set<FieldValue>()
    let target = target.filter { seen.insert($0).inserted }
    var current = document.list(of: field, in: key)
    if case .some(let kind) = document.fieldKind(field, of: key), kind != .list { return }
    var targetIndex: [FieldValue: Int] = [:]
    for (index, value) in target.enumerated() { targetIndex[value] = index }
    for index in current.indices.reversed() where targetIndex[current[index]] == nil {
      remove(at: index, fromList: field, of: key)
      current.remove(at: index)
    }
    let stable = ListChange.longestIncreasingRun(current.map { targetIndex[$0] ?? 0 })
    let stableValues = Set(stable.map { current[$0] })
    for (index, value) in target.enumerated() where !stableValues.contains(value) {
      // Right after the predecessor, which is stable or placed already.
      let predecessor = index == 0 ? nil : current.firstIndex(of: target[index - 1])
      if let from = current.firstIndex(of: value) {
        var to = predecessor.map { $0 + 1 } ?? 0
        if let predecessor, from <= predecessor { to = predecessor }
        move(from: from, to: to, inList: field, of: key)
        current.remove(at: from)
        current.insert(value, at: to)
      } else {
        let at = predecessor.map { $0 + 1 } ?? 0
        insert(value, at: at, intoList: field, of: key)
        current.insert(value, at: at)
      }
    }
  }
}

extension EntityField {
  /// A tree node's parent (``DocumentForest``): the property reads the parent the forest
  /// resolves, never one that would close a cycle, and `nil` for a root. Assigning it
  /// moves the node (``DocumentTransaction/setParent(_:of:in:)``); a move under the node
  /// itself or one of its descendants is refused and leaves the node where it is.
  ///
  /// Concurrent moves on two devices resolve to one forest on both: the earlier move
  /// stands, and a later one that would close a cycle leaves its node where it was.
  ///
  /// - Complexity: a read is O(1) once the forest is resolved; after a local move the
  ///   forest is brought up to date in O(h + log n) for n writes h deep, after other
  ///   changes as ``Document/forest(of:)`` says; a write is O(1) plus that update.
  @inlinable
  public static func parent(
    _ name: String, _ keyPath: WritableKeyPath<Model, EntityKey?> & Sendable
  ) -> EntityField {
    let property = ModelProperty(keyPath)
    return EntityField(
      name: name, kind: .parent, keyPath: keyPath,
      read: { model, stored in property.set(stored.parentKey, in: &model) },
      write: { old, new, creating, transaction, key in
        let after = property.get(from: new)
        // A new node without a parent is a root already; it writes nothing.
        guard creating ? after != nil : after != property.get(from: old) else { return }
        transaction.setParent(after, of: key, in: name)
      })
  }
}
