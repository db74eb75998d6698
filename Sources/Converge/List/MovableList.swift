/// An ordered list of distinct values whose items can be moved, built on the RGA the text
/// uses: the list field behind a board's columns, a pinned order or a checklist.
///
/// ## Semantics
///
/// After Kleppmann, "Moving elements in list CRDTs" (PaPoC 2020). The list's *slots* are
/// the items of an ``RGA`` (one placeholder scalar each), so slots are ordered as text is:
/// FugueMax, with runs inserted at one place by one replica never interleaved with
/// another replica's. Each list item has a last-writer-wins register naming its current
/// slot, and an add-wins presence:
///
/// - inserting an item takes a new slot and points the item's register at it;
/// - moving an item takes a new slot at the destination, points the register at it and
///   deletes the old slot (a tombstone);
/// - removing an item removes the presence events it observed and deletes its slot;
/// - a read walks the visible slots in order and keeps a slot only if it is the current
///   slot of an item that is present.
///
/// So an item moved on two devices at once ends in exactly one place, the move with the
/// later stamp (hybrid logical clock, then replica): the other move's slot is no item's
/// current slot and is skipped. Items are values, compared by value: a list holds each
/// value once, and inserting a value that is already present moves it. An entity's key
/// goes in as a value (its id as a string, say), so a list orders entities that live
/// elsewhere in the document.
///
/// A move is an event of the item, like an entity's edit: a move concurrent with a remove
/// keeps the item (at the moved place), as a concurrent edit keeps a deleted entity
/// alive. A remove removes only what it observed.
///
/// ## Example
///
/// ```swift
/// let a = ReplicaID(rawValue: 1)
/// let b = ReplicaID(rawValue: 2)
/// let a1 = Dot(replica: a, counter: 1)
/// let a2 = Dot(replica: a, counter: 2)
/// let a3 = Dot(replica: a, counter: 3)
/// let b1 = Dot(replica: b, counter: 1)
/// let (early, late) = (Timestamp(rawValue: 1), Timestamp(rawValue: 2))
/// var phone = MovableList()
/// var base = phone.insert(.string("A"), at: 0, firstDot: a1, timestamp: early)
/// base.merge(phone.insert(.string("B"), at: 1, firstDot: a2, timestamp: early))
/// var laptop = MovableList()
/// laptop.apply(base)
/// // Both devices move "A" to the end at once, the laptop a moment later.
/// let onPhone = phone.move(from: 0, to: 1, firstDot: a3, timestamp: early)
/// let onLaptop = laptop.move(from: 0, to: 1, firstDot: b1, timestamp: late)
/// phone.apply(onLaptop)
/// laptop.apply(onPhone)
/// // Both read ["B", "A"]: "A" once, in the slot of the later move.
/// ```
///
/// ## Complexity
///
/// With n items shown, s slots (tombstones included) and k items ever inserted: reading
/// the list is O(s + k); a local insert, remove or move O(s + k) to map list indices to
/// slots, plus O(log s) in the sequence; applying a delta O(d log s) for d slots and
/// items in it. A move leaves one tombstone slot (a few bytes once its run is encoded).
public struct MovableList: Sendable, Equatable {
  /// The slots, one placeholder scalar each; an item's current slot is visible.
  var slots = RGA()
  /// Every item ever inserted, with its current slot and its presence.
  var items: [FieldValue: MovableListItem] = [:]

  /// The empty list.
  public init() {}

  /// The placeholder scalar of a slot (its content is never read): one byte of UTF-8,
  /// so a slot's content costs a byte on the wire.
  static let slotScalar: Unicode.Scalar = "\u{1F}"

  /// The items in order.
  ///
  /// - Complexity: O(s + k) for s slots and k items ever inserted.
  public var values: [FieldValue] { shownSlots().map(\.item) }

  /// The number of items shown.
  ///
  /// - Complexity: O(s + k).
  public var count: Int { shownSlots().count }

  /// Whether the list shows no item.
  public var isEmpty: Bool { count == 0 }

  /// The index of `value` in the list, or `nil` if it is not in it.
  ///
  /// - Complexity: O(s + k).
  public func index(of value: FieldValue) -> Int? {
    shownSlots().firstIndex { $0.item == value }
  }

  /// Whether `value` is in the list.
  ///
  /// - Complexity: O(log s + r) for r replicas that touched the item.
  public func contains(_ value: FieldValue) -> Bool {
    guard let item = items[value], item.presence.isPresent, let slot = item.position.value
    else { return false }
    return slots.visiblePosition(of: slot) != nil
  }

  /// Whether parts of received deltas wait for slots that have not arrived yet.
  var hasPending: Bool { slots.hasPending }

  /// The number of slots and slot deletes that wait for missing events.
  ///
  /// - Complexity: O(p) for p waiting runs.
  public var pendingCount: Int { slots.pendingCount }

  /// One shown item: its slot, its value and the slot's position among visible slots.
  struct ShownSlot {
    var slot: Dot
    var item: FieldValue
    var slotPosition: Int
  }

  /// The current slot of every present item, keyed by slot.
  func currentSlots() -> [Dot: FieldValue] {
    var current: [Dot: FieldValue] = [:]
    current.reserveCapacity(items.count)
    for (value, item) in items where item.presence.isPresent {
      if let slot = item.position.value { current[slot] = value }
    }
    return current
  }

  /// The visible slots that hold the current slot of a present item, in order.
  func shownSlots() -> [ShownSlot] {
    let current = currentSlots()
    var shown: [ShownSlot] = []
    shown.reserveCapacity(current.count)
    slots.forEachVisibleItem { slot, position in
      if let item = current[slot] {
        shown.append(ShownSlot(slot: slot, item: item, slotPosition: position))
      }
    }
    return shown
  }
}

/// One item of a ``MovableList``: the register naming its current slot and its presence.
struct MovableListItem: Sendable, Equatable {
  /// The item's current slot (written by its insert and each move).
  var position = LWWRegister<Dot>()
  /// Add-wins presence: each insert and move adds, a remove removes what it observed.
  var presence = Presence()

  mutating func merge(_ other: MovableListItem) {
    position.merge(other.position)
    presence.merge(other.presence)
  }

  /// Whether a peer whose gap-free prefix is `prefix` and whose context is `known` may
  /// lack an event of the item.
  func mayHaveEvents(unknownTo prefix: VersionVector, known: CausalContext) -> Bool {
    presence.mayHaveEvents(unknownTo: prefix) || !position.delta(since: known).isEmpty
  }
}

extension MovableList: Mergeable {
  /// Joins another replica's list into this one.
  ///
  /// - Complexity: O(s + k) for the slots and items of both lists.
  public mutating func merge(_ other: MovableList) {
    slots.merge(other.slots)
    for (value, item) in other.items { items[value, default: MovableListItem()].merge(item) }
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
  }

  /// Checks the list's invariants: those of its sequence, and every item's register names
  /// a slot made by the item's own events (an insert or move adds the slot's dot).
  public func _checkInvariants() {
    slots._checkInvariants()
    for (value, item) in items {
      guard let slot = item.position.value else { continue }
      precondition(
        item.position.stamp?.dot == slot, "item \(value)'s slot is not its write's event")
    }
  }
}
