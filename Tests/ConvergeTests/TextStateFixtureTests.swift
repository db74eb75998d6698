import Converge
import Foundation
import Testing

@testable import Converge

/// The fixed scenario behind `text-state-v2.bin`: a saved note body that holds
/// everything a text state can (concurrent inserts at one place ordered by replica id, a run split by a
/// later insert, a tombstone of a scalar outside the BMP and a visible one, a buffered
/// run whose origin never arrived, and a buffered delete of a scalar never seen).
enum TextStateFixtureScenario {
  static let note = EntityKey(type: "note", id: "n1")

  /// The phone's document after the exchanges, and the tablet's first edit, which the
  /// phone never received.
  static let (document, missing): (Document, DocumentDelta) = {
    var phone = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(1_700_000_000_000))
    var laptop = Replica(id: ReplicaID(rawValue: 0xB2), wallClock: .fixed(1_700_000_000_100))
    var tablet = Replica(id: ReplicaID(rawValue: 0xC3), wallClock: .fixed(1_700_000_000_200))
    let typed = phone.transact { tx in
      tx.create(note)
      tx.insertText("Hello 🌍🌱!", at: 0, in: "body", of: note)
    }
    laptop.apply(typed.delta)
    tablet.apply(typed.delta)
    // Three inserts after "Hello", concurrently: between the same origins, by id.
    let onLaptop = laptop.transact { tx in tx.insertText(" dear", at: 5, in: "body", of: note) }
    let tabletFirst = tablet.transact { tx in tx.insertText(" big", at: 5, in: "body", of: note) }
    phone.transact { tx in
      tx.insertText(",", at: 5, in: "body", of: note)
      tx.deleteText(7..<8, in: "body", of: note)  // the globe
    }
    // The tablet goes on from its own insert: "biggest", then drops the "b".
    let tabletSecond = tablet.transact { tx in
      tx.insertText("gest", at: 9, in: "body", of: note)
      tx.deleteText(6..<7, in: "body", of: note)
    }
    phone.apply(onLaptop.delta)
    phone.apply(tabletSecond.delta)
    return (phone.document, tabletFirst.delta)
  }()
}

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
