extension MovableList {
  /// Inserts `value` at `index` (clamped to `0...count`) with the event `firstDot`, or
  /// moves it there if the list holds it already (then with the events `firstDot` and
  /// the next counter of its replica, as ``move(from:to:firstDot:timestamp:)``).
  ///
  /// The caller allocates the dots (the document layer takes them from its causal
  /// context) and the timestamp (from its hybrid logical clock).
  ///
  /// - Returns: the delta to send to other replicas.
  /// - Complexity: O(log s + m log s) for s slots and m orphaned slots.
  @discardableResult
  public mutating func insert(
    _ value: FieldValue, at index: Int, firstDot: Dot, timestamp: Timestamp
  ) -> MovableListDelta {
    applyLocal(insertDelta(value, at: index, firstDot: firstDot, timestamp: timestamp))
  }

  /// Moves the item at `from` so that it ends at index `to` (clamped to the list), with
  /// the events `firstDot` (its new slot) and the next counter (the delete of its old
  /// slot). A move to where the item is changes nothing.
  ///
  /// - Returns: the delta to send to other replicas (empty if nothing moved).
  /// - Complexity: O(log s + m log s).
  @discardableResult
  public mutating func move(from: Int, to: Int, firstDot: Dot, timestamp: Timestamp)
    -> MovableListDelta
  {
    applyLocal(moveDelta(from: from, to: to, firstDot: firstDot, timestamp: timestamp))
  }

  /// Removes the item at `index` with the events `firstDot` (the removal) and the next
  /// counter (the delete of its slot): exactly the events of the item this list has seen,
  /// so a move or insert of it made concurrently elsewhere keeps it.
  ///
  /// - Returns: the delta to send (empty if `index` is out of range).
  /// - Complexity: O(log s + m log s).
  @discardableResult
  public mutating func remove(at index: Int, firstDot: Dot) -> MovableListDelta {
    applyLocal(removeDelta(at: index, firstDot: firstDot))
  }

  /// Applies a delta this list planned and returns it.
  private mutating func applyLocal(_ delta: MovableListDelta) -> MovableListDelta {
    if !delta.isEmpty { apply(delta) }
    return delta
  }

  // MARK: Planning

  // A local edit is planned on the list as it is, without changing it, and then applied
  // as any delta is: one write path, and a document applies the edit to its own list in
  // place instead of editing a copy.

  /// The delta of ``insert(_:at:firstDot:timestamp:)``, which this list is left without.
  ///
  /// - Complexity: O(log s + m log s).
  func insertDelta(_ value: FieldValue, at index: Int, firstDot: Dot, timestamp: Timestamp)
    -> MovableListDelta
  {
    let orphans = orphanPositions()
    if let place = place(of: value, in: orphans) {
      return moveDelta(
        from: place, to: index, orphans: orphans, firstDot: firstDot, timestamp: timestamp)
    }
    let count = count
    let target = Swift.max(0, Swift.min(index, count))
    let position =
      target < count
      ? Self.slotPosition(ofIndex: target, orphans: orphans)
      : (count == 0 ? 0 : Self.slotPosition(ofIndex: count - 1, orphans: orphans) + 1)
    return placeSlot(of: value, at: position, dot: firstDot, timestamp: timestamp)
  }

  /// The delta of ``move(from:to:firstDot:timestamp:)``, which this list is left without.
  ///
  /// - Complexity: O(log s + m log s).
  func moveDelta(from: Int, to: Int, firstDot: Dot, timestamp: Timestamp) -> MovableListDelta {
    guard (0..<count).contains(from) else { return MovableListDelta() }
    let orphans = orphanPositions()
    let position = Self.slotPosition(ofIndex: from, orphans: orphans)
    let slot = slots.visibleItem(at: position)
    return moveDelta(
      from: Place(index: from, slot: slot), to: to, orphans: orphans, firstDot: firstDot,
      timestamp: timestamp)
  }

  /// The delta of moving the item at `place` so that it ends at index `to` (clamped).
  private func moveDelta(
    from place: Place, to: Int, orphans: [Int], firstDot: Dot, timestamp: Timestamp
  ) -> MovableListDelta {
    let count = count
    let target = Swift.max(0, Swift.min(to, count - 1))
    guard target != place.index, let deleteDot = firstDot.next,
      let value = shownItem[place.slot]
    else { return MovableListDelta() }
    // `target` counts the list without the item: before the item it is the same index,
    // after it one more; the end is right after the last item.
    let position =
      target == count - 1
      ? Self.slotPosition(ofIndex: count - 1, orphans: orphans) + 1
      : Self.slotPosition(ofIndex: target < place.index ? target : target + 1, orphans: orphans)
    var delta = placeSlot(of: value, at: position, dot: firstDot, timestamp: timestamp)
    guard !delta.isEmpty else { return delta }
    delta.slots = delta.slots.merged(with: Self.deleteSlot(place.slot, dot: deleteDot))
    return delta
  }

  /// The delta of ``remove(at:firstDot:)``, which this list is left without.
  ///
  /// - Complexity: O(log s + m log s).
  func removeDelta(at index: Int, firstDot: Dot) -> MovableListDelta {
    guard (0..<count).contains(index), let deleteDot = firstDot.next else {
      return MovableListDelta()
    }
    let position = Self.slotPosition(ofIndex: index, orphans: orphanPositions())
    let slot = slots.visibleItem(at: position)
    guard let value = shownItem[slot], let observed = items[value] else {
      return MovableListDelta()
    }
    var change = MovableListItem()
    change.presence = Presence.remove(observing: observed.presence, dot: firstDot)
    return MovableListDelta(slots: Self.deleteSlot(slot, dot: deleteDot), items: [value: change])
  }

