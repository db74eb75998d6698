import ConvergeTestSupport
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// Well-formed but hostile messages: bytes a correct encoder writes for a delta no correct
/// replica makes. Each is refused with a typed error, or applied so that the replicas
/// still converge and keep every invariant; run these also in a build with
/// `-DCONVERGE_INTERNAL_CHECKS`, where every apply checks the invariants.
@Suite struct HostileMessageTests {
  private let hostile = ReplicaID(rawValue: 0x0BAD)
  private let note = EntityKey(type: "note", id: "n1")

  private func dot(_ counter: UInt64) -> Dot { Dot(replica: hostile, counter: counter) }

  private func delta(
    context counters: [ClosedRange<UInt64>], presence: Presence, fields: FieldTable<FieldDelta>
  ) -> DocumentDelta {
    var delta = DocumentDelta()
    for range in counters { delta.context.insert(replica: hostile, counters: range) }
    delta.entities[note] = EntityDelta(presence: presence, fields: fields)
    return delta
  }

  private func register(_ counter: UInt64) -> FieldDelta {
    .register(
      LWWRegister(
        value: .string("mine"),
        stamp: .init(timestamp: Timestamp(wallMilliseconds: 5), dot: dot(counter))))
  }

  /// Decoding `bytes` must throw a ``ConvergeDecodingError``.
  private func expectRefused(_ bytes: [UInt8], _ comment: Comment) {
    #expect(throws: ConvergeDecodingError.self, comment) { try DocumentDelta(decoding: bytes) }
  }

  @Test func aRegisterWriteOutsideItsDeltasContextIsRefused() {
    let bytes = delta(context: [1...1], presence: .add(dot(2)), fields: ["title": register(2)])
      .encoded()
    expectRefused(bytes, "register dot not in the context")
  }

  @Test func aRegisterWriteNewerThanItsEntitysVersionIsRefused() {
    let bytes = delta(context: [1...2], presence: .add(dot(1)), fields: ["title": register(2)])
      .encoded()
    expectRefused(bytes, "register dot above the entity's presence")
  }

  @Test func aSetElementThatWasNeverAddedIsRefused() {
    let element = Presence(added: VersionVector(), removed: VersionVector([hostile: 1]))
    let bytes = delta(
      context: [1...1], presence: .add(dot(1)), fields: ["tags": .set([.string("x"): element])]
    ).encoded()
    expectRefused(bytes, "set element with no add")
  }

  /// A run whose origin is its own first id, or an id inside it, can never be placed.
  @Test func aTextRunWhoseOriginIsItselfOrInsideItIsRefused() {
    for origin in [dot(3), dot(4)] {
      let run = RGADelta.Insert(
        id: dot(3), lamport: 3, origin: origin, rightOrigin: nil, scalars: ["a", "b"])
      let bytes = delta(
        context: [3...4], presence: .add(dot(4)),
        fields: ["body": .text(RGADelta(inserts: [run], deletes: []))]
      ).encoded()
      expectRefused(bytes, "origin \(origin)")
      var stream = SessionStream(streamID: 1)
      var receiving = SessionStream()
      let edit = delta(
        context: [3...4], presence: .add(dot(4)),
        fields: ["body": .text(RGADelta(inserts: [run], deletes: []))])
      #expect(throws: ConvergeDecodingError.self) { try receiving.decode(stream.encode(edit)[...]) }
    }
  }

  /// An insert and a delete of one replica that claim the same counter: one dot, two events.
  @Test func anInsertAndADeleteSharingADotAreRefused() {
    let insert = RGADelta.Insert(
      id: dot(5), lamport: 5, origin: nil, rightOrigin: nil, scalars: ["a"])
    let delete = RGADelta.Delete(dot: dot(5), target: dot(5), count: 1, isDescending: false)
    let edit = delta(
      context: [5...5], presence: .add(dot(5)),
      fields: ["body": .text(RGADelta(inserts: [insert], deletes: [delete]))])
    expectRefused(edit.encoded(), "insert and delete share a dot")
    var stream = SessionStream(streamID: 1)
    var receiving = SessionStream()
    let frame = stream.encode(edit)
    #expect(throws: ConvergeDecodingError.self) { try receiving.decode(frame[...]) }
    #expect(receiving == SessionStream())
  }

