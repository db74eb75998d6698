/// A document's entities: their keys (a type code, the id and the key's hash) and
/// records in dense arrays, in the order the entities arrived, and an open-addressed
/// index from a key to its position.
///
/// A document never removes an entity (a delete is a presence, see ``Presence``), so a
/// position is stable for the document's life and other structures (``EventIndex``)
/// refer to an entity by it, in four bytes instead of a key's forty.
///
/// Memory is why this is not a `Dictionary`: at 50,000 entities a dictionary's buckets
/// (key and record, 80 bytes) doubled past 49,152 to 131,072, about 210 bytes an
/// entity; here the arrays take 64 bytes a position at most twice over (the type
/// interned, a key's part is 24 bytes) and the index four bytes a slot.
///
/// - Complexity: lookup and insertion O(1) expected; iteration in arrival order.
package struct EntityTable: Sendable, Sequence {
  /// The entity types, each once, by code: a document has a few, and an entity keeps
  /// its type's four-byte code.
  private var types: [TypeEntry] = []
  /// The code of each type, by its exact UTF-8: two spellings of one type (canonically
  /// equivalent strings) keep their own bytes, as their keys did.
  private var typeCodes: [ExactString: UInt32] = [:]
  /// Per position: the type's code, the id and the key's hash, 24 bytes where a key
  /// takes 40.
  private var typeCodeAt: [UInt32] = []
  private var ids: [String] = []
  private var hashes: [UInt32] = []
  /// The records, by position; edited in place at a position from ``index(forKey:)``
  /// or ``insertIfAbsent(_:)``.
  package var values: [EntityRecord] = []
  /// Position + 1 of the entity hashed there, or 0 for an empty slot; linear probing.
  /// The count is a power of two at least 4/3 of the entities', or zero.
  private var slots: [UInt32] = []

  /// A type, and what the table notes of its entities. Kept in `types`, not in arrays of
  /// their own beside it: each reference the table holds is retained and released at
  /// every copy of a document (one a transaction), and three more made the per-edit text
  /// path 2.5% slower (BENCHMARKS.md, typed reads, third pass).
  private struct TypeEntry {
    var name: String
    /// The position of the type's latest entity, or -1.
    var latest = -1
    /// Whether every entity of the type arrived after the ones its id follows (a
    /// replica's own ids, named after their creation, do), so that their positions are
    /// their id order and a read sorts nothing (see ``keyOrder(of:)``).
    var inIDOrder = true
    /// The type's set fields' visible elements as typed walks built them (memory only,
    /// not state; shared by copies, which is safe: see ``SetReadCache``).
    let setReads = SetReadCache()

    init(_ name: String) { self.name = name }
  }

  package init() {}

  package var count: Int { ids.count }

  /// The key of the entity at `position`.
  func key(at position: Int) -> EntityKey {
    EntityKey(
      type: types[Int(typeCodeAt[position])].name, id: ids[position],
      hashCode: hashes[position])
  }

  /// The id of the entity at `position`.
  func id(at position: Int) -> String { ids[position] }

  /// Where typed walks keep the set fields' visible elements of the entity at
  /// `position`: its type's ``SetReadCache``.
  func setReads(at position: Int) -> SetReadCache {
    types[Int(typeCodeAt[position])].setReads
  }

  /// The keys, by position.
  package var keys: LazyMapCollection<Range<Int>, EntityKey> {
    ids.indices.lazy.map { [self] in key(at: $0) }
  }

  /// The positions of the entities of `type`, in order, found by the type's code
  /// without building their keys.
  func positions(ofType type: String) -> LazyFilterSequence<Range<Int>> {
    // Codes, not one: canonically equivalent spellings of the type have a code each.
    let codes = types.indices.filter { types[$0].name == type }.map { UInt32($0) }
    if codes.count == 1, let code = codes.first {
      return ids.indices.lazy.filter { [typeCodeAt] in typeCodeAt[$0] == code }
    }
    return ids.indices.lazy.filter { [typeCodeAt] in codes.contains(typeCodeAt[$0]) }
  }

  /// The indices of `positions` in the order of their keys (type, then id, by UTF-8, as
  /// ``EntityKey`` orders): a list of entities sorted by id without building a key.
  ///
  /// Compares eight bytes of each id as one integer, and whole ids only where those are
  /// equal: sorting 50,000 ids string by string took longer than reading them. The
  /// bytes are those after the prefix every id shares (ids named after their creation
  /// share their replica's eleven characters), where ids start to differ.
  func keyOrder(of positions: [Int]) -> [Int] {
    if isInKeyOrder(positions) { return Array(positions.indices) }
    let skipped = commonPrefixLength(of: positions)
    var order = positions.indices.map {
      (prefix: Self.orderPrefix(of: ids[positions[$0]], skipping: skipped), index: $0)
    }
    func precedes(_ lhs: (prefix: UInt64, index: Int), _ rhs: (prefix: UInt64, index: Int)) -> Bool
    {
      let (left, right) = (positions[lhs.index], positions[rhs.index])
      if typeCodeAt[left] != typeCodeAt[right] {
        return utf8Precedes(
          types[Int(typeCodeAt[left])].name, types[Int(typeCodeAt[right])].name)
      }
      if lhs.prefix != rhs.prefix { return lhs.prefix < rhs.prefix }
      return utf8Precedes(ids[left], ids[right])
    }
    // A replica's own entities sit in memory in the order of their ids (an id is its
    // creation's dot): one pass over neighbours finds that, and the sort is skipped.
    var sorted = true
    for index in order.indices.dropFirst() where precedes(order[index], order[index - 1]) {
      sorted = false
      break
    }
    if !sorted { order.sort(by: precedes) }
    return order.map(\.index)
  }

  /// Whether `positions`, ascending and of one type whose entities arrived in id order,
  /// are in key order already: known from the table, without reading an id.
  private func isInKeyOrder(_ positions: [Int]) -> Bool {
    guard let first = positions.first else { return true }
    let code = typeCodeAt[first]
    guard types[Int(code)].inIDOrder else { return false }
    var previous = -1
    for position in positions {
      guard position > previous, typeCodeAt[position] == code else { return false }
      previous = position
    }
    return true
  }

  /// The number of leading UTF-8 bytes the ids at `positions` all share.
  private func commonPrefixLength(of positions: [Int]) -> Int {
    guard var first = positions.first.map({ ids[$0] }) else { return 0 }
    return first.withUTF8 { first in
      var length = first.count
      for position in positions.dropFirst() where length > 0 {
        var id = ids[position]
        length = id.withUTF8 { id in
          var shared = 0
          while shared < Swift.min(length, id.count), id[shared] == first[shared] { shared += 1 }
          return shared
        }
      }
      return length
    }
  }

  /// Eight bytes of `id`'s UTF-8 after its first `skipped`, big-endian, zero-padded:
  /// integers that order as ids sharing those first bytes do, wherever they differ.
  private static func orderPrefix(of id: String, skipping skipped: Int) -> UInt64 {
    var id = id
    // The bytes in place: the UTF-8 view's `dropFirst` and `prefix` cost more than the
    // comparisons they serve.
    return id.withUTF8 { bytes in
      var prefix: UInt64 = 0
      var index = skipped
      let end = Swift.min(bytes.count, skipped + 8)
      while index < end {
        prefix = prefix << 8 | UInt64(bytes[index])
        index += 1
      }
      // `<<` yields 0 for a shift of 64 (no byte after the shared ones).
      return prefix << (8 * (8 - Swift.max(0, end - skipped)))
    }
  }

  /// Makes room for `capacity` entities, as a decoder that knows their count does.
  package mutating func reserveCapacity(_ capacity: Int) {
    typeCodeAt.reserveCapacity(capacity)
    ids.reserveCapacity(capacity)
    hashes.reserveCapacity(capacity)
    values.reserveCapacity(capacity)
    let needed = Self.slotCount(for: capacity)
    if needed > slots.count { rehash(slotCount: needed) }
  }

  /// The position of `key`, if the table holds it.
  package func index(forKey key: EntityKey) -> Int? {
    guard !slots.isEmpty else { return nil }
    let mask = slots.count - 1
    var slot = Int(key.hashCode) & mask
    while true {
      let position = Int(slots[slot]) - 1
      if position < 0 { return nil }
      if hashes[position] == key.hashCode, ids[position] == key.id,
        types[Int(typeCodeAt[position])].name == key.type
      {
        return position
      }
      slot = (slot + 1) & mask
    }
  }

  /// Whether the entity at `position` is `key`: ``index(forKey:)``'s check, for a
  /// position the caller kept.
  func holds(_ key: EntityKey, at position: Int) -> Bool {
    position >= 0 && position < ids.count && hashes[position] == key.hashCode
      && ids[position] == key.id && types[Int(typeCodeAt[position])].name == key.type
  }

  /// The record of `key`, if the table holds it.
  package subscript(key: EntityKey) -> EntityRecord? {
    index(forKey: key).map { values[$0] }
  }

  /// The position of `key`, adding it with an empty record if the table lacks it.
  mutating func insertIfAbsent(_ key: EntityKey) -> Int {
    if let position = index(forKey: key) { return position }
    append(key, EntityRecord())
    return ids.count - 1
  }

  /// Adds `key`, which the table must not hold, with `record`.
  package mutating func append(_ key: EntityKey, _ record: EntityRecord) {
    assert(index(forKey: key) == nil, "\(key) is in the table already")
    // Positions are four bytes: 2^32 entities would need at least 20 GiB of state.
    precondition(ids.count < UInt32.max, "a document holds fewer than 2^32 entities")
    let needed = Self.slotCount(for: ids.count + 1)
    if needed > slots.count { rehash(slotCount: needed) }
    let code = code(of: key.type)
    let type = Int(code)
    if types[type].inIDOrder, types[type].latest >= 0,
      !utf8Precedes(ids[types[type].latest], key.id)
    {
      types[type].inIDOrder = false
    }
    types[type].latest = ids.count
    typeCodeAt.append(code)
    ids.append(key.id)
    hashes.append(key.hashCode)
    values.append(record)
    place(ids.count - 1)
  }

  /// The code of `type`, given it now if it is new.
  private mutating func code(of type: String) -> UInt32 {
    // Nearly every entity is of the type before it.
    if let last = typeCodeAt.last, utf8Equal(types[Int(last)].name, type) { return last }
    let exact = ExactString(type)
    if let code = typeCodes[exact] { return code }
    // At most one type an entity, so fewer than 2^32 (see `append`).
    let code = UInt32(truncatingIfNeeded: types.count)
    types.append(TypeEntry(type))
    typeCodes[exact] = code
    return code
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
    for position in ids.indices { place(position) }
  }

  /// Puts the entity at `position` into the first empty slot from its key's hash.
  private mutating func place(_ position: Int) {
    let mask = slots.count - 1
    var slot = Int(hashes[position]) & mask
    while slots[slot] != 0 { slot = (slot + 1) & mask }
    slots[slot] = UInt32(truncatingIfNeeded: position + 1)
  }

  /// Traps unless every key is found at its own position, each position fills one slot,
  /// and each type has one code.
  func _checkInvariants() {
    let counts = [typeCodeAt.count, ids.count, hashes.count, values.count]
    precondition(Set(counts).count == 1, "per-position arrays of counts \(counts)")
    precondition(types.count == typeCodes.count, "\(types.count) types, \(typeCodes.count) codes")
    for code in types.indices {
      let positions = ids.indices.filter { typeCodeAt[$0] == UInt32(code) }
      precondition(types[code].latest == positions.last ?? -1, "type \(code)'s latest entity")
      if types[code].inIDOrder {
        precondition(
          zip(positions, positions.dropFirst()).allSatisfy { utf8Precedes(ids[$0], ids[$1]) },
          "type \(code)'s entities are out of id order")
      }
    }
    for (code, type) in types.enumerated() {
      precondition(typeCodes[ExactString(type.name)] == UInt32(code), "\(type) without its code")
    }
    precondition(slots.count >= Self.slotCount(for: count), "the slots are too few")
    precondition(slots.count(where: { $0 != 0 }) == count, "slots and positions differ")
    for position in ids.indices {
      let key = key(at: position)
      precondition(hashes[position] == EntityKey(type: key.type, id: key.id).hashCode)
      precondition(index(forKey: key) == position, "\(key) is misplaced")
    }
  }

  package func makeIterator() -> Iterator {
    Iterator(table: self)
  }

  /// The entities' keys and records, by position.
  package struct Iterator: IteratorProtocol {
    let table: EntityTable
    var position = 0

    package mutating func next() -> (key: EntityKey, value: EntityRecord)? {
      guard position < table.count else { return nil }
      defer { position += 1 }
      return (table.key(at: position), table.values[position])
    }
  }
}

/// A string hashed and compared by its exact UTF-8, not by canonical equivalence as
/// `String` is.
private struct ExactString: Hashable {
  let string: String

  init(_ string: String) { self.string = string }

  static func == (lhs: ExactString, rhs: ExactString) -> Bool {
    utf8Equal(lhs.string, rhs.string)
  }

  func hash(into hasher: inout Hasher) {
    var string = string
    // The bytes in one call, not a call a byte; their count ends them.
    string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    hasher.combine(string.utf8.count)
  }
}

extension EntityTable: Equatable {
  /// Equal when they hold the same keys with equal records, in whatever order.
  package static func == (lhs: EntityTable, rhs: EntityTable) -> Bool {
    guard lhs.count == rhs.count else { return false }
    for position in lhs.values.indices {
      guard let other = rhs.index(forKey: lhs.key(at: position)),
        rhs.values[other] == lhs.values[position]
      else {
        return false
      }
    }
    return true
  }
}
