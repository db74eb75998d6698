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
/// With n items shown, s slots (tombstones included), k items ever inserted and m
/// *orphaned* slots (visible slots that show no item: the losing slots of concurrent
/// moves of one item, zero on a list only one device moved): ``count`` and ``isEmpty``
/// are O(1); ``index(of:)`` and a local insert, remove or move O(log s + m log s) (list
/// indices are visible slot positions, found as text positions are, less the orphans
/// before them); reading ``values`` O(s); applying a delta O((d + m) log s) for d slots
/// and items in it. A move leaves one tombstone slot, about 10 bytes of encoded state
/// (its run's origins and its delete), until a doubly stable cut lets
/// `collectTombstones(stable:)` drop most of them (`MovableList+Stability.swift`).
public struct MovableList: Sendable {
  /// The list's parts behind one reference, copied before a change while shared (as an
  /// array's storage is). Held inline they were 81 bytes, and a document's field state
  /// is as large as its largest kind: every register, set and text field of every
  /// entity took 88 bytes instead of 48 (BENCHMARKS.md, "Resident memory a note back").
  private var storage: Storage

  /// What a list holds; reached through the accessors below.
  private struct Parts {
    var slots = RGA()
    var items: [FieldValue: MovableListItem] = [:]
    var shownItem: [Dot: FieldValue] = [:]
    var orphans: Set<Dot> = []
    var hasSharedSlot = false
  }

  /// `@unchecked Sendable`: `parts` is changed only through a reference known to be
  /// unique (``makeUnique()``), so no two threads ever see one storage change.
  private final class Storage: @unchecked Sendable {
    // Unchecked: reached only through a list's accessors, which take a unique
    // reference first for any change, so no two accesses overlap.
    @exclusivity(unchecked) var parts: Parts

    init(_ parts: Parts) { self.parts = parts }

    /// The storage of every empty list until its first change, which copies it.
    static let empty = Storage(Parts())
  }

