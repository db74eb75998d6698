import Converge
import ConvergeTestSupport
import Foundation
import Testing

/// Documents and deltas on the wire: round trips, canonical bytes, persistence.
@Suite struct DocumentWireTests {
  let note = EntityKey(type: "note", id: "n1")

  /// Checks `decode(encode(x)) == x` and `encode(decode(encode(x))) == encode(x)`, also
  /// from a slice and from a `Data` slice with a non-zero start index.
  static func checkRoundTrip(_ document: Document) throws {
    let bytes = document.encoded()
    let decoded = try Document(decoding: bytes)
    #expect(decoded == document)
    #expect(decoded.encoded() == bytes)
    let padded = [0xEE, 0xEE, 0xEE] + bytes + [0xEE]
    #expect(try Document(decoding: padded[3..<(3 + bytes.count)]) == document)
    let data = Data(padded)
    #expect(try Document(decoding: data[3..<(3 + bytes.count)]) == document)
  }

  /// Checks a delta's round trip: an equal delta, equal bytes again, and the decoded
  /// delta applies exactly like the original. (Equality holds for the deltas replicas
  /// make; the wire only promises equal bytes and equal effect, since text runs are
  /// joined into maximal runs on the way.)
  static func checkRoundTrip(_ delta: DocumentDelta, onto base: Document) throws {
    let bytes = delta.encoded()
    let decoded = try DocumentDelta(decoding: bytes)
    #expect(decoded.encoded() == bytes)
    #expect(decoded == delta)
    #expect(decoded.context == delta.context)
    #expect(decoded.keys == delta.keys)
    var viaOriginal = base
    viaOriginal.apply(delta)
    var viaDecoded = base
    viaDecoded.apply(decoded)
    #expect(viaDecoded == viaOriginal)
    let padded = [0x01] + bytes
    #expect(try DocumentDelta(decoding: padded[1...]).encoded() == bytes)
    #expect(try DocumentDelta(decoding: Data(padded)[1...]).encoded() == bytes)
  }

  @Test func randomDocumentsRoundTrip() throws {
    try forEachSeed(count: 60, base: 0xD0C_0001) { random in
      let network = DocumentNetwork(replicaCount: 3, rounds: 14, using: &random)
      for replica in network.replicas { try Self.checkRoundTrip(replica.document) }
    }
  }

  @Test func randomDeltasRoundTrip() throws {
    try forEachSeed(count: 40, base: 0xDE1_7A00) { random in
      let network = DocumentNetwork(replicaCount: 3, rounds: 12, using: &random)
      let base = network.replicas[0].document
      for delta in network.deltas { try Self.checkRoundTrip(delta, onto: base) }
      // What one replica lacks from another, and a group of every delta.
      let lacking = network.replicas[1].delta(since: network.replicas[2].context)
      try Self.checkRoundTrip(lacking, onto: network.replicas[2].document)
      let grouped = network.deltas.reduce(DocumentDelta()) { $0.merging($1) }
      try Self.checkRoundTrip(grouped, onto: Document())
    }
  }

  @Test func equalDocumentsReachedInDifferentOrdersEncodeEqually() throws {
    try forEachSeed(count: 40, base: 0xCA_0000) { random in
      let network = DocumentNetwork(replicaCount: 3, rounds: 12, using: &random)
      var forward = Document()
      for delta in network.deltas { forward.apply(delta) }
      var shuffled = Document()
      for delta in network.deltas.shuffled(using: &random) { shuffled.apply(delta) }
      var merged = network.replicas[2].document
      merged.merge(network.replicas[1].document)
      merged.merge(network.replicas[0].document)
      for delta in network.deltas.reversed() { merged.apply(delta) }
      #expect(forward == shuffled)
      #expect(forward.encoded() == shuffled.encoded())
      #expect(merged.encoded() == forward.encoded())
    }
  }

  @Test func emptyValuesRoundTrip() throws {
    try Self.checkRoundTrip(Document())
    let empty = DocumentDelta()
    #expect(try DocumentDelta(decoding: empty.encoded()) == empty)
  }

