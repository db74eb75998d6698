import Converge
import Testing

/// Two spellings of one character ("é" as one scalar, and "e" with a combining accent)
/// are equal `String`s in Swift (canonical equivalence) but different bytes on the wire.
/// A set's tags, an entity's id and a field's name take Swift's view: the two spellings
/// are one tag, one entity, one field, on every replica, and nothing written is lost.
///
/// Known issue (found in the twentieth session, not fixed): each replica keeps the
/// spelling that reached it first, so two replicas that met the spellings in different
/// orders hold equal documents in two encodings. The byte comparisons below are expected
/// to fail until a replica keeps one deterministic spelling (the byte-least, say); Swift
/// Testing reports the known issue as fixed when they pass, so the fix cannot go unseen.
@Suite struct CanonicalSpellingTests {
  static let composed = "caf\u{E9}"
  static let decomposed = "cafe\u{301}"
  static let note = EntityKey(type: "note", id: "n")

  /// Two replicas that each wrote one spelling with `write`, then exchanged deltas.
  static func exchange(
    _ write: (inout DocumentTransaction, String) -> Void
  ) -> (Replica, Replica) {
    var phone = Replica(id: ReplicaID(rawValue: 1))
    let created = phone.transact { $0.setValue(.string("x"), for: "title", of: note) }
    var laptop = Replica(id: ReplicaID(rawValue: 2))
    laptop.apply(created.delta)
    let fromPhone = phone.transact { write(&$0, composed) }.delta
    let fromLaptop = laptop.transact { write(&$0, decomposed) }.delta
    phone.apply(fromLaptop)
    laptop.apply(fromPhone)
    return (phone, laptop)
  }

  @Test func aTagInTwoSpellingsIsOneTag() {
    let (phone, laptop) = Self.exchange { $0.insert(.string($1), into: "tags", of: Self.note) }
    #expect(phone.document == laptop.document)
    #expect(phone.document.elements(of: "tags", in: Self.note).count == 1)
    withKnownIssue("each replica keeps the spelling it met first") {
      #expect(phone.encodedState() == laptop.encodedState())
    }
  }

  @Test func anIDInTwoSpellingsIsOneEntity() {
    let (phone, laptop) = Self.exchange { transaction, spelling in
      transaction.setValue(.string("A"), for: "title", of: EntityKey(type: "note", id: spelling))
    }
    #expect(phone.document.keys.count == 2 && laptop.document.keys.count == 2)
    withKnownIssue("each replica keeps the spelling it met first") {
      #expect(phone.encodedState() == laptop.encodedState())
    }
  }

  @Test func aFieldNameInTwoSpellingsIsOneField() {
    let (phone, laptop) = Self.exchange { $0.setValue(.string("A"), for: $1, of: Self.note) }
    #expect(phone.document.fieldNames(of: Self.note).count == 2)  // title and the one field
    #expect(laptop.document.fieldNames(of: Self.note).count == 2)
    withKnownIssue("each replica keeps the spelling it met first") {
      #expect(phone.encodedState() == laptop.encodedState())
    }
  }
}
