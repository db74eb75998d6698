import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCRDTs
@testable import ConvergeCodec
@testable import ConvergeDocument

/// A set field's entries (``SetElements``) against the hash table they replaced: the same
/// elements, the same joins, and canonically equivalent strings as one element, in memory
/// and on the wire.
@Suite struct SetElementsTests {
  private let replicas = (1...4).map { ReplicaID(rawValue: UInt64($0)) }
  private let note = EntityKey(type: "note", id: "n1")

  /// Equivalent spellings ("e\u{301}" is "\u{E9}" decomposed), strings that `String`'s
  /// `<` ranks neither way ("e\u{301}" and "\u{E9}a"), and other kinds.
  private let pool: [FieldValue] = [
    .string("e\u{301}"), .string("\u{E9}"), .string("f"), .string("e"), .string("\u{E9}a"),
    .string("e\u{301}b"), .string("tag"), .string("🏷️"), .int(-3), .int(7), .bool(true),
    .null, .double(0.5), .bytes([1, 2]), .record(["k": .string("e\u{301}")]),
    .record(["k": .string("\u{E9}")]),
  ]

  /// An entry's cached hash sits in the padding after its element: a two-tag note's set
  /// allocation is 144 bytes instead of 160 (a 64-bit hash after the presence made an
  /// entry 56 bytes).
  @Test func anEntryTakesFortyEightBytes() {
    #expect(MemoryLayout<SetElements.Entry>.stride == 48)
  }

  private func randomPresence(using random: inout SeededGenerator) -> Presence {
    var presence = Presence()
    for replica in replicas where random.next() % 2 == 0 {
      presence.added.advance(to: Dot(replica: replica, counter: random.next() % 5 + 1))
      if random.next() % 3 == 0 {
        presence.removed.advance(to: Dot(replica: replica, counter: random.next() % 5 + 1))
      }
    }
    if presence.added.isEmpty { presence.mergeAdd(Dot(replica: replicas[0], counter: 1)) }
    return presence
  }

  private func randomSet(using random: inout SeededGenerator) -> (
    SetElements, [FieldValue: Presence]
  ) {
    var elements = SetElements()
    var reference: [FieldValue: Presence] = [:]
    for _ in 0..<Int(random.next() % 12) {
      let element = pool[Int(random.next() % UInt64(pool.count))]
      let presence = randomPresence(using: &random)
      elements.merge(presence, for: element)
      reference[element, default: Presence()].merge(presence)
    }
    return (elements, reference)
  }

  /// The entries as a dictionary; `nil` if an element is held twice.
  private func dictionary(_ elements: SetElements) -> [FieldValue: Presence]? {
    var result: [FieldValue: Presence] = [:]
    for (element, presence) in elements {
      guard result.updateValue(presence, forKey: element) == nil else { return nil }
    }
    return result
  }

  @Test func joinsAsTheHashTableDid() throws {
    try forEachSeed(count: 400, base: 0x5E7E) { random in
      let (a, referenceA) = randomSet(using: &random)
      let (b, referenceB) = randomSet(using: &random)
      var joined = a
      let changed = joined.merge(b)
      var reference = referenceA
      var referenceChanged = false
      for (element, presence) in referenceB {
        let before = reference[element]?.isPresent ?? false
        reference[element, default: Presence()].merge(presence)
        if reference[element]?.isPresent != before { referenceChanged = true }
      }
      let sorted = zip(joined.entries, joined.entries.dropFirst()).allSatisfy {
        $0.hash <= $1.hash
      }
      for (law, holds) in [
        ("the elements as inserted", dictionary(a) == referenceA),
        ("the joined elements", dictionary(joined) == reference),
        ("whether a visibility changed", changed == referenceChanged),
        ("a join commutes", joined == b.merging(a)),
        ("sorted by hash value", sorted),
      ] where !holds {
        throw LawViolation(
          law: law,
          witnesses: [
            .init(label: "a", state: "\(a.entries)"), .init(label: "b", state: "\(b.entries)"),
          ])
      }
    }
  }

  @Test func equivalentSpellingsAreOneElementOnEveryReplica() throws {
    var phone = Replica(id: replicas[0], wallClock: .fixed(1_000))
    var laptop = phone.forked(as: replicas[1])
    phone.transact { tx in
      tx.create(note)
      tx.insert(.string("\u{E9}"), into: "tags", of: note)
      tx.insert(.string("f"), into: "tags", of: note)
    }
    laptop.transact { tx in
      tx.create(note)
      tx.insert(.string("e\u{301}"), into: "tags", of: note)
    }
    try phone.apply(encodedDelta: laptop.delta(since: phone.context).encoded())
    try laptop.apply(encodedDelta: phone.delta(since: laptop.context).encoded())
    #expect(phone.document == laptop.document)
    #expect(phone.document.elements(of: "tags", in: note).count == 2)
    // Byte order and set order differ here: the state decodes through the sorting path.
    let restored = try Replica(restoring: phone.encodedState())
    #expect(restored.document == phone.document)
    #expect(restored.encodedState() == phone.encodedState())
  }

  /// `delta` encoded, with each placeholder's UTF-8 replaced by its spelling's (of the
  /// same length), sealed again.
  private func encoded(
    _ delta: DocumentDelta, replacing spellings: [(placeholder: String, spelling: String)]
  ) throws -> [UInt8] {
    var body = Array(try Envelope.open(delta.encoded()).body)
    for (placeholder, spelling) in spellings {
      let from = Array(placeholder.utf8)
      let to = Array(spelling.utf8)
      #expect(from.count == to.count)
      guard let start = body.indices.first(where: { body[$0...].starts(with: from) }) else {
        Issue.record("\(placeholder) not in the message")
        continue
      }
      body.replaceSubrange(start..<start + from.count, with: to)
    }
    return Envelope.seal(kind: .documentDelta, body: body)
  }

  @Test func aSetHoldingOneElementTwiceIsRefused() throws {
    // No set the library builds holds two spellings of one element: the message is
    // written with placeholders, then the spellings put in their place. "a\u{301}\u{316}"
    // and "a\u{316}\u{301}" are one string (combining marks in canonical order), as long
    // as each other in UTF-8, and ascending in bytes, as the wire orders elements.
    let dot = Dot(replica: replicas[0], counter: 1)
    for (spellings, refused) in [
      ([("pp1pp", "a\u{301}\u{316}"), ("pp3pp", "a\u{316}\u{301}")], true),
      ([("pp1pp", "a\u{301}\u{316}"), ("pp2", "a\u{302}"), ("pp3pp", "a\u{316}\u{301}")], true),
      // The control: the same shape with three distinct elements is accepted.
      ([("pp1pp", "a\u{301}\u{316}"), ("pp2", "a\u{302}"), ("pp3pp", "a\u{316}\u{302}")], false),
    ] {
      var delta = DocumentDelta()
      delta.context.insert(replica: dot.replica, counters: CounterRanges(1...1))
      var elements = SetElements()
      for (placeholder, _) in spellings { elements.merge(.add(dot), for: .string(placeholder)) }
      delta.entities[note] = EntityDelta(presence: .add(dot), fields: ["tags": .set(elements)])
      let bytes = try encoded(delta, replacing: spellings)
      if refused {
        #expect(throws: ConvergeDecodingError.self, "\(spellings)") {
          try DocumentDelta(decoding: bytes)
        }
      } else {
        let decoded = try DocumentDelta(decoding: bytes)
        guard case .set(let read)? = decoded.entities[note]?.fields["tags"] else {
          Issue.record("no set read")
          continue
        }
        #expect(read.count == 3)
      }
    }
  }
}
