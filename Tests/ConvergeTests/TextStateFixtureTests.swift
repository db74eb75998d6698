import Converge
import ConvergeTestSupport
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

@Suite struct TextStateFixtureTests {
  private func load(_ name: String) throws -> [UInt8] {
    let url = try #require(
      Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
      "fixture \(name) missing from the test bundle")
    return Array(try Data(contentsOf: url))
  }

  private func body(of document: Document) throws -> RGA {
    guard
      case .text(let storage)? = document.entities[TextStateFixtureScenario.note]?.fields["body"]
    else {
      throw ConvergeDecodingError.invalidValue(offset: 0, reason: "no body")
    }
    return storage.text
  }

  @Test func textStateFixtureDecodesAndReencodesExactly() throws {
    let bytes = try load("text-state-v2.bin")
    let document = try Document(decoding: bytes)
    #expect(document == TextStateFixtureScenario.document)
    #expect(document.encoded() == bytes)
    let text = try body(of: document)
    text._checkInvariants()
    #expect(text.string == "Hello, dear 🌱!")
    #expect(text.utf16Count == 15)
    // "gest" waits for " big", and so does the delete of its "b".
    #expect(text.pendingCount == 4 + 1)
    // The loader builds what applying the runs one by one builds.
    #expect(text == (try replayTextState(encodeTextState(text))))
  }

  @Test func restoredFixtureIntegratesWhatItWaitedFor() throws {
    var restored = try Replica(
      restoring: try load("text-state-v2.bin"), wallClock: .fixed(1_700_000_001_000))
    restored.apply(TextStateFixtureScenario.missing)
    #expect(
      restored.document.text(of: "body", in: TextStateFixtureScenario.note)
        == "Hello, dear iggest 🌱!")
    #expect(try body(of: restored.document).pendingCount == 0)
    var reference = Replica(document: TextStateFixtureScenario.document)
    reference.apply(TextStateFixtureScenario.missing)
    #expect(restored.document == reference.document)
  }
}