  /// Copies the parts first if another list shares them.
  private mutating func makeUnique() {
    if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.parts) }
  }

  /// The slots, one placeholder scalar each; an item's current slot is visible.
  package var slots: RGA {
    _read { yield storage.parts.slots }
    _modify {
      makeUnique()
      yield &storage.parts.slots
    }
  }
  /// Every item ever inserted, with its current slot and its presence.
  package var items: [FieldValue: MovableListItem] {
    _read { yield storage.parts.items }
    _modify {
      makeUnique()
      yield &storage.parts.items
    }
  }
  /// Derived from the two above (not part of the state): the item each slot is the
  /// current slot of, for present items (shown if the slot is visible).
  var shownItem: [Dot: FieldValue] {
    _read { yield storage.parts.shownItem }
    _modify {
      makeUnique()
      yield &storage.parts.shownItem
    }
  }
  /// Derived: the visible slots that are no present item's current slot.
  var orphans: Set<Dot> {
    _read { yield storage.parts.orphans }
    _modify {
      makeUnique()
      yield &storage.parts.orphans
    }
  }
  /// Derived: whether two present items name one slot (only a malformed history makes
  /// that); the smaller value shows, and edits rebuild the derived maps.
  var hasSharedSlot: Bool {
    get { storage.parts.hasSharedSlot }
    set {
      makeUnique()
      storage.parts.hasSharedSlot = newValue
    }
  }

  /// The empty list.
  public init() { storage = Storage.empty }

  /// The list of these slots and items (a decoded state).
  ///
  /// - Complexity: O(s + k).
  package init(slots: RGA, items: [FieldValue: MovableListItem]) {
    storage = Storage(Parts(slots: slots, items: items))
    rebuildShown()
  }

  /// The placeholder scalar of a slot (its content is never read): one byte of UTF-8,
  /// so a slot's content costs a byte on the wire.
  static let slotScalar: Unicode.Scalar = "\u{1F}"

  /// The items in order.
  ///
  /// - Complexity: O(s).
  public var values: [FieldValue] {
    var values: [FieldValue] = []
    values.reserveCapacity(count)
    slots.forEachVisibleItem { slot, _ in
      if let item = shownItem[slot] { values.append(item) }
    }
    return values
  }

  /// The number of items shown.
  ///
  /// - Complexity: O(1).
  public var count: Int { slots.count - orphans.count }

  /// Whether the list shows no item.
  ///
  /// - Complexity: O(1).
  public var isEmpty: Bool { count == 0 }

  /// The index of `value` in the list, or `nil` if it is not in it.
  ///
  /// - Complexity: O(log s + m log s) for m orphaned slots.
  public func index(of value: FieldValue) -> Int? {
    guard let place = place(of: value, in: orphanPositions()) else { return nil }
    return place.index
  }

  /// Whether `value` is in the list.
  ///
  /// - Complexity: O(log s + r) for r runs in a leaf of the slots.
  public func contains(_ value: FieldValue) -> Bool {
    guard let slot = items[value]?.currentSlot, shownItem[slot] == value else { return false }
    return slots.isVisibleItem(slot)
  }

  /// Whether parts of received deltas wait for slots that have not arrived yet.
  var hasPending: Bool { slots.hasPending }

  /// The number of slots and slot deletes that wait for missing events.
  ///
  /// - Complexity: O(p) for p waiting runs.
  public var pendingCount: Int { slots.pendingCount }

  // MARK: Indices

  /// Where a shown item is: its index in the list and its slot.
  struct Place: Equatable {
    var index: Int
    var slot: Dot
  }

  /// The visible positions of the orphaned slots, ascending.
  ///
  /// - Complexity: O(m log s).
  func orphanPositions() -> [Int] {
    guard !orphans.isEmpty else { return [] }
    return orphans.compactMap { slots.visiblePosition(of: $0) }.sorted()
  }

  /// The index and slot of `value` if the list shows it; `orphans` are
  /// ``orphanPositions()``.
  ///
  /// - Complexity: O(log s + log m).
  func place(of value: FieldValue, in orphans: [Int]) -> Place? {
    guard let slot = items[value]?.currentSlot, shownItem[slot] == value,
      let position = slots.visiblePosition(of: slot)
    else { return nil }
    return Place(index: position - Self.countBelow(position, in: orphans), slot: slot)
  }

  /// The visible position of the slot of the item at `index` (below ``count``);
  /// `orphans` are ``orphanPositions()``.
  ///
  /// - Complexity: O(m).
  static func slotPosition(ofIndex index: Int, orphans: [Int]) -> Int {
    var position = index
    for orphan in orphans {
      guard orphan <= position else { break }
      position += 1
    }
    return position
  }

  /// The number of `sorted` values below `bound`.
  static func countBelow(_ bound: Int, in sorted: [Int]) -> Int {
    var low = 0
    var high = sorted.count
    while low < high {
      let middle = (low + high) / 2
      if sorted[middle] < bound { low = middle + 1 } else { high = middle }
    }
    return low
  }

  // MARK: Derived maps

  /// Derives ``shownItem``, ``orphans`` and ``hasSharedSlot`` from the slots and items.
  ///
  /// - Complexity: O(s + k).
  mutating func rebuildShown() {
    var shown: [Dot: FieldValue] = [:]
    shown.reserveCapacity(items.count)
    var shared = false
    for (value, item) in items {
      guard let slot = item.currentSlot else { continue }
      if let other = shown[slot] {
        shared = true
        if value < other { shown[slot] = value }
      } else {
        shown[slot] = value
      }
    }
    var orphans = Set<Dot>()
    slots.forEachVisibleItem { slot, _ in
      if shown[slot] == nil { orphans.insert(slot) }
    }
    shownItem = shown
    self.orphans = orphans
    hasSharedSlot = shared
  }

  /// Notes whether the slot `slot` is now an orphan.
  mutating func refreshOrphan(_ slot: Dot) {
    if shownItem[slot] == nil, slots.isVisibleItem(slot) {
      orphans.insert(slot)
    } else {
      orphans.remove(slot)
    }
  }
}

extension MovableList: Equatable {
  /// Lists are equal when their slots and items are (the derived maps follow).
  public static func == (lhs: MovableList, rhs: MovableList) -> Bool {
    lhs.storage === rhs.storage || (lhs.slots == rhs.slots && lhs.items == rhs.items)
  }
}

/// One item of a ``MovableList``: the register naming its current slot and its presence.
package struct MovableListItem: Sendable, Equatable {
  /// The item's current slot (written by its insert and each move).
  package var position = LWWRegister<Dot>()
  /// Add-wins presence: each insert and move adds, a remove removes what it observed.
  package var presence = Presence()

  package init(position: LWWRegister<Dot> = LWWRegister(), presence: Presence = Presence()) {
    self.position = position
    self.presence = presence
  }

  mutating func merge(_ other: MovableListItem) {
    position.merge(other.position)
    presence.merge(other.presence)
  }

  /// The item's current slot if it is present.
  var currentSlot: Dot? { presence.isPresent ? position.value : nil }

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
    rebuildShown()
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
  }

  /// Checks the list's invariants: those of its sequence, every item's register names
  /// a slot made by the item's own events (an insert or move adds the slot's dot), and
  /// the derived maps are what the slots and items give.
  public func _checkInvariants() {
    slots._checkInvariants()
    var rebuilt = self
    rebuilt.rebuildShown()
    precondition(rebuilt.shownItem == shownItem, "the slots' items drifted")
    precondition(rebuilt.orphans == orphans, "the orphaned slots drifted")
    precondition(rebuilt.hasSharedSlot == hasSharedSlot, "the shared-slot flag drifted")
    for (value, item) in items {
      guard let slot = item.position.value else { continue }
      precondition(
        item.position.stamp?.dot == slot, "item \(value)'s slot is not its write's event")
    }
  }
}
