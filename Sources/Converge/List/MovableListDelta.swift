/// What one ``MovableList`` sends another: the slots' sequence delta and the items whose
/// register or presence changed.
///
/// Deltas are idempotent and commute, as the text's do; ``merged(with:)`` joins them, so
/// that applying the join equals applying both.
public struct MovableListDelta: Sendable, Equatable {
  /// Slots inserted and deleted.
  var slots = RGADelta()
  /// Items whose register or presence the delta carries.
  var items: [FieldValue: MovableListItem] = [:]

  /// The empty delta.
  public init() {}

  init(slots: RGADelta, items: [FieldValue: MovableListItem]) {
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
  /// - Complexity: O(d log s) for d slots and items in the delta.
  @discardableResult
  public mutating func apply(_ delta: MovableListDelta) -> Bool {
    let slotChanges = slots.apply(delta.slots)
    var changed = !slotChanges.isEmpty
    for (value, incoming) in delta.items {
      let before = items[value]
      var item = before ?? MovableListItem()
      item.merge(incoming)
      if item != before {
        items[value] = item
        changed = true
      }
    }
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return changed
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
