import ConvergeTestSupport
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// A set element whose presence names dots outside its delta's context (and above its
/// entity's version) is applied, not refused: unlike a register write, an element is
/// re-sent whole to every peer whose gap-free prefix does not cover its entries
/// (``Presence/mayHaveEvents(unknownTo:)``), so a replica that missed the message still
/// gets it from a handshake, and the replicas converge with their invariants intact.
@Suite struct HostileSetElementTests {
  private let hostile = ReplicaID(rawValue: 0x0BAD)
  private let note = EntityKey(type: "note", id: "n1")

  @Test func aSetElementWithDotsOutsideItsContextIsAppliedAndReachesEveryReplica() throws {
    var phone = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(1_000))
    var laptop = phone.forked(as: ReplicaID(rawValue: 0xB2))
    let created = phone.transact { tx in
      tx.create(note)
      tx.insert(.string("a"), into: "tags", of: note)
    }
    try laptop.apply(encodedDelta: created.delta.encoded())

    // Context {bad:1}, entity version bad:1, element "x" added at bad:9.
    var hostileDelta = DocumentDelta()
    hostileDelta.context.insert(replica: hostile, counters: CounterRanges(1...1))
    let element = Presence(added: VersionVector([hostile: 9]), removed: VersionVector())
    hostileDelta.entities[note] = EntityDelta(
      presence: .add(Dot(replica: hostile, counter: 1)),
      fields: ["tags": .set([.string("x"): element])])
    try phone.apply(encodedDelta: hostileDelta.encoded())
    phone.document._checkInvariants()
    #expect(phone.document.elements(of: "tags", in: note).contains(.string("x")))

    // The laptop missed the message: one handshake's answer brings the element.
    try laptop.apply(encodedDelta: phone.delta(since: laptop.context).encoded())
    laptop.document._checkInvariants()
    #expect(laptop.document == phone.document)

    // A legitimate remove of the element, observed by both, takes it away on both.
    let removed = laptop.transact { tx in tx.remove(.string("x"), from: "tags", of: note) }
    try phone.apply(encodedDelta: removed.delta.encoded())
    phone.document._checkInvariants()
    #expect(phone.document == laptop.document)
    #expect(phone.document.elements(of: "tags", in: note) == [.string("a")])
  }
}
