import Converge
import Testing

// The code samples of the Merge Semantics article
// (`Sources/Converge/Converge.docc/MergeSemantics.md`), verbatim, kept compiling and
// passing. Edit the article and this file together.

/// The same note as a later app version declares it, with a `color` the first lacks.
struct NoteWithColor: EntityModel {  // the newer app's model
  static let entityType = "note"
  var title = ""
  var color: String?
  static let schema = EntitySchema<NoteWithColor>(
    .register("title", \.title), .register("color", \.color))
}

extension NoteWithColor: Equatable {}

@Suite struct MergeSemanticsArticleTests {
  let note = EntityKey(type: "note", id: "n1")
  static let noon: UInt64 = 1_700_000_000_000

  /// The article's setup: a phone (replica 1) and a laptop (replica 2) whose clocks read
  /// noon share `note`: title "Groceries", tag "home", body "milk".
  static func setUp() -> (phone: Replica, laptop: Replica) {
    let note = EntityKey(type: "note", id: "n1")
    let noon: UInt64 = 1_700_000_000_000  // milliseconds since 1970

    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(noon))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(noon))
    let setup = phone.transact { tx in
      tx.create(note)
      tx.setValue(.string("Groceries"), for: "title", of: note)
      tx.insert(.string("home"), into: "tags", of: note)
      tx.insertText("milk", at: 0, in: "body", of: note)
    }
    laptop.apply(setup.delta)

    return (phone, laptop)
  }

  @Test func differentFields() {
    var (phone, laptop) = Self.setUp()
    let a = phone.transact { $0.setValue(.string("Shopping"), for: "title", of: note) }
    let b = laptop.transact { $0.insert(.string("urgent"), into: "tags", of: note) }
    // title "Shopping", tags ["home", "urgent"]

    phone.apply(b.delta)
    laptop.apply(a.delta)
    // phone.document == laptop.document

    #expect(phone.document.value(of: "title", in: note) == .string("Shopping"))
    #expect(phone.document.elements(of: "tags", in: note) == [.string("home"), .string("urgent")])
    #expect(phone.document == laptop.document)
  }

  @Test func sameFieldTieBrokenByReplica() {
    var (phone, laptop) = Self.setUp()
    let a = phone.transact { $0.setValue(.string("Phone"), for: "title", of: note) }
    let b = laptop.transact { $0.setValue(.string("Laptop"), for: "title", of: note) }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    // Equal timestamps: the greater replica id (the laptop's, 2) wins on both.
    #expect(phone.document.value(of: "title", in: note) == .string("Laptop"))
    #expect(phone.document == laptop.document)
  }

  @Test func sameFieldLaterClockWins() {
    var (phone, laptop) = Self.setUp()
    laptop = laptop.forked(as: laptop.id, wallClock: .fixed(Self.noon + 5_000))
    // The laptop's clock reads noon + 5 s.
    let a = phone.transact { $0.setValue(.string("Phone"), for: "title", of: note) }
    let b = laptop.transact { $0.setValue(.string("Laptop"), for: "title", of: note) }
    // title "Laptop": the later timestamp

    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document.value(of: "title", in: note) == .string("Laptop"))
    #expect(phone.document == laptop.document)
  }

  @Test func clockSkew() {
    var (phone, laptop) = Self.setUp()
    phone = phone.forked(as: phone.id, wallClock: .fixed(Self.noon - 3 * 3_600_000))
    // The phone's clock is three hours behind.
    let laptopWrite = laptop.transact { $0.setValue(.string("Laptop"), for: "title", of: note) }
    phone.apply(laptopWrite.delta)
    let phoneWrite = phone.transact { $0.setValue(.string("Phone, later"), for: "title", of: note) }
    laptop.apply(phoneWrite.delta)
    // title "Phone, later" on both, although its wall time is hours earlier

    #expect(laptop.document.value(of: "title", in: note) == .string("Phone, later"))
    #expect(phone.document == laptop.document)
  }

  @Test func addWinsOverConcurrentRemove() {
    var (phone, laptop) = Self.setUp()
    let a = phone.transact { $0.remove(.string("home"), from: "tags", of: note) }
    let b = laptop.transact { $0.insert(.string("home"), into: "tags", of: note) }
    // tags ["home"]: the laptop's add was not seen by the phone's remove

    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document.elements(of: "tags", in: note) == [.string("home")])
    #expect(phone.document == laptop.document)
  }

  @Test func removeBeforeAddAndDuplicatedOldAdd() {
    var phone = Replica()
    var laptop = Replica()
    var tablet = Replica()
    let add = phone.transact { $0.insert(.string("red"), into: "tags", of: note) }
    laptop.apply(add.delta)
    let remove = laptop.transact { $0.remove(.string("red"), from: "tags", of: note) }
    tablet.apply(remove.delta)  // the remove arrives first …
    tablet.apply(add.delta)  // … then the add it observed: tags []
    laptop.apply(add.delta)  // a duplicated old add: tags []

    #expect(tablet.document.elements(of: "tags", in: note).isEmpty)
    #expect(laptop.document.elements(of: "tags", in: note).isEmpty)
    #expect(phone.document.elements(of: "tags", in: note) == [.string("red")])
  }

  @Test func deleteVersusConcurrentEdit() {
    var (phone, laptop) = Self.setUp()
    let a = phone.transact { $0.delete(note) }
    let b = laptop.transact { $0.setValue(.bool(true), for: "pinned", of: note) }
    // The note exists, with title "Groceries", tags ["home"], body "milk" and pinned true.

    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document.contains(note))
    #expect(phone.document.value(of: "title", in: note) == .string("Groceries"))
    #expect(phone.document.elements(of: "tags", in: note) == [.string("home")])
    #expect(phone.document.text(of: "body", in: note) == "milk")
    #expect(phone.document.value(of: "pinned", in: note) == .bool(true))
    #expect(phone.document == laptop.document)
  }

  @Test func deleteBeatsTheEditsItSaw() {
    var (phone, laptop) = Self.setUp()
    let edit = laptop.transact { $0.setValue(.string("Seen"), for: "title", of: note) }
    phone.apply(edit.delta)
    let delete = phone.transact { $0.delete(note) }
    laptop.apply(delete.delta)
    laptop.apply(edit.delta)  // late and duplicated: the note stays deleted

    #expect(!laptop.document.contains(note) && !phone.document.contains(note))
  }

  @Test func reCreatingADeletedEntityRevivesItsFields() {
    var (phone, _) = Self.setUp()
    phone.transact { $0.delete(note) }
    phone.transact { $0.create(note) }
    #expect(phone.document.value(of: "title", in: note) == .string("Groceries"))
  }

  @Test func stableDeletesAreForgotten() {
    var (phone, laptop) = Self.setUp()
    let delete = phone.transact { $0.delete(note) }
    laptop.apply(delete.delta)
    // Every device has reported its context; each forgets under their stable cut.
    let reports = [phone.document.context, laptop.document.context]
    let cut = CausalContext.stableCut(of: reports, seenBy: phone.document.context)
    phone.forgetDeleted(stable: cut)
    let body = phone.document.text(of: "body", in: note)  // "": gone, not just hidden
    phone.merge(laptop)  // the laptop has not forgotten yet: nothing comes back

    #expect(body.isEmpty && phone.document.text(of: "body", in: note).isEmpty)
    #expect(phone.document.fieldNames(of: note).isEmpty)
    #expect(laptop.document.text(of: "body", in: note) == "milk")
    #expect(phone.document.keys == laptop.document.keys)
  }

  @Test func concurrentCreationOfTheSameEntity() {
    var phone = Replica()
    var laptop = Replica()
    let a = phone.transact { tx in
      tx.create(note)
      tx.setValue(.string("From phone"), for: "title", of: note)
      tx.insertText("phone ", at: 0, in: "body", of: note)
    }
    let b = laptop.transact { tx in
      tx.create(note)
      tx.setValue(.bool(true), for: "flagged", of: note)
      tx.insertText("laptop ", at: 0, in: "body", of: note)
    }
    // One note: title "From phone", flagged true, body "phone laptop " or "laptop phone ".

    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document.keys == [note])
    #expect(phone.document.value(of: "title", in: note) == .string("From phone"))
    #expect(phone.document.value(of: "flagged", in: note) == .bool(true))
    // One text holding both inserts, each contiguous.
    let body = phone.document.text(of: "body", in: note)
    #expect(body == "phone laptop " || body == "laptop phone ")
    #expect(phone.document == laptop.document)
  }

  @Test func concurrentTextEditsDoNotInterleave() {
    var (phone, laptop) = Self.setUp()
    // The body is "milk"; both type at the end.
    let a = phone.transact { $0.insertText(" and eggs", at: 4, in: "body", of: note) }
    let b = laptop.transact { $0.insertText(" and bread", at: 4, in: "body", of: note) }
    // body "milk and eggs and bread" on both: the phone (replica 1) comes first

    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document.text(of: "body", in: note) == "milk and eggs and bread")
    #expect(phone.document == laptop.document)
  }

  @Test func unknownFieldsSurvive() throws {
    var newer = Replica()
    var older = Replica()
    var third = Replica()

    let created = newer.create(NoteWithColor(title: "Draft", color: "blue"), id: "n1")
    older.apply(created.commit.delta)
    try older.update(Note.self, id: "n1") { $0.title = "Final" }  // knows nothing of color
    third.apply(older.delta(since: third.context))
    // third reads NoteWithColor(title: "Final", color: "blue")

    #expect(third.get(NoteWithColor.self, id: "n1") == NoteWithColor(title: "Final", color: "blue"))
  }

  @Test func fieldKindDisagreement() {
    var (phone, laptop) = Self.setUp()
    let a = phone.transact { $0.setValue(.string("short"), for: "summary", of: note) }
    let b = laptop.transact { $0.insertText("long", at: 0, in: "summary", of: note) }
    // fieldKind("summary", of: note) == .text, text "long"; value(of: "summary", in: note) == nil

    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document.fieldKind("summary", of: note) == .text)
    #expect(phone.document.text(of: "summary", in: note) == "long")
    #expect(phone.document.value(of: "summary", in: note) == nil)
    #expect(phone.document == laptop.document)
  }
}
