extension MovableList {
  /// Inserts `value` at `index` (clamped to `0...count`) with the event `firstDot`, or
  /// moves it there if the list holds it already (then with the events `firstDot` and
  /// the next counter of its replica, as ``move(from:to:firstDot:timestamp:)``).
  ///
  /// The caller allocates the dots (the document layer takes them from its causal
  /// context) and the timestamp (from its hybrid logical clock).
  ///
  /// - Returns: the delta to send to other replicas.
  /// - Complexity: O(s + k) for s slots and k items ever inserted.
  @discardableResult
  public mutating func insert(
    _ value: FieldValue, at index: Int, firstDot: Dot, timestamp: Timestamp
  ) -> MovableListDelta {
    let shown = shownSlots()
    if let from = shown.firstIndex(where: { $0.item == value }) {
      return move(from: from, to: index, firstDot: firstDot, timestamp: timestamp)
    }
    let target = Swift.max(0, Swift.min(index, shown.count))
    return placeSlot(of: value, before: target, in: shown, dot: firstDot, timestamp: timestamp)
  }

  /// Moves the item at `from` so that it ends at index `to` (clamped to the list), with
  /// the events `firstDot` (its new slot) and the next counter (the delete of its old
  /// slot). A move to where the item is changes nothing.
  ///
  /// - Returns: the delta to send to other replicas (empty if nothing moved).
  /// - Complexity: O(s + k).
  @discardableResult
  public mutating func move(from: Int, to: Int, firstDot: Dot, timestamp: Timestamp)
    -> MovableListDelta
  {
    var shown = shownSlots()
    guard shown.indices.contains(from) else { return MovableListDelta() }
    let target = Swift.max(0, Swift.min(to, shown.count - 1))
    guard target != from, let deleteDot = firstDot.next else { return MovableListDelta() }
    let moving = shown.remove(at: from)
    var delta = placeSlot(
      of: moving.item, before: target, in: shown, dot: firstDot, timestamp: timestamp)
    guard !delta.isEmpty else { return delta }
    delta.slots = delta.slots.merged(with: deleteSlot(moving.slot, dot: deleteDot))
    return delta
  }

  /// Removes the item at `index` with the events `firstDot` (the removal) and the next
  /// counter (the delete of its slot): exactly the events of the item this list has seen,
  /// so a move or insert of it made concurrently elsewhere keeps it.
  ///
  /// - Returns: the delta to send (empty if `index` is out of range).
  /// - Complexity: O(s + k).
  @discardableResult
  public mutating func remove(at index: Int, firstDot: Dot) -> MovableListDelta {
    let shown = shownSlots()
    guard shown.indices.contains(index), let deleteDot = firstDot.next,
      let observed = items[shown[index].item]
    else { return MovableListDelta() }
    let removal = Presence.remove(observing: observed.presence, dot: firstDot)
    items[shown[index].item, default: MovableListItem()].presence.merge(removal)
    var change = MovableListItem()
    change.presence = removal
    return MovableListDelta(
      slots: deleteSlot(shown[index].slot, dot: deleteDot), items: [shown[index].item: change])
  }

  /// Inserts a slot for `value` before the shown item at `index` of `shown` (after the
  /// last one for `shown.count`) with the id `dot`, and points the item at it.
  private mutating func placeSlot(
    of value: FieldValue, before index: Int, in shown: [ShownSlot], dot: Dot,
    timestamp: Timestamp
  ) -> MovableListDelta {
    let position: Int
    if index < shown.count {
      position = shown[index].slotPosition
    } else {
      position = shown.last.map { $0.slotPosition + 1 } ?? 0
    }
    let slotDelta = slots.insert(CollectionOfOne(Self.slotScalar), at: position, firstDot: dot)
    guard !slotDelta.isEmpty else { return MovableListDelta() }
    var change = MovableListItem()
    change.position.set(dot, stamp: .init(timestamp: timestamp, dot: dot))
    change.presence = .add(dot)
    items[value, default: MovableListItem()].merge(change)
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return MovableListDelta(slots: slotDelta, items: [value: change])
  }

  /// Deletes the visible slot `slot` with the delete event `dot`.
  private mutating func deleteSlot(_ slot: Dot, dot: Dot) -> RGADelta {
    guard let position = slots.visiblePosition(of: slot) else { return RGADelta() }
    return slots.delete(position..<position + 1, firstDot: dot)
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
