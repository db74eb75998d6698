import Converge
import ConvergeTestSupport
import Foundation
import Testing

@Suite struct TextEditDeltaTests {
  private func load(_ name: String) throws -> [UInt8] {
    let url = try #require(
      Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
      "fixture \(name) missing from the test bundle")
    return Array(try Data(contentsOf: url))
  }

  @Test func fixtureDecodesAppliesAndReencodesExactly() throws {
    let bytes = try load("text-edit-records-v2.bin")
    #expect(bytes[5] == MessageKind.textEditDelta.rawValue)
    let delta = try DocumentDelta(decoding: bytes)
    #expect(delta == TextEditFixtureScenario.edit)
    #expect(delta.encoded() == bytes)
    var document = TextEditFixtureScenario.base
    document.apply(delta)
    #expect(document.text(of: "body", in: TextEditFixtureScenario.note) == "oat milk")
  }

  /// The same edit in the earlier form (kind 6), which a store's log or a relay's rows
  /// may still hold: read by its own decoder into the same delta, never written again.
  @Test func theEarlierFormStillDecodes() throws {
    let bytes = try load("text-edit-delta-v2.bin")
    #expect(bytes[5] == MessageKind.legacyTextEditDelta.rawValue)
    let delta = try DocumentDelta(decoding: bytes)
    #expect(delta == TextEditFixtureScenario.edit)
    #expect(delta.storedTextEdit != nil)
    #expect(delta.legacyEncoded() == bytes)
    #expect(delta.encoded() == (try load("text-edit-records-v2.bin")))
    #expect(try SyncMessage(decoding: bytes).delta == delta)
    var document = TextEditFixtureScenario.base
    document.apply(delta)
    #expect(document.text(of: "body", in: TextEditFixtureScenario.note) == "oat milk")
  }

  @Test func aTypedCharacterTakesTheCompactForm() throws {
    let note = EntityKey(type: "note", id: "n1")
    var phone = Replica(id: ReplicaID(rawValue: 0x1234_5678_9ABC_DEF0), wallClock: .fixed(0))
    var laptop = phone.forked(as: ReplicaID(rawValue: 7))
    let created = phone.transact { tx in
      tx.create(note)
      tx.insertText("Hello", at: 0, in: "body", of: note)
    }
    // Creation and typing in one transaction: the general form.
    #expect(created.delta.encoded()[5] == MessageKind.documentDelta.rawValue)
    try laptop.apply(encodedDelta: created.delta.encoded())
    for (offset, character) in ["!", "?", "x"].enumerated() {
      let typed = phone.transact { tx in
        tx.insertText(character, at: 5 + offset, in: "body", of: note)
      }
      let bytes = typed.delta.encoded()
      #expect(bytes[5] == MessageKind.textEditDelta.rawValue)
      // Envelope 11; target record 16 (tag, the key and the field name in full); author
      // record 10 (tag, the replica in full); insert record 5 (tag, counter, Lamport
      // difference, origin distance, the scalar; its right origin predicted: the end).
      #expect(bytes.count == 42, "\(bytes.count) bytes")
      #expect(try DocumentDelta(decoding: bytes) == typed.delta)
      #expect(try DocumentDelta(decoding: Data(bytes)) == typed.delta)
      try laptop.apply(encodedDelta: bytes)
    }
    let erased = phone.transact { tx in tx.deleteText(0..<2, in: "body", of: note) }
    #expect(erased.delta.encoded()[5] == MessageKind.textEditDelta.rawValue)
    try laptop.apply(encodedDelta: erased.delta.encoded())
    #expect(laptop.document == phone.document)
    #expect(laptop.document.text(of: "body", in: note) == "llo!?x")
  }

  @Test func otherDeltasKeepTheGeneralForm() {
    let note = EntityKey(type: "note", id: "n1")
    var replica = Replica(id: ReplicaID(rawValue: 3), wallClock: .fixed(0))
    let general: [DocumentDelta] = [
      replica.transact { $0.create(note) }.delta,
      replica.transact { $0.setValue(.string("A"), for: "title", of: note) }.delta,
      replica.transact { tx in
        tx.insertText("a", at: 0, in: "body", of: note)
        tx.insertText("b", at: 0, in: "summary", of: note)
      }.delta,
      replica.transact { tx in
        tx.insertText("a", at: 0, in: "body", of: note)
        tx.setValue(.string("B"), for: "title", of: note)
      }.delta,
    ]
    for delta in general {
      #expect(delta.encoded()[5] == MessageKind.documentDelta.rawValue)
    }
    // Two edits joined into one delta still have the compact form.
    let first = replica.transact { $0.insertText("c", at: 0, in: "body", of: note) }.delta
    let second = replica.transact { $0.insertText("d", at: 1, in: "body", of: note) }.delta
    #expect(first.merging(second).encoded()[5] == MessageKind.textEditDelta.rawValue)
    // An empty delta is general.
    #expect(DocumentDelta().encoded()[5] == MessageKind.documentDelta.rawValue)
  }

  @Test func typingIntoAVisibleEntityReportsAnUpdate() {
    let note = EntityKey(type: "note", id: "n1")
    var replica = Replica(id: ReplicaID(rawValue: 5), wallClock: .fixed(0))
    let created = replica.transact { $0.insertText("a", at: 0, in: "body", of: note) }
    #expect(created.changes.created == [note])
    let typed = replica.transact { $0.insertText("b", at: 1, in: "body", of: note) }
    #expect(typed.changes.created.isEmpty)
    #expect(typed.changes.updated == [note])
    #expect(typed.changes[note]?.fields == ["body"])
    #expect(typed.changes[note]?.textChanges["body"]?.count == 1)
  }

  /// The general form of a delta that has the compact form is not canonical.
  @Test func theGeneralFormOfATextEditIsRejected() throws {
    let note = EntityKey(type: "n", id: "1")
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    let delta = replica.transact { $0.insertText("a", at: 0, in: "b", of: note) }.delta
    // The earlier form's body has the general form's parts.
    let compact = delta.legacyEncoded()
    let body = Array(try Envelope.open(compact).body)
    // Compact body: table (9 bytes), key (4), name (2), text.
    let table = body[0..<9]
    let key = body[9..<13]
    let name = body[13..<15]
    let text = body[15...]
    var general: [UInt8] = Array(table)
    general += [0x01, 0x00, 0x01, 0x01, 0x00]  // context: #0 knows 1
    general += [0x01] + key + [0x01, 0x00, 0x01, 0x00]  // 1 entity, presence {#0: 1}, {}
    general += [0x01] + name + [0x02] + text  // 1 field, text
    let message = Envelope.seal(kind: .documentDelta, body: general)
    #expect(throws: ConvergeDecodingError.self) { try DocumentDelta(decoding: message) }
    // A compact body with a damaged key length is refused too.
    var damaged = body
    damaged[9] = 0x7F
    #expect(throws: ConvergeDecodingError.self) {
      try DocumentDelta(decoding: Envelope.seal(kind: .legacyTextEditDelta, body: damaged))
    }
    // So is a text edit message with a damaged key length.
    var records = Array(try Envelope.open(delta.encoded()).body)
    #expect(records[0] == 2 && records[1] == 0)  // a target record, the key in full
    records[2] = 0x7F
    #expect(throws: ConvergeDecodingError.self) {
      try DocumentDelta(decoding: Envelope.seal(kind: .textEditDelta, body: records))
    }
  }

  /// A text edit message has one encoding: the records a frame would accept, written
  /// another way than the encoder writes them, are refused.
  @Test func recordsWrittenAnotherWayAreRefused() throws {
    let bytes = try load("text-edit-records-v2.bin")
    let body = Array(try Envelope.open(bytes).body)
    let deleteAt = body.count - 4
    // The delete record: tag, count 4, replica reference 2 (0xA1), counter 2.
    #expect(Array(body[deleteAt...]) == [0x29, 0x04, 0x02, 0x02])
    let head = Array(body[..<deleteAt])
    let variants: [(String, [UInt8])] = [
      // The delete dot written out although it is the predicted one (5).
      ("a stated predicted counter", head + [0x21, 0x05, 0x04, 0x02, 0x02]),
      // 0xA1 in full although the dictionary holds it.
      ("a value in full", head + [0x29, 0x04, 0x00, 0xA1, 0, 0, 0, 0, 0, 0, 0, 0x02]),
      // The delete (naming 0xA1 in full) before the insert (referring to it): runs out of
      // counter order.
      (
        "runs out of order",
        Array(head[..<26]) + [0x21, 0x05, 0x04, 0x00, 0xA1, 0, 0, 0, 0, 0, 0, 0, 0x02]
          + [0x65, 0x01, 0x04, 0x10, 0x02, 0x05, 0x02, 0x6F, 0x61, 0x74, 0x20]
      ),
      // An embedded record, which only a frame may hold.
      ("an embedded record", [0x04] + [UInt8(bytes.count)] + bytes),
    ]
    for (name, variant) in variants {
      #expect(throws: ConvergeDecodingError.self, "\(name)") {
        try DocumentDelta(decoding: Envelope.seal(kind: .textEditDelta, body: variant))
      }
    }
    let decoded = try DocumentDelta(decoding: Envelope.seal(kind: .textEditDelta, body: body))
    #expect(decoded == TextEditFixtureScenario.edit)
  }

  /// A message names each replica in full once and refers to it after that, also past
  /// the few its writer searches in order: deletes of twelve replicas' scalars, twice.
  @Test func aMessageOfManyReplicasRefersToEachNamedOnce() throws {
    let author = ReplicaID(rawValue: 0xA0)
    var deletes: [RGADelta.Delete] = []
    for round: UInt64 in 0..<2 {
      for index: UInt64 in 0..<12 {
        deletes.append(
          RGADelta.Delete(
            dot: Dot(replica: author, counter: 1 + round * 12 + index),
            target: Dot(replica: ReplicaID(rawValue: 0xB0 + index), counter: 1 + round * 2),
            count: 1, isDescending: false))
      }
    }
    let runs = RGADelta(inserts: [], deletes: deletes)
    let delta = try #require(
      DocumentDelta.textEdit(runs, field: "body", of: EntityKey(type: "note", id: "n1")))
    let bytes = delta.encoded()
    #expect(try Envelope.open(bytes).kind == .textEditDelta)
    // The author and twelve replicas in full (8 bytes each), none twice.
    let body = Array(try Envelope.open(bytes).body)
    #expect(body.count < 13 * 8 + 24 * 4 + 20)
    #expect(try DocumentDelta(decoding: bytes) == delta)
  }

  @Test func randomMutationsOfTextEditsAreRejectedOrCanonical() throws {
    let seed = baseSeed(0x7E_D1)
    var random = SeededGenerator(seed: seed)
    var messages: [[UInt8]] = [
      try load("text-edit-delta-v2.bin"), try load("text-edit-records-v2.bin"),
    ]
    var replica = Replica(id: ReplicaID(rawValue: 0xC0FF_EE00_0000_0001), wallClock: .fixed(0))
    let note = EntityKey(type: "note", id: "n1")
    for index in 0..<20 {
      let delta = replica.transact { tx in
        if index.isMultiple(of: 3) {
          tx.deleteText(0..<1, in: "body", of: note)
        }
        tx.insertText(index.isMultiple(of: 2) ? "é" : "ab", at: index / 2, in: "body", of: note)
      }.delta
      messages.append(delta.encoded())
    }
    var accepted = 0
    for iteration in 0..<fuzzIterations(10_000) {
      let message = messages.randomElement(using: &random) ?? []
      let other = messages.randomElement(using: &random) ?? []
      let mutated =
        iteration.isMultiple(of: 2)
        ? mutateBytes(message, splicingWith: other, using: &random)
        : mutateBody(of: message, splicingWith: other, using: &random) ?? []
      do {
        guard let reencoded = try reencodeMessage(mutated) else { continue }
        #expect(reencoded == mutated, "seed \(seed): accepted a non-canonical \(mutated)")
        accepted += 1
      } catch is ConvergeDecodingError {
      } catch {
        Issue.record("seed \(seed): untyped error \(error)")
      }
    }
    #expect(accepted < fuzzIterations(10_000) / 2, "seed \(seed)")
  }
}
