import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// A document's entity table: a dictionary's lookups with stable positions, and a
/// decoder that refuses one entity spelled twice.
@Suite struct EntityTableTests {
  /// Ids drawn from few letters and combining marks, so that keys repeat, collide in
  /// the table's slots, and some are one string spelled two ways ("e\u{301}", "\u{E9}").
  private static let idParts = ["e", "\u{E9}", "\u{301}", "a", "\u{316}", "1"]
  /// Types the table interns, two of them one string spelled two ways.
  private static let types = ["note", "task", "caf\u{E9}", "cafe\u{301}"]

  private static func randomKey(using random: inout SeededGenerator) -> EntityKey {
    let length = Int.random(in: 1...3, using: &random)
    let id = (0..<length).map { _ in idParts.randomElement(using: &random) ?? "" }.joined()
    return EntityKey(type: types.randomElement(using: &random) ?? "note", id: id)
  }

  /// Every lookup agrees with a `Dictionary` fed the same keys; a position, once given,
  /// never changes as the table grows; a key comes back spelled as it went in, its type
  /// interned or not; equal contents compare equal in any order.
  @Test func aTableFindsWhatADictionaryFinds() throws {
    try forEachSeed(count: 40, base: 0xE_7AB) { random in
      var table = EntityTable()
      var positions: [EntityKey: Int] = [:]
      var spellings: [Int: EntityKey] = [:]
      for step in 0..<Int.random(in: 1...400, using: &random) {
        let key = Self.randomKey(using: &random)
        let position = table.insertIfAbsent(key)
        if let known = positions[key] {
          try ensure(position == known, "step \(step): \(key) moved from \(known) to \(position)")
        } else {
          try ensure(position == positions.count, "step \(step): \(key) not appended")
          positions[key] = position
          spellings[position] = key
          table.values[position].presence.mergeAdd(
            Dot(replica: ReplicaID(rawValue: 1), counter: UInt64(step + 1)))
        }
        try ensure(table.count == positions.count, "step \(step): count")
      }
      for (key, position) in positions {
        try ensure(table.index(forKey: key) == position, "\(key) not found at \(position)")
        let stored = table.key(at: position)
        let spelled = spellings[position] ?? key
        try ensure(
          Array(stored.type.utf8) == Array(spelled.type.utf8)
            && Array(stored.id.utf8) == Array(spelled.id.utf8),
          "\(spelled) came back as \(stored)")
      }
      for type in Self.types {
        let expected = table.keys.indices.filter { table.key(at: $0).type == type }
        try ensure(Array(table.positions(ofType: type)) == expected, "positions of \(type)")
      }
      for _ in 0..<50 {
        let key = Self.randomKey(using: &random)
        try ensure(table.index(forKey: key) == positions[key], "\(key): absent or misplaced")
      }
      // The same entities in another order, as a decoded document holds them.
      var shuffled = EntityTable()
      for (key, record) in Array(table).shuffled(using: &random) {
        shuffled.append(key, record)
      }
      try ensure(shuffled == table, "order changed equality")
      if let last = shuffled.keys.last {
        shuffled.values[shuffled.values.count - 1].presence.mergeAdd(
          Dot(replica: ReplicaID(rawValue: 2), counter: 1))
        try ensure(shuffled != table, "\(last)'s changed record still compares equal")
      }
    }
  }

  /// `keyOrder(of:)` orders positions as sorting their keys does, whether the entities
  /// of a type arrived in id order (then the table knows it and sorts nothing) or not,
  /// and for positions of several types; the table's invariants hold throughout.
  @Test func keyOrderIsTheOrderOfSortedKeys() throws {
    try forEachSeed(count: 30, base: 0x0_4DE4) { random in
      var table = EntityTable()
      let inOrder = random.next() % 2 == 0
      for step in 0..<Int.random(in: 1...120, using: &random) {
        // Ascending ids (as a replica names its own), or now and then one out of order.
        let id =
          inOrder || random.next() % 4 != 0
          ? String(repeating: "0", count: 5 - "\(step)".count) + "\(step)"
          : Self.randomKey(using: &random).id
        let type = random.next() % 5 == 0 ? "task" : "note"
        _ = table.insertIfAbsent(EntityKey(type: type, id: id))
        table._checkInvariants()
      }
      func expectSorted(_ positions: [Int], _ label: String) throws {
        let ordered = table.keyOrder(of: positions).map { table.key(at: positions[$0]) }
        let sorted = positions.map { table.key(at: $0) }.sorted {
          $0.type != $1.type ? utf8Precedes($0.type, $1.type) : utf8Precedes($0.id, $1.id)
        }
        try ensure(
          ordered.map { Array($0.type.utf8) + [0] + Array($0.id.utf8) }
            == sorted.map { Array($0.type.utf8) + [0] + Array($0.id.utf8) },
          "\(label): \(ordered) is not \(sorted)")
      }
      for type in ["note", "task"] {
        let positions = Array(table.positions(ofType: type))
        try expectSorted(positions, type)
        try expectSorted(positions.filter { _ in random.next() % 3 != 0 }, "some of \(type)")
      }
      try expectSorted(Array(table.keys.indices), "every type")
      try expectSorted(Array(table.keys.indices.reversed()), "every type, reversed")
    }
  }

  /// A state naming one entity in two spellings (as long as each other in UTF-8, and
  /// ascending in bytes as the wire orders keys) is refused; two distinct ids in the
  /// same shape are read.
  @Test func aStateHoldingOneEntityTwiceIsRefused() throws {
    for (second, refused) in [("a\u{316}\u{301}", true), ("a\u{316}\u{302}", false)] {
      var replica = Replica(id: ReplicaID(rawValue: 1))
      for id in ["pp1pp", "pp3pp"] {
        replica.transact { tx in tx.create(EntityKey(type: "note", id: id)) }
      }
      var body = Array(try Envelope.open(replica.encodedState()).body)
      for (placeholder, spelling) in [("pp1pp", "a\u{301}\u{316}"), ("pp3pp", second)] {
        let from = Array(placeholder.utf8)
        let start = try #require(body.indices.first { body[$0...].starts(with: from) })
        body.replaceSubrange(start..<start + from.count, with: Array(spelling.utf8))
      }
      let bytes = Envelope.seal(kind: .documentState, body: body)
      if refused {
        #expect(throws: ConvergeDecodingError.self) { try Document(decoding: bytes) }
      } else {
        #expect(try Document(decoding: bytes).keys.count == 2)
      }
    }
  }
}
