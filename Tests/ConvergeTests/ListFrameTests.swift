import ConvergeTestSupport
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// List edits in session frames (`FORMAT.md` §8.7, the list item record): an insert or
/// a move travels as its slot's runs and one item record, decodes to exactly the
/// committed delta, and a move costs at most 40 bytes; a removal travels embedded.
@Suite struct ListFrameTests {
  private static let column = EntityKey(type: "column", id: "todo")

  /// Whether `frame` carries its delta embedded (its first record is the embedded one).
  private static func isEmbedded(_ frame: [UInt8]) throws -> Bool {
    let header = try SessionStream.header(of: frame[...])
    let bodyStart = frame.count - 4 - header.bodyLength
    return frame[bodyStart] == SessionStream.RecordType.embedded.rawValue
  }

  @Test func listEditsTravelAsRecordsAndDecodeExactly() throws {
    try forEachSeed(count: 20, base: 0x4C15_7F00) { random in
      let seed = random.seed
      var phone = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(1_700_000_000_000))
      var laptop = Replica(id: ReplicaID(rawValue: 0xB2), wallClock: .fixed(1_700_000_000_100))
      var encoder = SessionStream(streamID: random.next())
      var decoder = SessionStream()
      var moveFrames: [Int] = []
      for step in 0..<120 {
        // Now and then the laptop edits too, and the phone learns of it outside the stream.
        if step % 10 == 9 {
          let count = laptop.document.list(of: "cards", in: Self.column).count
          let from = Int.random(in: 0..<Swift.max(1, count), using: &random)
          let moved = laptop.transact {
            $0.move(from: from, to: 0, inList: "cards", of: Self.column)
          }
          phone.apply(moved.delta)
        }
        let count = phone.document.list(of: "cards", in: Self.column).count
        let kind = count < 4 ? 0 : Int.random(in: 0..<10, using: &random)
        let commit = phone.transact { tx in
          switch kind {
          case 0, 1:
            tx.insert(
              .string("card\(step)"), at: Int.random(in: 0...count, using: &random),
              intoList: "cards", of: Self.column)
          case 2:
            tx.remove(
              at: Int.random(in: 0..<count, using: &random), fromList: "cards", of: Self.column)
          default:
            tx.move(
              from: Int.random(in: 0..<count, using: &random),
              to: Int.random(in: 0..<count, using: &random), inList: "cards", of: Self.column)
          }
        }
        guard !commit.delta.isEmpty else { continue }
        let frame = encoder.encode(commit.delta)
        let decoded = try decoder.decode(frame[...])
        #expect(decoded == commit.delta, "seed \(seed)")
        laptop.apply(decoded)
        // Only a removal needs the embedded form.
        #expect(try Self.isEmbedded(frame) == (kind == 2), "seed \(seed)")
        if kind >= 3, step > 0 { moveFrames.append(frame.count) }
      }
      #expect(laptop.document == phone.document, "seed \(seed)")
      #expect(moveFrames.allSatisfy { $0 <= 40 }, "seed \(seed): \(moveFrames.max() ?? 0) B")
    }
  }

  /// The golden stream pins the list item record: it decodes, frame by frame, to the
  /// deltas that made it, and only the removal is embedded.
  @Test func goldenListFrameStreamDecodes() throws {
    let url = try #require(
      Bundle.module.url(
        forResource: "session-list-frames-v2.bin", withExtension: nil, subdirectory: "Fixtures"))
    let golden = Array(try Data(contentsOf: url))
    #expect(golden == ListFramesFixture.stream)
    let deltas = ListFramesFixture.frames().deltas
    var reader = ByteReader(golden)
    var decoder = SessionStream()
    var embedded: [Int] = []
    var index = 0
    while !reader.isAtEnd {
      let frame = Array(try reader.readLengthPrefixedBytes())
      if try Self.isEmbedded(frame) { embedded.append(index) }
      let decoded = try decoder.decode(frame[...])
      #expect(index < deltas.count && decoded == deltas[index])
      index += 1
    }
    #expect(index == deltas.count)
    #expect(embedded == [5])
  }

  /// A list item record must follow exactly one slot insert of one scalar (and at most
  /// one delete of one slot) and end its frame.
  @Test func misplacedListItemRecordsAreRefused() throws {
    var phone = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(1_700_000_000_000))
    let created = phone.transact { tx in
      for (index, card) in ["A", "B", "C"].enumerated() {
        tx.insert(.string(card), at: index, intoList: "cards", of: Self.column)
      }
    }
    let moved = phone.transact { $0.move(from: 0, to: 2, inList: "cards", of: Self.column) }
    var encoder = SessionStream(streamID: 7)
    var decoder = SessionStream()
    _ = try decoder.decode(encoder.encode(created.delta)[...])
    let before = encoder.records.lastTimestamp
    // The target and author are known: the frame holds the insert, the delete, the item.
    let frame = encoder.encode(moved.delta)
    #expect(!(try Self.isEmbedded(frame)))
    var item = ByteWriter()
    item.writeUInt8(SessionStream.RecordType.listItem.rawValue)
    FieldValue.string("A").write(to: &item)
    item.writeVarInt(Int64(truncatingIfNeeded: encoder.records.lastTimestamp &- before))
    let header = try SessionStream.header(of: frame[...])
    let body = Array(frame[(frame.count - 4 - header.bodyLength)..<(frame.count - 4)])
    try #require(Array(body.suffix(item.count)) == item.bytes)
    let runs = Array(body.dropLast(item.count))
    let variants: [(body: [UInt8], valid: Bool)] = [
      (body, true),
      (runs + item.bytes + item.bytes, false),  // a second item record
      (runs + item.bytes + [SessionStream.RecordType.author.rawValue, 1], false),
      (item.bytes, false),  // no slot placed
      (Array(runs.prefix(1)) + item.bytes, false),  // a cut insert record
    ]
    for variant in variants {
      var writer = ByteWriter()
      writer.writeBytes(frame[..<2])
      writer.writeVarUInt(UInt64(variant.body.count))
      writer.writeBytes(variant.body)
      writer.writeBytes([0, 0, 0, 0])
      let sealed = SessionFrameTests.reseal(writer.bytes, stream: 7, sequence: 1)
      var copy = decoder
      if variant.valid {
        #expect(try copy.decode(sealed[...]) == moved.delta)
      } else {
        #expect(throws: ConvergeDecodingError.self) { _ = try copy.decode(sealed[...]) }
      }
    }
  }
}