  /// The delta of a new slot for `value` at visible slot position `position`, with the id
  /// `dot`, and of pointing the item at it.
  private func placeSlot(of value: FieldValue, at position: Int, dot: Dot, timestamp: Timestamp)
    -> MovableListDelta
  {
    let slotDelta = slots.insertDelta(of: Self.slotScalar, at: position, firstDot: dot)
    guard !slotDelta.isEmpty else { return MovableListDelta() }
    var change = MovableListItem()
    change.position.set(dot, stamp: .init(timestamp: timestamp, dot: dot))
    change.presence = .add(dot)
    return MovableListDelta(slots: slotDelta, items: [value: change])
  }

  /// The delta of deleting the visible slot `slot` with the delete event `dot`.
  private static func deleteSlot(_ slot: Dot, dot: Dot) -> RGADelta {
    var delta = RGADelta()
    delta.deletes = [RGADelta.Delete(dot: dot, target: slot, count: 1, isDescending: false)]
    return delta
  }
}

extension Dot {
  /// The next event of the same replica, or `nil` if the counter would overflow.
  var next: Dot? {
    let (counter, overflow) = self.counter.addingReportingOverflow(1)
    return overflow ? nil : Dot(replica: replica, counter: counter)
  }
}

/// A change of a list's items, as ``DocumentChanges`` reports them for a list field, so a
/// view can animate it (`onMove`, a board's card sliding to its new column slot).
///
/// Indices count as `CollectionDifference` counts them, and the changes come in its
/// order (removals and moves from the last, then insertions from the first): a removal's
/// and a move's `from` in the list before the changes, an insertion's and a move's `to`
/// in the list after them.
public enum ListChange: Sendable, Equatable {
  case insert(FieldValue, at: Int)
  case remove(FieldValue, at: Int)
  case move(FieldValue, from: Int, to: Int)

  /// The changes that turn `before` into `after`, lists of distinct items: the items
  /// outside a longest run that keeps its order in both are reported as moved (so one
  /// dragged card is one move, however far), the others that only one list holds as
  /// removed or inserted.
  ///
  /// - Complexity: O((n + m) log (n + m)) for lists of n and m items.
  public static func changes(from before: [FieldValue], to after: [FieldValue]) -> [ListChange] {
    guard before != after else { return [] }
    var afterIndex: [FieldValue: Int] = [:]
    afterIndex.reserveCapacity(after.count)
    for (index, value) in after.enumerated() { afterIndex[value] = index }
    var beforeIndex: [FieldValue: Int] = [:]
    beforeIndex.reserveCapacity(before.count)
    for (index, value) in before.enumerated() { beforeIndex[value] = index }
    // The kept items, in `before`'s order, and where each is in `after`.
    let kept = before.indices.filter { afterIndex[before[$0]] != nil }
    let stable = Set(
      longestIncreasingRun(kept.map { afterIndex[before[$0]] ?? 0 }).map { kept[$0] })
    var removals: [ListChange] = []
    for index in before.indices.reversed() where !stable.contains(index) {
      let value = before[index]
      if let to = afterIndex[value] {
        removals.append(.move(value, from: index, to: to))
      } else {
        removals.append(.remove(value, at: index))
      }
    }
    let insertions = after.indices.compactMap { index in
      beforeIndex[after[index]] == nil ? ListChange.insert(after[index], at: index) : nil
    }
    return removals + insertions
  }

  /// The changes of the items whose places (index and slot) were `before` and are
  /// `after`, every other item keeping its slot: an item in both with another slot is
  /// moved, one only in `before` removed, one only in `after` inserted. The items that
  /// keep their slots keep their order (slots never change theirs), so the changes turn
  /// the list before into the list after.
  ///
  /// - Complexity: O(a log a) for a items in `before` and `after`.
  static func changes(
    from before: [FieldValue: MovableList.Place], to after: [FieldValue: MovableList.Place]
  ) -> [ListChange] {
    var removals: [(index: Int, change: ListChange)] = []
    var insertions: [(index: Int, change: ListChange)] = []
    for (value, old) in before {
      if let new = after[value] {
        if new.slot != old.slot {
          removals.append((old.index, .move(value, from: old.index, to: new.index)))
        }
      } else {
        removals.append((old.index, .remove(value, at: old.index)))
      }
    }
    for (value, new) in after where before[value] == nil {
      insertions.append((new.index, .insert(value, at: new.index)))
    }
    removals.sort { $0.index > $1.index }
    insertions.sort { $0.index < $1.index }
    return removals.map(\.change) + insertions.map(\.change)
  }

  /// The positions of a longest strictly increasing subsequence of `values`.
  ///
  /// - Complexity: O(n log n).
  static func longestIncreasingRun(_ values: [Int]) -> [Int] {
    // tails[l]: the position of the smallest last value of an increasing run of l + 1.
    var tails: [Int] = []
    var previous = [Int](repeating: -1, count: values.count)
    for (position, value) in values.enumerated() {
      var low = 0
      var high = tails.count
      while low < high {
        let middle = (low + high) / 2
        if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
      }
      if low > 0 { previous[position] = tails[low - 1] }
      if low == tails.count { tails.append(position) } else { tails[low] = position }
    }
    var run: [Int] = []
    var position = tails.last ?? -1
    while position >= 0 {
      run.append(position)
      position = previous[position]
    }
    return run.reversed()
  }
}
