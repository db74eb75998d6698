import ConvergeCore

extension RGA {
  /// Calls `body` with the id and visible position of each visible item, in order: a
  /// movable list's slots (``MovableList``) are the items of an RGA.
  ///
  /// - Complexity: O(n) for n items, visible or not.
  package func forEachVisibleItem(_ body: (_ id: Dot, _ position: Int) -> Void) {
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
  package func visiblePosition(of id: Dot) -> Int? {
    guard let found = locate(id), !leaves[found.leaf].runs[found.run].deleted else { return nil }
    return leafOrder.prefix(of: found.leaf).visible &+ found.scalarsBefore &+ found.offset
  }

  /// The id of the visible item at `position`, which must be below ``count``.
  ///
  /// - Complexity: O(log n + r) for r runs in a leaf.
  package func visibleItem(at position: Int) -> Dot {
    let found = locateVisible(position)
    let run = leaves[found.leaf].runs[found.run]
    return Dot(replica: run.replica, counter: run.counter &+ UInt64(found.offset))
  }
}

extension RGA {
  /// Whether the item `id` is here and visible.
  ///
  /// - Complexity: O(log n + r) for r runs in a leaf.
  package func isVisibleItem(_ id: Dot) -> Bool {
    guard let found = locate(id) else { return false }
    return !leaves[found.leaf].runs[found.run].deleted
  }

  /// The delta of inserting `scalar` at visible position `position` (clamped to
  /// `0...count`) with the id `firstDot`, without inserting it: the same run
  /// ``insert(_:at:firstDot:)`` would make and return, which ``apply(_:)`` then places
  /// where the local insert would have (between its origins, which are adjacent). A
  /// movable list plans its edits this way, so that a document applies them in place.
  ///
  /// - Returns: an empty delta if the id is not fresh or the Lamport numbers ran out.
  /// - Complexity: O(log n + r) for r runs in a leaf.
  package func insertDelta(of scalar: Unicode.Scalar, at position: Int, firstDot: Dot) -> RGADelta {
    guard let lamport = nextLamport(for: 1), isFresh(firstDot, length: 1) else {
      return RGADelta()
    }
    let target = Swift.min(Swift.max(position, 0), count)
    var origin: Dot?
    var rightOrigin: Dot?
    if target > 0 {
      let found = locateVisible(target - 1)
      let run = leaves[found.leaf].runs[found.run]
      let left = Dot(replica: run.replica, counter: run.counter &+ UInt64(found.offset))
      origin = left
      rightOrigin =
        found.offset + 1 < run.length
        ? Dot(replica: left.replica, counter: left.counter &+ 1)
        : firstItem(from: found.leaf, slot: found.run + 1)
    } else {
      rightOrigin = firstItem(from: leafOrder.first, slot: 0)
    }
    var delta = RGADelta()
    delta.inserts = [
      RGADelta.Insert(
        id: firstDot, lamport: lamport, origin: origin, rightOrigin: rightOrigin,
        scalars: [scalar])
    ]
    return delta
  }
}
