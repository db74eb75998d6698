import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The parent field's wire form (§8.3.3): what a move costs, and the malformed forms a
/// decoder refuses by name.
@Suite struct ParentWireTests {
  let node = EntityKey(type: "task", id: "b")

  /// A delta writing `value` into the parent field of `node` (a register of tag 05).
  private func delta(_ value: FieldValue?) -> DocumentDelta {
    let dot = Dot(replica: ReplicaID(rawValue: 7), counter: 1)
    var entity = EntityDelta(presence: .add(dot))
    var register = LWWRegister<FieldValue>()
    if let value {
      register.set(value, stamp: .init(timestamp: Timestamp(wallMilliseconds: 5_000), dot: dot))
    }
    entity.fields["parent"] = .parent(register)
    var delta = DocumentDelta()
    delta.context.insert(dot)
    delta.entities[node] = entity
    return delta
  }

  /// `message` with its checksum recomputed, as a writer of those bytes would seal it.
  private func resealed(_ message: [UInt8]) -> [UInt8] {
    var bytes = message
    let checksum = CRC32C.checksum(bytes.dropLast(4))
    for index in 0..<4 {
      bytes[bytes.count - 4 + index] = UInt8(truncatingIfNeeded: checksum >> (index * 8))
    }
    return bytes
  }

  @Test func aMoveRoundTrips() throws {
    let move = ParentMove(parent: EntityKey(type: "task", id: "a"), previous: nil)
    let sent = delta(move.fieldValue)
    let received = try DocumentDelta(decoding: sent.encoded())
    var document = Document()
    document.apply(received)
    #expect(document.parentMove(of: "parent", in: node) == move)
    #expect(document.fieldKind("parent", of: node) == .parent)
    // A parent field never written travels as its flag alone.
    var empty = Document()
    empty.apply(try DocumentDelta(decoding: delta(nil).encoded()))
    #expect(empty.parentMove(of: "parent", in: node) == nil)
  }

  @Test func aValueThatIsNotAMoveIsRefused() {
    for value: FieldValue in [
      .string("a"), .record(["to": .string("a"), "from": .null]),
      .record(["to": .null]), .record(["to": .null, "from": .null, "x": .null]),
      .record(["to": .record(["task": .int(1)]), "from": .null]),
    ] {
      #expect(throws: ConvergeDecodingError.self, "\(value)") {
        try DocumentDelta(decoding: delta(value).encoded())
      }
    }
  }

  @Test func aFlagOtherThanZeroOrOneIsRefused() throws {
    let bytes = delta(nil).encoded()
    // The field's tag 05 is followed by the flag 00: find the name, then its tag.
    let name = Array("parent".utf8)
    let at = try #require(
      (0...(bytes.count - name.count)).first { Array(bytes[$0..<($0 + name.count)]) == name })
    #expect(Array(bytes[(at + name.count)...(at + name.count + 1)]) == [5, 0])
    var forged = Array(bytes)
    forged[at + name.count + 1] = 2
    #expect(throws: ConvergeDecodingError.self) {
      try DocumentDelta(decoding: resealed(forged))
    }
  }
}
