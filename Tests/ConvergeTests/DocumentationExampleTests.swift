import Converge
import ConvergeStore
import ConvergeTestSupport
import Foundation
import Testing

// The code samples of the DocC articles in `Sources/Converge/Converge.docc/` (Merge
// Semantics in `MergeSemanticsExampleTests.swift`), verbatim, kept compiling and passing.
// Edit an article and its test together: `DocumentationSampleCoverageTests` fails when a
// sample is missing here. `Note` is the model of `ReadmeExampleTests.swift`, which the
// articles declare the same way.

/// Stand-ins for an app's own transport and UI code, which the articles leave to the app.
@MainActor private final class AppSide {
  var sentDeltas: [DocumentDelta] = []
  var sentMessages: [SyncMessage] = []
  var refreshed: [DocumentChanges] = []
  func send(_ delta: DocumentDelta) { sentDeltas.append(delta) }
  func send(_ message: SyncMessage) { sentMessages.append(message) }
  func refresh(_ changes: DocumentChanges) { refreshed.append(changes) }
}

@Suite struct ConvergeArticleTests {
  @Test func overview() throws {
    var phone = Replica()
    var laptop = Replica()
    let (id, created) = phone.create(Note(title: "Groceries", body: "milk"))
    laptop.apply(created.delta)

    let onPhone = try phone.update(Note.self, id: id) { $0.title = "Shopping" }
    let onLaptop = try laptop.update(Note.self, id: id) { $0.tags.insert("home") }
    phone.apply(onLaptop.delta)
    laptop.apply(onPhone.delta)
    // Both: title "Shopping", tags ["home"].

    #expect(phone.get(Note.self, id: id)?.title == "Shopping")
    #expect(laptop.get(Note.self, id: id)?.tags == ["home"])
    #expect(phone.document == laptop.document)
  }
}

@Suite struct GettingStartedArticleTests {
  @Test func twoReplicasTransactionsAndReads() throws {
    var phone = Replica()
    var laptop = Replica()

    let (id, created) = phone.create(Note(title: "Groceries", body: "milk"))
    laptop.apply(created.delta)

    let onPhone = try phone.update(Note.self, id: id) { $0.tags.insert("home") }

    #expect(laptop.get(Note.self, id: id)?.title == "Groceries")

    let key = EntityKey(type: Note.entityType, id: id)
    let bodyText = try EntityText(\Note.body, of: id)
    let onLaptop = laptop.transact { tx in
      tx.setValue(.string("Shopping"), for: "title", of: key)
      tx.insertText("oat ", at: 0, in: bodyText)
      tx.create(Note(title: "Call Mum"), id: "call-mum")
    }

    phone.apply(onLaptop.delta)
    laptop.apply(onPhone.delta)

    // Applying a delta again changes nothing.
    #expect(laptop.apply(onPhone.delta).isEmpty)

    let note = phone.get(Note.self, id: id)  // Note? : nil once deleted
    let notes = phone.all(Note.self)  // [(id: String, value: Note)], by id
    let title = phone.document.value(of: "title", in: key)  // .string("Shopping")
    let body = phone.document.text(of: "body", in: key)  // "oat milk"
    let tags = phone.document.elements(of: "tags", in: key)  // [.string("home")]

    #expect(note?.title == "Shopping" && note?.body == "oat milk" && note?.tags == ["home"])
    #expect(notes.map(\.value.title).sorted() == ["Call Mum", "Shopping"])
    #expect(title == .string("Shopping") && body == "oat milk" && tags == [.string("home")])
    #expect(phone.document == laptop.document)

    let changes = onLaptop.changes
    let createdKeys = changes.created  // [note/call-mum]
    let updatedKeys = changes.updated  // [note/<id>]
    let fields = changes[key]?.fields  // ["body", "title"]
    let bodyEdits = changes[key]?.textChanges["body"]  // [insert, scalars 0..<4, UTF-16 0..<4]

    #expect(createdKeys == [EntityKey(type: "note", id: "call-mum")])
    #expect(updatedKeys == [key])
    #expect(fields == ["body", "title"])
    let insert = try #require(bodyEdits?.first)
    #expect(insert.kind == .insert && insert.scalarRange == 0..<4 && insert.utf16Range == 0..<4)

    let grouped = onPhone.delta.merging(onLaptop.delta)
    var tablet = Replica()
    tablet.apply(created.delta.merging(grouped))
    #expect(tablet.document == phone.document)

    var watch = Replica()
    watch.apply(phone.delta(since: watch.context))
    // phone.delta(since: watch.context) is now empty.

    #expect(watch.document == phone.document)
    #expect(phone.delta(since: watch.context).isEmpty)

    phone.transact { $0.delete(Note.self, id: "call-mum") }
    #expect(phone.get(Note.self, id: "call-mum") == nil)
  }

