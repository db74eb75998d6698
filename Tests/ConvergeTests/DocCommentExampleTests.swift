import ConvergeSimulator
import ConvergeStore
import ConvergeTestSupport
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

// The code samples of the doc comments in `Sources`, verbatim, kept compiling and
// passing. Edit a doc comment and its test together: `DocumentationSampleCoverageTests`
// fails when a sample is missing here (or in another test file).

@Suite struct DocCommentExampleTests {
  @Test func replica() {
    let note = EntityKey(type: "note", id: "groceries")
    var phone = Replica()
    var laptop = Replica()
    let commit = phone.transact { tx in
      tx.create(note)
      tx.setValue(.string("Groceries"), for: "title", of: note)
    }
    // Send commit.delta to the laptop by any means: a session, a server, a shared folder.
    laptop.apply(commit.delta)

    #expect(laptop.document.value(of: "title", in: note) == .string("Groceries"))
  }

  @Test func replicaPersistence() throws {
    var replica = Replica()
    var peer = Replica()
    let note = EntityKey(type: "note", id: "n1")
    let received = peer.transact { $0.insertText("milk", at: 0, in: "body", of: note) }
      .delta.encoded()
    replica.transact { $0.setValue(.string("Groceries"), for: "title", of: note) }

    let saved = replica.encodedState()  // write it to disk
    var restored = try Replica(restoring: saved)  // next launch: same document, new id
    try restored.apply(encodedDelta: received)  // all or nothing

    #expect(restored.id != replica.id)
    #expect(restored.document.text(of: "body", in: note) == "milk")
    #expect(restored.document.value(of: "title", in: note) == .string("Groceries"))
  }

  @Test func syncSession() {
    var phone = Replica()
    var laptop = Replica()
    phone.create(Note(title: "Groceries"), id: "groceries")

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
  }

