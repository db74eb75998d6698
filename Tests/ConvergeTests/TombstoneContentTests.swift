import Converge
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCRDTs
@testable import ConvergeCodec
@testable import ConvergeDocument

/// Deleted scalars keep their ids but not their content: states and deltas do not carry
/// it, and a run that arrives without content integrates as a tombstone.
@Suite struct TombstoneContentTests {
  static let note = EntityKey(type: "note", id: "n1")

  @Test func statesDoNotCarryDeletedContent() throws {
    var replica = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(1_700_000_000_000))
    _ = replica.transact { tx in
      tx.create(Self.note)
      tx.insertText("hello QQQQQQQQ world", at: 0, in: "body", of: Self.note)
    }
    _ = replica.transact { tx in tx.deleteText(6..<15, in: "body", of: Self.note) }
    let bytes = replica.document.encoded()
    #expect(!bytes.contains(UInt8(ascii: "Q")))
    let decoded = try Document(decoding: bytes)
    #expect(decoded == replica.document)
    #expect(decoded.encoded() == bytes)
  }

  @Test func deltasDoNotCarryTheContentTheyDelete() throws {
    var sender = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(1_700_000_000_000))
    var receiver = Replica(
      id: ReplicaID(rawValue: 0xB2), wallClock: .fixed(1_700_000_000_000))
    let result = sender.transact { tx in
      tx.create(Self.note)
      tx.insertText("keep QQQQ", at: 0, in: "body", of: Self.note)
      tx.deleteText(5..<9, in: "body", of: Self.note)
    }
    let bytes = result.delta.encoded()
    #expect(!bytes.contains(UInt8(ascii: "Q")))
    let decoded = try DocumentDelta(decoding: bytes)
    #expect(decoded == result.delta)
    receiver.apply(decoded)
    #expect(receiver.document == sender.document)
    #expect(receiver.document.encoded() == sender.document.encoded())
  }

  /// A run without content integrates as a tombstone whether its delete comes first,
  /// after it, or never (the receiver knew it), and whether its origin is there or not.
  @Test func runsWithoutContentIntegrateInAnyOrder() {
    var writer = TestPeer(1)
    let typed = writer.insert(Array("abcdef".unicodeScalars), at: 0)
    let deleted = writer.delete(1..<5)
    let tail = writer.insert(Array("gh".unicodeScalars), at: 2)
    let full = writer.rga.delta(since: CausalContext())
    // The same history with the deleted scalars' content dropped.
    let deletedRange = Dot(replica: writer.replica, counter: 2)
    var dropped: [RGADelta.Insert] = []
    for insert in full.inserts {
      for (range, isDeleted) in RGADelta.DeletedRanges(full.deletes).pieces(
        replica: insert.id.replica, insert.id.counter,
        insert.id.counter + UInt64(insert.length))
      {
        let piece = insert.slice(
          from: Int(range.lowerBound - insert.id.counter), length: range.count)
        dropped.append(isDeleted ? piece.droppingContent : piece)
      }
    }
    #expect(dropped.contains { $0.isContentDropped && $0.id == deletedRange })
    let withoutContent = RGADelta(inserts: dropped, deletes: full.deletes)
    #expect(withoutContent == full)

    var deleteFirst = RGA()
    deleteFirst.apply(RGADelta(inserts: [], deletes: full.deletes))
    deleteFirst.apply(RGADelta(inserts: dropped, deletes: []))
    var insertFirst = RGA()
    for insert in dropped.reversed() {
      insertFirst.apply(RGADelta(inserts: [insert], deletes: []))
    }
    #expect(insertFirst.string == "afgh" || insertFirst.count == 6)
    insertFirst.apply(RGADelta(inserts: [], deletes: full.deletes))
    var together = RGA()
    together.apply(withoutContent)
    var original = RGA()
    original.apply(typed)
    original.apply(deleted)
    original.apply(tail)
    for text in [deleteFirst, insertFirst, together] {
      #expect(Bool(text == writer.rga))
      #expect(Bool(text == original))
      #expect(text.string == writer.rga.string)
      #expect(text.pendingCount == 0)
      text._checkInvariants()
    }
    // A text that holds tombstones without content sends them on without content, and
    // a peer that knows the deletes already integrates them.
    var relay = RGA()
    relay.apply(RGADelta(inserts: [], deletes: full.deletes))
    relay.apply(together.delta(since: relay.dots))
    #expect(Bool(relay == writer.rga))
    #expect(relay.string == "afgh")
  }

  /// Tombstones take no content, so their lengths are bounded by the Lamport range only:
  /// huge ones integrate and buffer without allocating and without overflowing counts.
  @Test func hugeTombstonesWithoutContentStayCheap() {
    let length = 1 << 61
    var inserts: [RGADelta.Insert] = []
    for raw in 1...4 as ClosedRange<UInt64> {
      inserts.append(
        RGADelta.Insert(
          id: Dot(replica: ReplicaID(rawValue: raw), counter: 1), lamport: 2,
          origin: Dot(replica: ReplicaID(rawValue: 9), counter: 1), rightOrigin: nil,
          droppedLength: length))
    }
    var text = RGA()
    text.apply(RGADelta(inserts: inserts, deletes: []))
    #expect(text.pendingCount == .max)
    text.apply(
      RGADelta(
        inserts: [
          RGADelta.Insert(
            id: Dot(replica: ReplicaID(rawValue: 9), counter: 1), lamport: 1, origin: nil,
            rightOrigin: nil,
            scalars: ["x"])
        ], deletes: []))
    #expect(text.pendingCount == 0 && text.string == "x")
    text._checkInvariants()
    var copy = RGA()
    copy.apply(text.delta(since: CausalContext()))
    #expect(Bool(copy == text))
  }
}
