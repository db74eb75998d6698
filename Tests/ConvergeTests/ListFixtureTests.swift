import Converge
import ConvergeTestSupport
import Foundation
import Testing

/// The list golden files (`FORMAT.md` §8.3.2): they decode to the scenario's values and
/// encode to the same bytes; a build without list fields refuses them by name.
@Suite struct ListFixtureTests {
  private func load(_ name: String) throws -> [UInt8] {
    let url = try #require(
      Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
      "fixture \(name) missing from the test bundle")
    return Array(try Data(contentsOf: url))
  }

  @Test func listStateDecodesAndReencodesExactly() throws {
    let bytes = try load("list-v2.bin")
    let document = try Document(decoding: bytes)
    #expect(document == ListFixture.document)
    #expect(document.encoded() == bytes)
    #expect(document.fieldKind("cards", of: ListFixture.column) == .list)
    #expect(
      document.list(of: "cards", in: ListFixture.column)
        == ListFixture.document.list(of: "cards", in: ListFixture.column))
  }

  @Test func listMoveDeltaDecodesAndReencodesExactly() throws {
    let bytes = try load("list-move-delta-v2.bin")
    let delta = try DocumentDelta(decoding: bytes)
    #expect(delta == ListFixture.move)
    #expect(delta.encoded() == bytes)
  }

  /// Field tag 4 (and 5, a parent field) is what an older build does not know: its
  /// decoder answers `invalidValue(…, "unknown field kind")`. Here, a tag past 5 stands in
  /// for it.
  @Test func anUnknownFieldKindIsRefusedByName() throws {
    let bytes = try load("list-move-delta-v2.bin")
    let tag = Self.listTagOffset(in: bytes)
    #expect(bytes[tag] == 4)
    var later = bytes
    later[tag] = 6
    #expect(throws: ConvergeDecodingError.self) { _ = try DocumentDelta(decoding: later) }
    do {
      _ = try DocumentDelta(decoding: Self.resealed(later))
      Issue.record("a field tag 6 decoded")
    } catch ConvergeDecodingError.invalidValue(_, let reason) {
      #expect(reason == "unknown field kind")
    }
  }

  /// The offset of the list field's tag: right after the field name "cards".
  static func listTagOffset(in bytes: [UInt8]) -> Int {
    let name = Array("cards".utf8)
    for start in bytes.indices where bytes[start...].starts(with: name) {
      return start + name.count
    }
    return 0
  }

  /// `bytes` with its checksum computed again, so the body's own check is what fails.
  static func resealed(_ bytes: [UInt8]) -> [UInt8] {
    var body = Array(bytes.dropLast(4))
    let crc = CRC32C.checksum(body)
    for shift in stride(from: 0, to: 32, by: 8) {
      body.append(UInt8((crc >> UInt32(shift)) & 0xFF))
    }
    return body
  }
}
