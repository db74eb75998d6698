import Converge
import Foundation
import Testing

// The code samples of the DocC articles in `Sources/Converge/Converge.docc/`, kept
// compiling and passing. Edit an article and its test together. `Note` is the model of
// `ReadmeExampleTests.swift`, which the articles declare the same way.

/// The same note as a later app version declares it, with a `color` the first lacks.
private struct NoteWithColor: EntityModel, Equatable {
  static let entityType = "note"
  var title = ""
  var color: String?

  static let schema = EntitySchema<NoteWithColor>(
    .register("title", \.title), .register("color", \.color))
}

@Suite struct GettingStartedArticleTests {
  @Test func twoReplicasTransactionsAndReads() throws {
    var phone = Replica()
    var laptop = Replica()
    let (id, created) = phone.create(Note(title: "Groceries", body: "milk"))
    laptop.apply(created.delta)
    #expect(laptop.get(Note.self, id: id)?.title == "Groceries")

    let onPhone = try phone.update(Note.self, id: id) { $0.tags.insert("home") }

    let key = EntityKey(type: Note.entityType, id: id)
    let onLaptop = laptop.transact { tx in
      tx.setValue(.string("Shopping"), for: "title", of: key)
      tx.insertText("oat ", at: 0, in: "body", of: key)
      tx.create(Note(title: "Call Mum"), id: "call-mum")
    }

    phone.apply(onLaptop.delta)
    laptop.apply(onPhone.delta)
    // Applying a delta again changes nothing.
    #expect(laptop.apply(onPhone.delta).isEmpty)

    let note = try #require(phone.get(Note.self, id: id))
    #expect(note.title == "Shopping" && note.body == "oat milk" && note.tags == ["home"])
    #expect(phone.all(Note.self).map(\.value.title).sorted() == ["Call Mum", "Shopping"])
    #expect(phone.document.value(of: "title", in: key) == .string("Shopping"))
    #expect(phone.document.text(of: "body", in: key) == "oat milk")
    #expect(phone.document.elements(of: "tags", in: key) == [.string("home")])
    #expect(phone.document == laptop.document)

    let changes = onLaptop.changes
    #expect(changes.created == [EntityKey(type: "note", id: "call-mum")])
    #expect(changes.updated == [key])
    #expect(changes[key]?.fields == ["body", "title"])
    let insert = try #require(changes[key]?.textChanges["body"]?.first)
    #expect(insert.kind == .insert && insert.scalarRange == 0..<4 && insert.utf16Range == 0..<4)

    let grouped = onPhone.delta.merging(onLaptop.delta)
    var tablet = Replica()
    tablet.apply(created.delta.merging(grouped))
    #expect(tablet.document == phone.document)

    var watch = Replica()
    watch.apply(phone.delta(since: watch.context))
    #expect(watch.document == phone.document)
    #expect(phone.delta(since: watch.context).isEmpty)

    phone.transact { $0.delete(Note.self, id: "call-mum") }
    #expect(phone.get(Note.self, id: "call-mum") == nil)
  }

  #if canImport(Observation)
    @MainActor
    @Test func replicaStoreStreamsChanges() async {
      let store = ReplicaStore(replica: Replica())
      var sent: [DocumentDelta] = []
      store.onCommit = { commit in sent.append(commit.delta) }
      let stream = store.changes()
      store.transact { $0.create(Note(title: "Groceries"), id: "groceries") }
      var iterator = stream.makeAsyncIterator()
      let first = await iterator.next()
      #expect(first?.created == [EntityKey(type: "note", id: "groceries")])
      #expect(sent.count == 1)

      var laptop = Replica()
      laptop.apply(sent[0])
      let edit = try? laptop.update(Note.self, id: "groceries") { $0.title = "Shopping" }
      if let edit { store.apply(edit.delta) }
      #expect(store.replica.get(Note.self, id: "groceries")?.title == "Shopping")
      #expect(store.lastChanges.updated == [EntityKey(type: "note", id: "groceries")])
    }
  #endif
}

@Suite struct MergeSemanticsArticleTests {
  let note = EntityKey(type: "note", id: "n1")
  static let noon: UInt64 = 1_700_000_000_000

