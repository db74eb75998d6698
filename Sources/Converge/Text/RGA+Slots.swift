extension RGA {
  /// Calls `body` with the id and visible position of each visible item, in order: a
  /// movable list's slots (``MovableList``) are the items of an RGA.
  ///
  /// - Complexity: O(n) for n items, visible or not.
  func forEachVisibleItem(_ body: (_ id: Dot, _ position: Int) -> Void) {
    var position = 0
    for leafID in leafOrder.documentOrder {
      for run in leaves[leafID].runs where !run.deleted {
        for offset in 0..<run.length {
          body(Dot(replica: run.replica, counter: run.counter &+ UInt64(offset)), position)
          position &+= 1
        }
      }
    }
  }

  /// The visible position of the item `id`, or `nil` if it is deleted or not here.
  ///
  /// - Complexity: O(log n + r) for r runs in a leaf.
  func visiblePosition(of id: Dot) -> Int? {
    guard let found = locate(id), !leaves[found.leaf].runs[found.run].deleted else { return nil }
    return leafOrder.prefix(of: found.leaf).visible &+ found.scalarsBefore &+ found.offset
  }

  /// The id of the visible item at `position`, which must be below ``count``.
  ///
  /// - Complexity: O(log n + r) for r runs in a leaf.
  func visibleItem(at position: Int) -> Dot {
    let found = locateVisible(position)
    let run = leaves[found.leaf].runs[found.run]
    return Dot(replica: run.replica, counter: run.counter &+ UInt64(found.offset))
  }
}