  @MainActor
  @Test func deviceReplica() async throws {
    var listed: [DocumentChanges] = []
    func refreshList(_ changes: DocumentChanges) { listed.append(changes) }
    let notesFolder = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-doc-comment-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: notesFolder) }

    let notes = try DeviceReplica(directory: notesFolder.path)  // on the main actor
    let changes = notes.changes()  // subscribed now: no later change is missed
    Task { for await change in changes { refreshList(change) } }
    notes.create(Note(title: "Groceries"), id: "groceries")
    let badge = notes.pendingCount  // 1: no peer has it yet
    try notes.close()  // when the app quits

    #expect(badge == 1)
    // The very first change reaches the task, which runs once the main actor yields.
    for _ in 0..<1_000 where listed.isEmpty { await Task.yield() }
    #expect(listed.map(\.created.count) == [1])
    let reopened = try DeviceReplica(directory: notesFolder.path)
    #expect(reopened.replica.get(Note.self, id: "groceries")?.title == "Groceries")
    #expect(reopened.pendingCount == 1)
  }

  @Test func simulation() {
    let report = Simulation(SimulationConfiguration(seed: 7, replicas: 5, operations: 2_000))
      .run()
    print(report.text)  // verdict, messages, bytes, time
    if !report.converged { print(Shrinker().shrink(report.configuration).summary) }

    #expect(report.converged)
  }

  @Test func sha256() {
    let digest = SHA256Hasher.hexDigest(of: Array("abc".utf8))
    // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

    #expect(digest == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  }

  @Test func document() {
    let list = EntityKey(type: "list", id: "groceries")
    var phone = Replica()
    var laptop = Replica()
    let created = phone.transact { tx in
      tx.create(list)
      tx.setValue(.string("Groceries"), for: "title", of: list)
    }
    laptop.apply(created.delta)
    let onLaptop = laptop.transact { tx in tx.insert(.string("pinned"), into: "tags", of: list) }
    let onPhone = phone.transact { tx in tx.setValue(.string("Shopping"), for: "title", of: list) }
    phone.apply(onLaptop.delta)
    laptop.apply(onPhone.delta)
    // Both: title "Shopping", tags ["pinned"].

    #expect(phone.document.value(of: "title", in: list) == .string("Shopping"))
    #expect(phone.document.elements(of: "tags", in: list) == [.string("pinned")])
    #expect(phone.document == laptop.document)
  }

  @Test func entityModel() throws {
    var replica = Replica()

    struct Note: EntityModel {
      static let entityType = "note"
      var title = ""
      var body = ""
      var tags: Set<String> = []
      var pinned = false

      static let schema = EntitySchema<Note>(
        .register("title", \.title),
        .text("body", \.body),
        .set("tags", \.tags),
        .register("pinned", \.pinned))
    }

    let (id, created) = replica.create(Note(title: "Groceries"))
    let edited = try replica.update(Note.self, id: id) { $0.tags.insert("home") }
    // Send created.delta and edited.delta to the other devices.

    var other = Replica()
    other.apply(created.delta.merging(edited.delta))
    #expect(other.get(Note.self, id: id)?.tags == ["home"])

    struct NoteRow: EntityModel {
      static let entityType = Note.entityType
      var title = ""
      var tags: Set<String> = []
      var pinned = false

      static let schema = EntitySchema<NoteRow>(
        .register("title", \.title), .set("tags", \.tags), .register("pinned", \.pinned))
    }

    let rows = replica.all(NoteRow.self)  // [(id, NoteRow)], sorted by id
    try replica.update(NoteRow.self, id: id) { $0.pinned = true }  // the body is kept

    #expect(rows.map(\.value.title) == ["Groceries"])
    #expect(replica.get(Note.self, id: id)?.pinned == true)
  }

  @Test func fieldValueConvertible() throws {
    enum Status: String, FieldValueConvertible { case todo, doing, done }

    #expect(Status.doing.fieldValue == .string("doing"))
    #expect(Status(fieldValue: .string("done")) == .done)
  }

  @Test func documentWire() throws {
    var replica = Replica()
    replica.transact {
      $0.setValue(.string("Groceries"), for: "title", of: EntityKey(type: "note", id: "n1"))
    }

    let bytes = replica.document.encoded()  // save it, send it
    let restored = try Document(decoding: bytes)
    // restored == replica.document, and restored.encoded() == bytes

    #expect(restored == replica.document && restored.encoded() == bytes)
  }

  @Test func documentDeltaWire() throws {
    var replica = Replica()
    var peer = Replica()
    let note = EntityKey(type: "note", id: "n1")

    let commit = replica.transact { tx in tx.insertText("a", at: 0, in: "body", of: note) }
    let bytes = commit.delta.encoded()  // a few dozen bytes
    try peer.apply(encodedDelta: bytes)

    #expect(peer.document == replica.document && bytes.count < 100)
  }

  @Test func messageSummary() throws {
    var phone = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(1_700_000_000_000))
    let note = EntityKey(type: "note", id: "n1")
    phone.transact { $0.setValue(.string("Groceries"), for: "title", of: note) }
    let bytes = phone.encodedState()
    print(try MessageSummary(decoding: bytes).text)
    // kind: documentState (7), 68 bytes
    // replicas: 1
    // context: 1 replicas, 1 events
    //   00000000000000a1: 1 ranges
    // entities: 1 (1 visible)
    //   type note: 1 (1 visible)
    // note/n1:
    //   title: register "Groceries"

    // The summary is the one the doc comment shows, line for line.
    let shown = try Self.printedOutput(
      inDocCommentOf: "Sources/ConvergeCodec/Codec/MessageSummary.swift")
    #expect(try MessageSummary(decoding: bytes).text == shown)
  }

  /// The `// ` lines that follow the first `print(` of the Swift sample in `file`'s doc
  /// comments: what the sample says it prints.
  static func printedOutput(inDocCommentOf file: String) throws -> String {
    let root = URL(fileURLWithPath: #filePath)  // <repo>/Tests/ConvergeTests/<this file>
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let source = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
    let comment = source.split(separator: "\n", omittingEmptySubsequences: false)
      .map { $0.drop { $0 == " " } }
      .filter { $0.hasPrefix("///") }
      .map { $0.dropFirst(3).drop { $0 == " " } }
    guard let print = comment.firstIndex(where: { $0.hasPrefix("print(") }) else { return "" }
    return comment[(print + 1)...].prefix { $0.hasPrefix("// ") }
      .map { String($0.dropFirst(3)) }.joined(separator: "\n")
  }
}