  /// Two devices that share `note`: title "Groceries", tag "home", body "milk".
  func twoDevices(phoneWall: UInt64 = noon, laptopWall: UInt64 = noon) -> (Replica, Replica) {
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(phoneWall))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(laptopWall))
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
    var (phone, laptop) = twoDevices()
    let a = phone.transact { $0.setValue(.string("Shopping"), for: "title", of: note) }
    let b = laptop.transact { $0.insert(.string("urgent"), into: "tags", of: note) }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document.value(of: "title", in: note) == .string("Shopping"))
    #expect(phone.document.elements(of: "tags", in: note) == [.string("home"), .string("urgent")])
    #expect(phone.document == laptop.document)
  }

  @Test func sameFieldTieBrokenByReplica() {
    var (phone, laptop) = twoDevices()
    let a = phone.transact { $0.setValue(.string("Phone"), for: "title", of: note) }
    let b = laptop.transact { $0.setValue(.string("Laptop"), for: "title", of: note) }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    // Equal timestamps: the greater replica id (the laptop's, 2) wins on both.
    #expect(phone.document.value(of: "title", in: note) == .string("Laptop"))
    #expect(phone.document == laptop.document)
  }

  @Test func sameFieldLaterClockWins() {
    var (phone, laptop) = twoDevices(laptopWall: Self.noon + 5_000)
    let a = phone.transact { $0.setValue(.string("Phone"), for: "title", of: note) }
    let b = laptop.transact { $0.setValue(.string("Laptop"), for: "title", of: note) }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document.value(of: "title", in: note) == .string("Laptop"))
    #expect(phone.document == laptop.document)
  }

  @Test func clockSkew() {
    var (phone, laptop) = twoDevices(phoneWall: Self.noon - 3 * 3_600_000)
    let laptopWrite = laptop.transact { $0.setValue(.string("Laptop"), for: "title", of: note) }
    phone.apply(laptopWrite.delta)
    let phoneWrite = phone.transact { $0.setValue(.string("Phone, later"), for: "title", of: note) }
    laptop.apply(phoneWrite.delta)
    #expect(laptop.document.value(of: "title", in: note) == .string("Phone, later"))
    #expect(phone.document == laptop.document)
  }

  @Test func addWinsOverConcurrentRemove() {
    var (phone, laptop) = twoDevices()
    let a = phone.transact { $0.remove(.string("home"), from: "tags", of: note) }
    let b = laptop.transact { $0.insert(.string("home"), into: "tags", of: note) }
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
    tablet.apply(add.delta)  // … then the add it observed
    #expect(tablet.document.elements(of: "tags", in: note).isEmpty)
    laptop.apply(add.delta)  // a duplicated old add
    #expect(laptop.document.elements(of: "tags", in: note).isEmpty)
  }

  @Test func deleteVersusConcurrentEdit() {
    var (phone, laptop) = twoDevices()
    let a = phone.transact { $0.delete(note) }
    let b = laptop.transact { $0.setValue(.bool(true), for: "pinned", of: note) }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document.contains(note))
    #expect(phone.document.value(of: "title", in: note) == .string("Groceries"))
    #expect(phone.document.text(of: "body", in: note) == "milk")
    #expect(phone.document.value(of: "pinned", in: note) == .bool(true))
    #expect(phone.document == laptop.document)
  }

  @Test func deleteBeatsTheEditsItSaw() {
    var (phone, laptop) = twoDevices()
    let edit = laptop.transact { $0.setValue(.string("Seen"), for: "title", of: note) }
    phone.apply(edit.delta)
    let delete = phone.transact { $0.delete(note) }
    laptop.apply(delete.delta)
    laptop.apply(edit.delta)  // late and duplicated: changes nothing
    #expect(!laptop.document.contains(note) && !phone.document.contains(note))
  }

  @Test func reCreatingADeletedEntityRevivesItsFields() {
    var (phone, _) = twoDevices()
    phone.transact { $0.delete(note) }
    phone.transact { $0.create(note) }
    #expect(phone.document.value(of: "title", in: note) == .string("Groceries"))
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
    var (phone, laptop) = twoDevices()
    let a = phone.transact { $0.insertText(" and eggs", at: 4, in: "body", of: note) }
    let b = laptop.transact { $0.insertText(" and bread", at: 4, in: "body", of: note) }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    // Same origin, same Lamport number: the greater replica (laptop, 2) comes first.
    #expect(phone.document.text(of: "body", in: note) == "milk and bread and eggs")
    #expect(phone.document == laptop.document)
  }

  @Test func unknownFieldsSurvive() throws {
    var newer = Replica()
    var older = Replica()
    var third = Replica()
    let created = newer.create(NoteWithColor(title: "Draft", color: "blue"), id: "n1")
    older.apply(created.commit.delta)
    try older.update(Note.self, id: "n1") { $0.title = "Final" }
    third.apply(older.delta(since: third.context))
    #expect(third.get(NoteWithColor.self, id: "n1") == NoteWithColor(title: "Final", color: "blue"))
  }

  @Test func fieldKindDisagreement() {
    var (phone, laptop) = twoDevices()
    let a = phone.transact { $0.setValue(.string("short"), for: "summary", of: note) }
    let b = laptop.transact { $0.insertText("long", at: 0, in: "summary", of: note) }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document.fieldKind("summary", of: note) == .text)
    #expect(phone.document.text(of: "summary", in: note) == "long")
    #expect(phone.document.value(of: "summary", in: note) == nil)
    #expect(phone.document == laptop.document)
  }
}

