import ConvergeTestSupport
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// Encoder and decoder choose between the text edit form and the general form by one
/// rule (``DocumentDelta/textEditBody``), and that rule must give the same answer for a delta
/// and for its decoded copy: the wire drops the content of scalars the message deletes
/// and writes placeholders for tombstones that lost theirs, so the rule counts an insert
/// run's ids, never its content.
@Suite struct TextEditFormChoiceTests {
  private let author = ReplicaID(rawValue: 0xA1)
  private let note = EntityKey(type: "note", id: "n1")

  private func dot(_ counter: UInt64) -> Dot { Dot(replica: author, counter: counter) }

  /// A delta of `runs` whose context is exactly their dots and whose presence adds the
  /// latest: the text edit form.
  private func textEdit(_ runs: RGADelta, counters: ClosedRange<UInt64>) -> DocumentDelta {
    var delta = DocumentDelta()
    delta.context.insert(replica: author, counters: CounterRanges(counters))
    delta.entities[note] = EntityDelta(
      presence: .add(Dot(replica: author, counter: counters.upperBound)),
      fields: ["body": .text(runs)])
    return delta
  }

  /// `FailCases/replica-script-text-edit-form.bin` (FuzzReplicaScript): a peer re-sent
  /// a tombstone run whose content it never had. The encoder counted the run's dots by
  /// its (empty) content, found the context larger than the runs and wrote the general
  /// form; the decoder, reading placeholder content, found the text edit form and
  /// refused the message.
  @Test func aTombstoneRunWithoutContentTakesTheTextEditForm() throws {
    let tombstones = RGADelta.Insert(
      id: Dot(replica: author, counter: 2), lamport: 2,
      origin: Dot(replica: author, counter: 1), rightOrigin: nil, droppedLength: 2)
    let delete = RGADelta.Delete(
      dot: Dot(replica: author, counter: 4), target: Dot(replica: author, counter: 1), count: 1,
      isDescending: false)
    let delta = textEdit(RGADelta(inserts: [tombstones], deletes: [delete]), counters: 2...4)
    let bytes = delta.encoded()
    #expect(bytes[5] == MessageKind.textEditDelta.rawValue)
    let decoded = try DocumentDelta(decoding: bytes)
    #expect(decoded.context == delta.context)
    #expect(decoded.encoded() == bytes)
  }

  /// The shape of `converge simulate --seed 100212 … --frames` ("1 messages did not decode
  /// with the transport"): a handshake's answer held a typed run whose tail had lost its
  /// content (tombstones whose deletes the peer already knew).
  @Test func aRunWhoseTailLostItsContentTakesTheTextEditForm() throws {
    let typed = RGADelta.Insert(
      id: dot(2), lamport: 2, origin: dot(1), rightOrigin: nil, scalars: Array("at".unicodeScalars))
    let tail = RGADelta.Insert(
      id: dot(4), lamport: 4, origin: dot(3), rightOrigin: nil, droppedLength: 3)
    let delta = textEdit(RGADelta(inserts: [typed, tail], deletes: []), counters: 2...6)
    let bytes = delta.encoded()
    #expect(bytes[5] == MessageKind.textEditDelta.rawValue)
    #expect(try DocumentDelta(decoding: bytes).context == delta.context)
  }

  /// One transaction types "ab" and deletes the "b": the wire leaves out the deleted
  /// scalar's content, and the decoder must still count its dot, in the context it
  /// derives. Records cannot leave content out, so such an edit takes the general form.
  @Test func aRunPartlyDeletedByItsOwnMessageKeepsEveryDotInTheContext() throws {
    var phone = Replica(id: author, wallClock: .fixed(1_000))
    var laptop = phone.forked(as: ReplicaID(rawValue: 0xB2))
    let created = phone.transact { tx in tx.create(note) }
    try laptop.apply(encodedDelta: created.delta.encoded())
    let edit = phone.transact { tx in
      tx.insertText("ab", at: 0, in: "body", of: note)
      tx.deleteText(1..<2, in: "body", of: note)
    }
    let bytes = edit.delta.encoded()
    #expect(bytes[5] == MessageKind.documentDelta.rawValue)
    let decoded = try DocumentDelta(decoding: bytes)
    #expect(decoded.context == edit.delta.context)
    #expect(decoded.encoded() == bytes)
    #expect(edit.delta.legacyEncoded()[5] == MessageKind.legacyTextEditDelta.rawValue)
    try laptop.apply(encodedDelta: bytes)
    #expect(laptop.document == phone.document)
    #expect(laptop.document.text(of: "body", in: note) == "a")
  }
}