  @Test func everyFieldValueRoundTrips() throws {
    let values: [FieldValue] = [
      .null, .bool(false), .bool(true), .int(.min), .int(-1), .int(0), .int(.max),
      .double(-0.0), .double(.nan), .double(.infinity), .double(1.5),
      .string(""), .string("é"), .string("e\u{301}"), .string("👩‍💻"),
      .date(Date(timeIntervalSinceReferenceDate: 1_234.5)), .bytes([]), .bytes([0, 0xFF]),
      .record([:]), .record(["b": .int(1), "a": .record(["z": .null, "é": .bool(true)])]),
    ]
    for value in values {
      var writer = ByteWriter()
      value.write(to: &writer)
      var reader = ByteReader(writer.bytes)
      let decoded = try FieldValue(from: &reader)
      try reader.expectEnd()
      #expect(decoded == value)
      var again = ByteWriter()
      decoded.write(to: &again)
      #expect(again.bytes == writer.bytes)
    }
    var replica = Replica(id: ReplicaID(rawValue: 5), wallClock: .fixed(1_000))
    replica.transact { tx in
      for (index, value) in values.enumerated() {
        tx.setValue(value, for: "f\(index)", of: note)
        tx.insert(value, into: "set", of: note)
      }
    }
    try Self.checkRoundTrip(replica.document)
  }

  @Test func restoringTakesAFreshIDAndKeepsTheDocument() throws {
    var replica = Replica(id: ReplicaID(rawValue: 9), wallClock: .fixed(5_000))
    replica.transact { tx in
      tx.create(note)
      tx.setValue(.string("Groceries"), for: "title", of: note)
      tx.insertText("milk", at: 0, in: "body", of: note)
    }
    let saved = replica.encodedState()
    var restored = try Replica(restoring: saved, wallClock: .fixed(1_000))
    #expect(restored.id != replica.id)
    #expect(restored.document == replica.document)
    #expect(restored.encodedState() == saved)
    // The clock observed the saved write: a new write wins even with a wall clock behind.
    restored.transact { $0.setValue(.string("Shopping"), for: "title", of: note) }
    replica.merge(restored)
    #expect(replica.document.value(of: "title", in: note) == .string("Shopping"))
    // Restoring a stale backup twice never reuses a dot.
    let first = try Replica(restoring: saved)
    let second = try Replica(restoring: saved)
    #expect(first.id != second.id)
    #expect(throws: ConvergeDecodingError.self) {
      try Replica(restoring: replica.delta(since: CausalContext()).encoded())
    }
  }

  @Test func encodedDeltasApplyToReplicas() throws {
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(1_000))
    let commit = phone.transact { tx in
      tx.create(note)
      tx.insertText("hello", at: 0, in: "body", of: note)
    }
    let changes = try laptop.apply(encodedDelta: commit.delta.encoded())
    #expect(!changes.isEmpty)
    #expect(laptop.document == phone.document)
  }

  @Test func failedApplyLeavesTheReplicaUnchanged() throws {
    var random = SeededGenerator(seed: 0xFA11)
    let network = DocumentNetwork(replicaCount: 3, rounds: 10, using: &random)
    var replica = network.replicas[0]
    let before = replica.encodedState()
    let lacking = network.replicas[1].delta(since: replica.context).encoded()
    for _ in 0..<200 {
      guard let damaged = mutateBody(of: lacking, splicingWith: lacking, using: &random),
        (try? DocumentDelta(decoding: damaged)) == nil
      else { continue }
      #expect(throws: ConvergeDecodingError.self) { try replica.apply(encodedDelta: damaged) }
      #expect(replica.encodedState() == before)
    }
    var truncated = lacking
    truncated.removeLast()
    #expect(throws: ConvergeDecodingError.self) { try replica.apply(encodedDelta: truncated) }
    #expect(replica.encodedState() == before)
  }

  @Test func oneTypedCharacterIsASmallDelta() {
    var replica = Replica(id: ReplicaID(rawValue: 0x5EED), wallClock: .fixed(1_700_000_000_000))
    replica.transact { tx in
      tx.create(note)
      tx.insertText("Hello world", at: 0, in: "body", of: note)
    }
    let commit = replica.transact { $0.insertText("!", at: 11, in: "body", of: note) }
    let bytes = commit.delta.encoded()
    // Frame 11, table 9, context 4, key 8, presence 5, field 6, run 7: under 60.
    #expect(bytes.count < 60, "\(bytes.count) bytes")
  }

  @Test func textRunsAreOneRecordPerRun() throws {
    var replica = Replica(id: ReplicaID(rawValue: 3), wallClock: .fixed(1_000))
    let long = String(repeating: "word ", count: 200)
    replica.transact { tx in
      tx.create(note)
      tx.insertText(long, at: 0, in: "body", of: note)
    }
    let bytes = replica.encodedState()
    // One run: the content plus a few dozen bytes of structure.
    #expect(bytes.count < long.utf8.count + 80, "\(bytes.count) bytes")
    try Self.checkRoundTrip(replica.document)
  }
}