@Suite struct SyncProtocolArticleTests {
  @Test func handshakeLivePushAndReset() {
    var phone = Replica()
    var laptop = Replica()
    phone.create(Note(title: "Groceries"), id: "groceries")
    laptop.create(Note(title: "Call Mum"), id: "call-mum")

    var phoneSession = SyncSession()
    var laptopSession = SyncSession()
    var rounds = 0
    while true {
      let a = phoneSession.makeMessage(for: phone)
      if let a { laptopSession.receive(a, into: &laptop) }
      let b = laptopSession.makeMessage(for: laptop)
      if let b { phoneSession.receive(b, into: &phone) }
      if a == nil && b == nil { break }
      rounds += 1
    }
    #expect(rounds <= 2)
    #expect(phone.document == laptop.document)

    let commit = phone.transact { tx in
      tx.insertText("milk", at: 0, in: "body", of: EntityKey(type: "note", id: "groceries"))
    }
    let push = phoneSession.push(commit, from: phone)
    laptopSession.receive(push, into: &laptop)
    #expect(laptop.get(Note.self, id: "groceries")?.body == "milk")
    #expect(phoneSession.makeMessage(for: phone) == nil)

    phoneSession.reset()
    laptopSession.reset()
    #expect(phoneSession.peerContext == nil)
  }

  #if canImport(Observation)
    @MainActor
    @Test func syncSessionWithAReplicaStore() {
      let store = ReplicaStore(replica: Replica())
      var laptop = Replica()
      laptop.create(Note(title: "Call Mum"), id: "call-mum")
      var storeSession = SyncSession()
      var laptopSession = SyncSession()
      for _ in 0..<4 {
        if let message = store.makeMessage(for: &storeSession) {
          laptopSession.receive(message, into: &laptop)
        }
        if let message = laptopSession.makeMessage(for: laptop) {
          store.receive(message, through: &storeSession)
        }
      }
      #expect(store.replica.document == laptop.document)
      #expect(storeSession.makeMessage(for: store.replica) == nil)
      #expect(laptopSession.makeMessage(for: laptop) == nil)
    }
  #endif

  @Test func relay() {
    var relay: [DocumentDelta] = []
    var phone = Replica()
    var laptop = Replica()
    relay.append(phone.create(Note(title: "Groceries"), id: "g").commit.delta)
    relay.append(laptop.create(Note(title: "Call Mum"), id: "c").commit.delta)
    var readByPhone = 0
    for blob in relay[readByPhone...] { phone.apply(blob) }
    readByPhone = relay.count
    for blob in relay { laptop.apply(blob) }
    #expect(phone.document == laptop.document)
  }
}
