import Converge
import ConvergeTestSupport
import Foundation
import Testing

/// Golden files pin the wire format: every later version of Converge must decode them to
/// the same values and encode those values to the same bytes.
///
/// The files live in `Tests/ConvergeTests/Fixtures/` and ship as a copied resource of the
/// test target, loaded through `Bundle.module` (which works on Linux and Apple
/// platforms alike). What they hold is `CodecFixtures` (in `ConvergeTestSupport`); after a
/// deliberate format change (a new format version, never an edit of version 1),
/// `swift run converge fixtures --write Tests/ConvergeTests/Fixtures` writes them again.
@Suite struct CodecFixtureTests {
  /// Document states of the form before the shared content code (message kind 3): they
  /// are read, never written, and decode to the same documents as before.
  static let legacyFixtures: [(name: String, document: Document)] = [
    ("legacy-document-v2.bin", DocumentFixtureScenario.document),
    ("legacy-text-state-v2.bin", TextStateFixtureScenario.document),
    ("legacy-text-coded-v2.bin", CodedTextFixture.document),
  ]

  private func load(_ name: String) throws -> [UInt8] {
    let url = try #require(
      Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
      "fixture \(name) missing from the test bundle")
    return Array(try Data(contentsOf: url))
  }

  @Test func versionVectorFixtureDecodesAndReencodesExactly() throws {
    let bytes = try load("version-vector-v2.bin")
    let vector = try VersionVector(decoding: bytes)
    #expect(vector == CodecFixtures.versionVector)
    #expect(vector.encoded() == bytes)
    let empty = try load("version-vector-empty-v2.bin")
    #expect(try VersionVector(decoding: empty) == VersionVector())
    #expect(VersionVector().encoded() == empty)
  }

  @Test func causalContextFixtureDecodesAndReencodesExactly() throws {
    let bytes = try load("causal-context-v2.bin")
    let context = try CausalContext(decoding: bytes)
    #expect(context == CodecFixtures.causalContext)
    #expect(context.counters(of: ReplicaID(rawValue: 0x11)).ranges == [1...5, 8...8, 10...12])
    #expect(context.encoded() == bytes)
  }

  /// Version 1 messages order concurrent text by the old rule and carry no right
  /// origins: a store's files, a relay's rows or a peer's messages in that version are
  /// refused with an error naming it, never misread.
  @Test(arguments: [
    "version-vector-v1.bin", "version-vector-empty-v1.bin", "causal-context-v1.bin",
    "document-v1.bin", "document-delta-v1.bin", "text-edit-delta-v1.bin", "text-state-v1.bin",
    "text-coded-v1.bin",
  ])
  func version1IsRefusedByName(name: String) throws {
    let bytes = try load(name)
    #expect(throws: ConvergeDecodingError.unsupportedVersion(1)) {
      _ = try Document(decoding: bytes)
    }
    #expect(throws: ConvergeDecodingError.unsupportedVersion(1)) {
      _ = try DocumentDelta(decoding: bytes)
    }
    #expect(throws: ConvergeDecodingError.unsupportedVersion(1)) {
      _ = try VersionVector(decoding: bytes)
    }
  }

  @Test func legacyDocumentStatesStillDecode() throws {
    for (name, document) in Self.legacyFixtures {
      let bytes = try load(name)
      #expect(try Envelope.open(bytes).kind == .legacyDocumentState, "\(name)")
      let decoded = try Document(decoding: bytes)
      #expect(decoded == document, "\(name)")
      // Its decoder takes exactly what an earlier build wrote; saved again, the
      // document takes the current form.
      #expect(decoded.legacyEncoded() == bytes, "\(name)")
      #expect(try Envelope.open(decoded.encoded()).kind == .documentState, "\(name)")
      #expect(try Document(decoding: decoded.encoded()) == document, "\(name)")
      var restored = try Replica(restoring: bytes, wallClock: .fixed(0))
      #expect(restored.document == document, "\(name)")
      restored.transact { $0.setValue(.bool(true), for: "read", of: EntityKey(type: "n", id: "1")) }
      // The restored replica edits on: its new write is there, beside the old entities.
      #expect(
        restored.document.value(of: "read", in: EntityKey(type: "n", id: "1")) == .bool(true),
        "\(name)")
      #expect(restored.document.keys.count == document.keys.count + 1, "\(name)")
    }
  }

  /// A text edit of the earlier form (message kind 6): read, never written.
  @Test func legacyTextEditStillDecodes() throws {
    let bytes = try load("text-edit-delta-v2.bin")
    #expect(try Envelope.open(bytes).kind == .legacyTextEditDelta)
    let delta = try DocumentDelta(decoding: bytes)
    #expect(delta == TextEditFixtureScenario.edit)
    #expect(delta.legacyEncoded() == bytes)
    #expect(try Envelope.open(delta.encoded()).kind == .textEditDelta)
  }

  @Test func fixturesMatchTheirGenerators() throws {
    for (name, bytes) in CodecFixtures.files {
      #expect(try load(name) == bytes, "\(name) differs from what this build encodes")
    }
  }
}
