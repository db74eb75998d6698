import Converge
import Foundation
import Testing

/// The fixed scenario behind `document-v2.bin` and `document-delta-v2.bin`: two devices
/// with fixed ids and clocks edit a note (all three field kinds: registers of every value
/// kind, a tag set with a removed tag, a body typed concurrently on both with a
/// deletion) and a task that one of them deletes.
enum DocumentFixtureScenario {
  static let note = EntityKey(type: "note", id: "n1")
  static let task = EntityKey(type: "task", id: "t1")

  /// The final document, and the delta the laptop sent for its concurrent edits.
  static let (document, delta): (Document, DocumentDelta) = {
    var phone = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(1_700_000_000_000))
    var laptop = Replica(id: ReplicaID(rawValue: 0xB2), wallClock: .fixed(1_700_000_000_500))
    let setup = phone.transact { tx in
      tx.create(note)
      tx.setValue(.string("Groceries"), for: "title", of: note)
      tx.insert(.string("home"), into: "tags", of: note)
      tx.insert(.string("work"), into: "tags", of: note)
      tx.insertText("Buy milk", at: 0, in: "body", of: note)
      tx.create(task)
      tx.setValue(.string("Call Bob"), for: "title", of: task)
    }
    laptop.apply(setup.delta)
    let onPhone = phone.transact { tx in
      tx.remove(.string("work"), from: "tags", of: note)
      tx.setValue(.int(-2), for: "priority", of: note)
      tx.setValue(.double(0.5), for: "ratio", of: note)
      tx.setValue(.bool(true), for: "flagged", of: note)
      tx.setValue(.null, for: "archived", of: note)
      tx.setValue(
        .date(Date(timeIntervalSinceReferenceDate: 790_000_000)), for: "due", of: note)
      tx.setValue(.bytes([0xCA, 0xFE]), for: "icon", of: note)
      tx.setValue(
        .record(["x": .int(3), "column": .string("todo")]), for: "position", of: note)
      tx.insertText(" and eggs", at: 8, in: "body", of: note)
      tx.delete(task)
    }
    let onLaptop = laptop.transact { tx in
      tx.insertText("oat ", at: 4, in: "body", of: note)
      tx.deleteText(0..<4, in: "body", of: note)
      tx.setValue(.string("Shopping"), for: "title", of: note)
    }
    phone.apply(onLaptop.delta)
    laptop.apply(onPhone.delta)
    return (phone.document, onLaptop.delta)
  }()
}

@Suite struct DocumentFixtureTests {
  private func load(_ name: String) throws -> [UInt8] {
    let url = try #require(
      Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
      "fixture \(name) missing from the test bundle")
    return Array(try Data(contentsOf: url))
  }

  @Test func documentFixtureDecodesAndReencodesExactly() throws {
    let bytes = try load("document-v2.bin")
    let document = try Document(decoding: bytes)
    let note = DocumentFixtureScenario.note
    #expect(document == DocumentFixtureScenario.document)
    #expect(document.keys == [note])
    #expect(!document.contains(DocumentFixtureScenario.task))
    #expect(document.value(of: "title", in: note) == .string("Shopping"))
    #expect(document.value(of: "priority", in: note) == .int(-2))
    #expect(
      document.value(of: "position", in: note)
        == .record(["x": .int(3), "column": .string("todo")]))
    #expect(document.elements(of: "tags", in: note) == [.string("home")])
    #expect(document.text(of: "body", in: note) == "oat milk and eggs")
    #expect(document.encoded() == bytes)
  }

  @Test func deltaFixtureDecodesAndReencodesExactly() throws {
    let bytes = try load("document-delta-v2.bin")
    let delta = try DocumentDelta(decoding: bytes)
    #expect(delta.keys == [DocumentFixtureScenario.note])
    #expect(delta.encoded() == bytes)
    #expect(delta.encoded() == DocumentFixtureScenario.delta.encoded())
  }
}

@Suite struct MessageSummaryTests {
  @Test func summarizesEveryKind() throws {
    let document = try MessageSummary(decoding: DocumentFixtureScenario.document.encoded()).text
    #expect(document.hasPrefix("kind: documentState (7), "))
    #expect(document.contains("entities: 2 (1 visible)"))
    #expect(document.contains("task/t1 (deleted):"))
    #expect(document.contains("  body: text, 17 scalars, 17 UTF-16 units"))
    #expect(document.contains("  tags: set, 1 elements (2 with removed)"))
    let delta = try MessageSummary(decoding: DocumentFixtureScenario.delta.encoded()).text
    #expect(delta.hasPrefix("kind: documentDelta (4), "))
    #expect(delta.contains("  body: text, 1 insert runs (4 scalars), 1 delete runs (4 deletes)"))
    let vector = try MessageSummary(decoding: VersionVector([ReplicaID(rawValue: 1): 3]).encoded())
    #expect(vector.text.contains("replicas: 1"))
    let context = try MessageSummary(decoding: CausalContext().encoded())
    #expect(context.text.contains("context: 0 replicas, 0 events"))
  }

  @Test func badInputThrowsTypedErrors() {
    var bytes = DocumentFixtureScenario.document.encoded()
    bytes[bytes.count / 2] ^= 0x10
    #expect(throws: ConvergeDecodingError.checksumMismatch) { try MessageSummary(decoding: bytes) }
    #expect(throws: ConvergeDecodingError.truncated(offset: 0)) { try MessageSummary(decoding: []) }
  }
}
