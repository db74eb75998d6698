/// A document's entities: keys and records in two dense arrays, in the order the
/// entities arrived, and an open-addressed index from a key to its position.
///
/// A document never removes an entity (a delete is a presence, see ``Presence``), so a
/// position is stable for the document's life and other structures (``EventIndex``)
/// refer to an entity by it, in four bytes instead of a key's forty.
///
/// Memory is why this is not a `Dictionary`: at 50,000 entities a dictionary's buckets
/// (key and record, 80 bytes) doubled past 49,152 to 131,072, about 210 bytes an
/// entity; here the arrays take 80 bytes a position at most twice over and the index
/// four bytes a slot.
///
/// - Complexity: lookup and insertion O(1) expected; iteration in arrival order.
struct EntityTable: Sendable, Sequence {
  /// The keys, by position.
  private(set) var keys: [EntityKey] = []
  /// The records, by position (`keys`' order); edited in place at a position from
  /// ``index(forKey:)`` or ``insertIfAbsent(_:)``.
  var values: [EntityRecord] = []
  /// Position + 1 of the entity hashed there, or 0 for an empty slot; linear probing.
  /// The count is a power of two at least 4/3 of the entities', or zero.
  private var slots: [UInt32] = []

  init() {}

  var count: Int { keys.count }
  var isEmpty: Bool { keys.isEmpty }

  /// Makes room for `capacity` entities, as a decoder that knows their count does.
  mutating func reserveCapacity(_ capacity: Int) {
    keys.reserveCapacity(capacity)
    values.reserveCapacity(capacity)
    let needed = Self.slotCount(for: capacity)
    if needed > slots.count { rehash(slotCount: needed) }
  }

  /// The position of `key`, if the table holds it.
  func index(forKey key: EntityKey) -> Int? {
    guard !slots.isEmpty else { return nil }
    let mask = slots.count - 1
    var slot = key.hashCode & mask
    while true {
      let stored = Int(slots[slot])
      if stored == 0 { return nil }
      if keys[stored - 1] == key { return stored - 1 }
      slot = (slot + 1) & mask
    }
  }

  /// The record of `key`, if the table holds it.
  subscript(key: EntityKey) -> EntityRecord? {
    index(forKey: key).map { values[$0] }
  }

  /// The position of `key`, adding it with an empty record if the table lacks it.
  mutating func insertIfAbsent(_ key: EntityKey) -> Int {
    if let position = index(forKey: key) { return position }
    append(key, EntityRecord())
    return keys.count - 1
  }

  /// Adds `key`, which the table must not hold, with `record`.
  mutating func append(_ key: EntityKey, _ record: EntityRecord) {
    assert(index(forKey: key) == nil, "\(key) is in the table already")
    // Positions are four bytes: 2^32 entities would need at least 20 GiB of state.
    precondition(keys.count < UInt32.max, "a document holds fewer than 2^32 entities")
    let needed = Self.slotCount(for: keys.count + 1)
    if needed > slots.count { rehash(slotCount: needed) }
    keys.append(key)
    values.append(record)
    place(keys.count - 1)
  }

  /// The smallest power of two that holds `count` entities at most 3/4 full.
  private static func slotCount(for count: Int) -> Int {
    guard count > 0 else { return 0 }
    var slots = 8
    while slots / 4 * 3 < count { slots *= 2 }
    return slots
  }

  private mutating func rehash(slotCount: Int) {
    slots = Array(repeating: 0, count: slotCount)
    for position in keys.indices { place(position) }
  }

  /// Puts the entity at `position` into the first empty slot from its key's hash.
  private mutating func place(_ position: Int) {
    let mask = slots.count - 1
    var slot = keys[position].hashCode & mask
    while slots[slot] != 0 { slot = (slot + 1) & mask }
    slots[slot] = UInt32(truncatingIfNeeded: position + 1)
  }

  /// Traps unless every key is found at its own position and each position fills one
  /// slot.
  func _checkInvariants() {
    precondition(keys.count == values.count, "\(keys.count) keys for \(values.count) records")
    precondition(slots.count >= Self.slotCount(for: keys.count), "the slots are too few")
    precondition(slots.count(where: { $0 != 0 }) == keys.count, "slots and positions differ")
    for position in keys.indices {
      precondition(index(forKey: keys[position]) == position, "\(keys[position]) is misplaced")
    }
  }

  func makeIterator() -> Zip2Sequence<[EntityKey], [EntityRecord]>.Iterator {
    zip(keys, values).makeIterator()
  }
}

extension EntityTable: Equatable {
  /// Equal when they hold the same keys with equal records, in whatever order.
  static func == (lhs: EntityTable, rhs: EntityTable) -> Bool {
    guard lhs.count == rhs.count else { return false }
    for (position, key) in lhs.keys.enumerated() {
      guard let other = rhs.index(forKey: key), rhs.values[other] == lhs.values[position] else {
        return false
      }
    }
    return true
  }
}
