/// What one ``MovableList`` sends another: the slots' sequence delta and the items whose
/// register or presence changed.
///
/// Deltas are idempotent and commute, as the text's do; ``merged(with:)`` joins them, so
/// that applying the join equals applying both.
public struct MovableListDelta: Sendable, Equatable {
  /// Slots inserted and deleted.
  package var slots = RGADelta()
  /// Items whose register or presence the delta carries.
  package var items: [FieldValue: MovableListItem] = [:]

  /// The empty delta.
  public init() {}

  package init(slots: RGADelta, items: [FieldValue: MovableListItem]) {
    self.slots = slots
    self.items = items
  }

  /// Whether the delta carries nothing.
  public var isEmpty: Bool { slots.isEmpty && items.isEmpty }

  /// Joins another delta into this one.
  ///
  /// - Complexity: O(d) for d slots and items in both.
  public mutating func merge(_ other: MovableListDelta) {
    slots = slots.merged(with: other.slots)
    for (value, item) in other.items { items[value, default: MovableListItem()].merge(item) }
  }

  /// The join of the two deltas.
  public func merged(with other: MovableListDelta) -> MovableListDelta {
    var result = self
    result.merge(other)
    return result
  }
}

extension MovableList {
  /// Integrates a delta from this or another replica; returns whether the list's
  /// items or their order may have changed.
  ///
  /// Slots whose origins have not arrived wait in the sequence; an item whose slot has
  /// not arrived is not shown until it does.
  ///
  /// - Complexity: O((d + m) log s) for d slots and items in the delta and m orphaned
  ///   slots; O(s + k) when slots waited for missing events before (some may arrive now).
  @discardableResult
  public mutating func apply(_ delta: MovableListDelta) -> Bool {
    applyReportingChanges(delta).changed
  }

  /// ``apply(_:)``, also returning how the list's items changed, as ``ListChange``s in
  /// the order ``ListChange`` describes: an item the delta gave a new slot is reported
  /// moved (even if no other item passed it), one it showed or hid inserted or removed.
  ///
  /// Only the items the delta names or whose slots it touches can change, so only those
  /// are looked at; when slots waited for missing events (some of which may arrive now)
  /// or the delta is too large to look at item by item, the lists before and after are
  /// compared instead (``ListChange/changes(from:to:)``).
  ///
  /// - Complexity: as ``apply(_:)``.
  mutating func applyReportingChanges(_ delta: MovableListDelta) -> (
    changed: Bool, changes: [ListChange]
  ) {
    guard !hasSharedSlot, !slots.hasPending, let touched = touchedSlots(of: delta),
      sharesNoSlot(delta)
    else { return applyComparingLists(delta) }
    // The items that may move, show or hide: those the delta names, and those whose
    // current slot it inserts or deletes.
    var affected = Set(delta.items.keys)
    for slot in touched {
      if let value = shownItem[slot] { affected.insert(value) }
    }
    let before = places(of: affected)
    let slotChanges = slots.apply(delta.slots)
    var changed = !slotChanges.isEmpty
    var refresh = touched
    for (value, incoming) in delta.items {
      let old = items[value]
      var item = old ?? MovableListItem()
      item.merge(incoming)
      guard item != old else { continue }
      items[value] = item
      changed = true
      let (oldSlot, newSlot) = (old?.currentSlot, item.currentSlot)
      guard oldSlot != newSlot else { continue }
      if let oldSlot {
        shownItem[oldSlot] = nil
        refresh.append(oldSlot)
      }
      if let newSlot {
        shownItem[newSlot] = value
        refresh.append(newSlot)
      }
    }
    for slot in refresh { refreshOrphan(slot) }
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    guard changed else { return (false, []) }
    return (true, ListChange.changes(from: before, to: places(of: affected)))
  }