  /// Two insert runs of one replica over the same counters, with different scalars: a
  /// frame can state them (counters need not be predicted), and must be refused.
  @Test func insertRunsWhoseCountersOverlapAreRefusedInAFrame() throws {
    let first = RGADelta.Insert(
      id: dot(5), lamport: 5, origin: nil, rightOrigin: nil, scalars: ["a", "b"])
    let second = RGADelta.Insert(
      id: dot(6), lamport: 9, origin: nil, rightOrigin: nil, scalars: ["c"])
    let edit = delta(
      context: [5...6], presence: .add(dot(6)),
      fields: ["body": .text(RGADelta(inserts: [first, second], deletes: []))])
    // The encoder sends such runs embedded; a hostile sender writes the records itself.
    var stream = SessionStream(streamID: 1)
    #expect(stream.encode(edit)[11] == SessionStream.RecordType.embedded.rawValue)
    var body = ByteWriter()
    body.writeBytes([SessionStream.RecordType.target.rawValue, 0])
    body.writeString(note.type)
    body.writeString(note.id)
    body.writeUInt8(0)
    body.writeString("body")
    body.writeBytes([SessionStream.RecordType.author.rawValue, 0])
    body.writeUInt64(hostile.rawValue)
    // "ab" at 5...6, then "c" at 6 again: stated counters, head origins.
    body.writeBytes([0x20, 5, 2, ByteWriter.zigzag(4).lowByte, 0x61, 0x62])
    body.writeBytes([0xA0, 6, ByteWriter.zigzag(2).lowByte, 0x63])
    var frame = ByteWriter()
    frame.writeBytes([SessionStream.magic, SessionStream.version | SessionStream.startFlag])
    frame.writeUInt64(1)
    frame.writeVarUInt(body.bytes.count)
    frame.writeBytes(body.bytes)
    frame.writeUInt32(SessionStream.checksum(frame.bytes, stream: 1, sequence: 0))
    var receiving = SessionStream()
    #expect(throws: ConvergeDecodingError.self) { try receiving.decode(frame.bytes[...]) }
    #expect(receiving == SessionStream())
    // The general form cannot state them: it keeps each counter once.
    let decoded = try DocumentDelta(decoding: edit.encoded())
    #expect(decoded.context == edit.context)
  }

  /// A frame can only be at the position its checksum proves: a frame sealed for a
  /// sequence number far ahead, or for one before the stream started, changes nothing.
  @Test func aFrameAtAPositionItCannotHaveChangesNothing() throws {
    var sender = Replica(id: hostile, wallClock: .fixed(1))
    var senderStream = SessionStream(streamID: 42)
    let frames = (0..<3).map { offset in
      senderStream.encode(
        sender.transact { $0.insertText("x", at: offset, in: "body", of: note) }.delta)
    }
    var receiving = SessionStream()
    // Before its start frame, no frame of the stream decodes.
    #expect(throws: ConvergeDecodingError.self) { try receiving.decode(frames[1][...]) }
    #expect(receiving == SessionStream())
    _ = try receiving.decode(frames[0][...])
    let started = receiving
    for sequence: UInt64 in [UInt64.max, SessionStream.lookahead + 5, 1 << 40] {
      let moved = SessionFrameTests.reseal(frames[1], stream: 42, sequence: sequence)
      #expect(throws: ConvergeDecodingError.self) { try receiving.decode(moved[...]) }
      #expect(receiving == started, "sequence \(sequence)")
    }
  }
}

extension UInt64 {
  fileprivate var lowByte: UInt8 { UInt8(truncatingIfNeeded: self) }
}

/// Decoded lengths and counts become `Int`s only through a checked conversion, so that
/// a value above `Int32.max` is a typed error on a 32-bit platform, not a trap.
@Suite struct DecodedLengthWidthTests {
  @Test func aLengthBeyondIntIsATypedError() throws {
    #expect(throws: ConvergeDecodingError.countTooLarge(offset: 7)) {
      try ByteReader.checkedInt(UInt64(Int.max) + 1, at: 7)
    }
    #expect(try ByteReader.checkedInt(UInt64(Int.max), at: 0) == Int.max)
  }
}
