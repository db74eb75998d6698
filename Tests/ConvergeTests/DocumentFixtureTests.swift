import Converge
import ConvergeTestSupport
import Foundation
import Testing

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