  /// ``applyReportingChanges(_:)`` by reading the list before and after.
  ///
  /// - Complexity: O(s + k + d log s).
  private mutating func applyComparingLists(_ delta: MovableListDelta) -> (
    changed: Bool, changes: [ListChange]
  ) {
    let before = values
    let slotChanges = slots.apply(delta.slots)
    var changed = !slotChanges.isEmpty
    for (value, incoming) in delta.items {
      let old = items[value]
      var item = old ?? MovableListItem()
      item.merge(incoming)
      if item != old {
        items[value] = item
        changed = true
      }
    }
    rebuildShown()
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    guard changed else { return (false, []) }
    return (true, ListChange.changes(from: before, to: values))
  }

  /// The most slot ids a delta may touch to be applied item by item.
  static let touchedSlotLimit: UInt64 = 1 << 16

  /// The ids of the slots `delta` inserts or deletes, or `nil` if there are more than
  /// ``touchedSlotLimit`` (a run without content may name 2^62 ids).
  private func touchedSlots(of delta: MovableListDelta) -> [Dot]? {
    var total: UInt64 = 0
    for insert in delta.slots.inserts {
      total += UInt64(Swift.min(insert.length, Int(Self.touchedSlotLimit) + 1))
      guard total <= Self.touchedSlotLimit else { return nil }
    }
    for delete in delta.slots.deletes {
      total += Swift.min(delete.count, Self.touchedSlotLimit + 1)
      guard total <= Self.touchedSlotLimit else { return nil }
    }
    var touched: [Dot] = []
    touched.reserveCapacity(Int(total))
    for insert in delta.slots.inserts {
      for offset in 0..<insert.length {
        let (counter, overflow) = insert.id.counter.addingReportingOverflow(UInt64(offset))
        guard !overflow else { break }
        touched.append(Dot(replica: insert.id.replica, counter: counter))
      }
    }
    for delete in delta.slots.deletes where delete.isWellFormed {
      for offset in 0..<delete.count {
        touched.append(Dot(replica: delete.target.replica, counter: delete.target(at: offset)))
      }
    }
    return touched
  }

  /// Whether no slot the delta's items name is another item's current slot, nor named by
  /// two of its items: otherwise the derived maps are rebuilt.
  private func sharesNoSlot(_ delta: MovableListDelta) -> Bool {
    var named: Set<Dot> = []
    for (value, item) in delta.items {
      guard let slot = item.position.value else { continue }
      if let holder = shownItem[slot], holder != value { return false }
      guard named.insert(slot).inserted else { return false }
    }
    return true
  }

  /// The places of the shown items among `values`.
  ///
  /// - Complexity: O((v + m) log s) for v values and m orphaned slots.
  private func places(of values: Set<FieldValue>) -> [FieldValue: Place] {
    let orphans = orphanPositions()
    var places: [FieldValue: Place] = [:]
    places.reserveCapacity(values.count)
    for value in values {
      if let place = place(of: value, in: orphans) { places[value] = place }
    }
    return places
  }

  /// What a replica whose causal context is `known` lacks: the slots and deletes whose
  /// events it lacks, and each item with an event it lacks.
  ///
  /// - Complexity: O(s + k) for s slots and k items.
  public func delta(since known: CausalContext) -> MovableListDelta {
    let prefix = known.versionVector
    var delta = MovableListDelta()
    delta.slots = slots.delta(since: known)
    for (value, item) in items where item.mayHaveEvents(unknownTo: prefix, known: known) {
      // The move only if the peer lacks it: a delta's moves are events of its context.
      var missing = item
      missing.position = item.position.delta(since: known)
      delta.items[value] = missing
    }
    return delta
  }

  /// Whether the list may hold events above `prefix`.
  ///
  /// - Complexity: O(s + k).
  func mayHaveEvents(unknownTo prefix: VersionVector) -> Bool {
    slots.mayHaveEvents(unknownTo: prefix)
      || items.values.contains { item in
        item.presence.mayHaveEvents(unknownTo: prefix)
          || (item.position.stamp.map { prefix[$0.dot.replica] < $0.dot.counter } ?? false)
      }
  }

}