  @MainActor
  @Test func deviceReplicaStreamsChanges() async throws {
    let app = AppSide()
    func refresh(_ changes: DocumentChanges) { app.refresh(changes) }
    let notesFolder = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-getting-started-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: notesFolder) }
    var laptop = Replica()
    let deltaFromAnotherDevice = laptop.create(Note(title: "Call Mum"), id: "call-mum").commit
      .delta

    @MainActor
    func openNotes() throws -> DeviceReplica {
      let notes = try DeviceReplica(directory: notesFolder.path)
      let changes = notes.changes()  // subscribed now: no later change is missed
      Task {
        for await change in changes { refresh(change) }
      }
      return notes
    }

    // On the main actor:
    let notes = try openNotes()
    notes.create(Note(title: "Groceries"), id: "groceries")
    notes.apply(deltaFromAnotherDevice)

    let groceries = EntityKey(type: "note", id: "groceries")
    let callMum = EntityKey(type: "note", id: "call-mum")
    #expect(notes.replica.all(Note.self).map(\.id) == ["call-mum", "groceries"])
    #expect(notes.lastChanges.created == [callMum])
    #expect(notes.pendingEntities == [groceries])
    // Both changes, the very first included, reach the task once the main actor yields.
    for _ in 0..<1_000 where app.refreshed.count < 2 { await Task.yield() }
    #expect(app.refreshed.map(\.created) == [[groceries], [callMum]])
    try notes.close()
    let reopened = try DeviceReplica(directory: notesFolder.path)
    #expect(reopened.replica.document == notes.replica.document)
    #expect(reopened.id == notes.id)
    try reopened.close()
  }
}

@Suite struct SyncProtocolArticleTests {
  @Test func handshakeLivePushAndReset() throws {
    var phone = Replica()
    var laptop = Replica()
    phone.create(Note(title: "Groceries"), id: "groceries")
    laptop.create(Note(title: "Call Mum"), id: "call-mum")

    var phoneSession = SyncSession()
    var laptopSession = SyncSession()
    while true {
      let a = phoneSession.makeMessage(for: phone)
      if let a { laptopSession.receive(a, into: &laptop) }
      let b = laptopSession.makeMessage(for: laptop)
      if let b { phoneSession.receive(b, into: &phone) }
      if a == nil && b == nil { break }
    }

    #expect(phone.document == laptop.document)

    let commit = phone.transact { tx in
      tx.insertText("milk", at: 0, in: "body", of: EntityKey(type: "note", id: "groceries"))
    }
    let push = phoneSession.push(commit, from: phone)
    laptopSession.receive(push, into: &laptop)
    // phoneSession.makeMessage(for: phone) is nil: nothing more to say

    #expect(laptop.get(Note.self, id: "groceries")?.body == "milk")
    #expect(phoneSession.makeMessage(for: phone) == nil)

    let typed = try phone.update(Note.self, id: "groceries") { $0.body += "!" }
    try pushFrame(typed, from: phone, through: &phoneSession, to: &laptop, &laptopSession)
    #expect(laptop.get(Note.self, id: "groceries")?.body == "milk!")

    phoneSession.reset()
    laptopSession.reset()

    #expect(phoneSession.peerContext == nil)
  }

  /// The article's frame sample, for a commit made after the handshake.
  func pushFrame(
    _ commit: Commit, from phone: Replica, through phoneSession: inout SyncSession,
    to laptop: inout Replica, _ laptopSession: inout SyncSession
  ) throws {
    let frame = phoneSession.pushEncoded(commit, from: phone)  // send it
    try laptopSession.receive(encoded: frame, into: &laptop)
  }

  @MainActor
  @Test func syncSessionWithADeviceReplica() throws {
    let notes = try DeviceReplica.inMemory()
    let app = AppSide()
    func send(_ message: SyncMessage) { app.send(message) }
    var laptop = Replica()
    laptop.create(Note(title: "Call Mum"), id: "call-mum")
    notes.create(Note(title: "Groceries"), id: "groceries")
    try notes.flush()  // durable, so the session may send it
    var session = SyncSession()
    var laptopSession = SyncSession()
    for _ in 0..<4 {
      // Whenever the connection can take a message:
      if let message = notes.makeMessage(for: &session) { send(message) }

      for message in app.sentMessages { laptopSession.receive(message, into: &laptop) }
      app.sentMessages.removeAll()
      guard let incoming = laptopSession.makeMessage(for: laptop) else { continue }

      // For each message that arrives:
      try notes.receive(incoming, through: &session, from: "laptop")
    }
    #expect(notes.replica.document == laptop.document)
    #expect(notes.pendingCount == 0)
    #expect(notes.makeMessage(for: &session) == nil)
    #expect(laptopSession.makeMessage(for: laptop) == nil)
  }

  @Test func relay() {
    var relay: [DocumentDelta] = []
    var phone = Replica()
    var device = Replica()
    var readUpTo = 0
    for title in ["Groceries", "Call Mum"] {
      let commit = phone.create(Note(title: title)).commit

      relay.append(commit.delta)  // upload
      for blob in relay[readUpTo...] { device.apply(blob) }  // download what is new
      readUpTo = relay.count
    }
    #expect(phone.document == device.document && readUpTo == 2)
  }
}

@Suite struct WireFormatArticleTests {
  @Test func causalContextRoundTrip() throws {
    var phone = Replica()
    phone.create(Note(title: "Groceries"), id: "groceries")
    let context = phone.context

    let bytes = context.encoded()  // a `causalContext` message
    let decoded = try CausalContext(decoding: bytes)  // == context

    #expect(decoded == context)
  }
}
