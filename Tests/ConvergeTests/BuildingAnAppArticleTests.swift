import Converge
import ConvergeRelayClient
import ConvergeStore
import Foundation
import Observation
import Testing

// The "Building an App" article's samples, compiled and run on the main actor, as an
// app's view model runs them: the models, the view model over a device replica on disk,
// typing through a text handle, the relay client (over the in-memory relay of
// `RelayClientLoopTests`), going to the background and the events.

// `Note` is the README's (ReadmeExampleTests.swift).

struct NoteRow: EntityModel {
  static let entityType = "note"
  var title = ""
  var tags: Set<String> = []

  static let schema = EntitySchema<NoteRow>(.register("title", \.title), .set("tags", \.tags))
}

@MainActor @Observable final class NotesViewModel {
  let notes: DeviceReplica

  init(folder: String) throws {
    notes = try DeviceReplica(directory: folder)
  }

  var rows: [(id: String, value: NoteRow)] { notes.all(NoteRow.self) }
  var badge: Int { notes.pendingCount }  // notes no peer has acknowledged

  func add(title: String) -> String {
    notes.create(Note(title: title)).id
  }

  func rename(_ id: String, to title: String) throws {
    try notes.update(NoteRow.self, id: id) { $0.title = title }
  }
}

extension NotesViewModel {
  func edit(note id: String, utf16Range: Range<Int>, replacement: String) throws {
    let body = try EntityText(\Note.body, of: id)
    notes.transact { $0.replaceText(utf16Range: utf16Range, with: replacement, in: body) }
  }
}

extension NotesViewModel {
  func enterBackground() {
    try? notes.flush()  // everything typed so far is on disk and goes out
  }

  func listen() async {
    for await event in notes.events() {
      switch event {
      case .changed: break  // Observation already redraws the views
      case .identityChanged(let change): print("new replica id:", change)
      case .storeFailed(let error): print("save failed, will retry:", error)
      }
    }
  }
}

/// Stands in for the app's backend, which signs relay tokens.
struct NotesBackend: Sendable {
  func relayToken(space: String, writingAs replicaID: ReplicaID) async throws -> String {
    "\(space)-\(replicaID)"
  }
}

@MainActor
@Suite(.timeLimit(.minutes(1))) struct BuildingAnAppArticleTests {
  static func folder() -> URL {
    FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-building-an-app-\(UInt64.random(in: 0 ... .max))")
  }

  @Test func theViewModelEditsReadsAndTypesThroughTheDeviceReplica() throws {
    let folder = Self.folder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let model = try NotesViewModel(folder: folder.path)
    let id = model.add(title: "Groceries")
    try model.rename(id, to: "Shopping")
    try model.edit(note: id, utf16Range: 0..<0, replacement: "milk")
    try model.edit(note: id, utf16Range: 0..<0, replacement: "oat ")
    #expect(model.rows.map(\.value.title) == ["Shopping"])
    #expect(model.notes.replica.get(Note.self, id: id)?.body == "oat milk")
    #expect(model.badge == 1)
    model.enterBackground()
    try model.notes.close()

    // The next launch: the same replica id, the same note, still pending.
    let relaunched = try NotesViewModel(folder: folder.path)
    #expect(relaunched.notes.id == model.notes.id)
    #expect(relaunched.notes.replica.get(Note.self, id: id)?.body == "oat milk")
    #expect(relaunched.badge == 1)
  }

  @Test func theRelayClientSyncsTheDeviceReplicaAndClearsTheBadge() async throws {
    let folder = Self.folder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let model = try NotesViewModel(folder: folder.path)
    let id = model.add(title: "Groceries")
    model.enterBackground()
    let notes = model.notes
    let backend = NotesBackend()
    let server = MemoryRelayServer(accepting: ["notes-\(notes.id)"])
    let connector = MemoryConnector(server: server)

    let syncing = Task { @MainActor in
      let relay = RelayClient(
        connector: connector,
        token: { replicaID in
          try await backend.relayToken(space: "notes", writingAs: replicaID)
        })
      await relay.run(owner: notes)  // from the main actor, say in a SwiftUI .task
    }
    var synced = false
    for _ in 0..<1000 where !synced {
      synced = model.badge == 0 && server.space.get(Note.self, id: id)?.title == "Groceries"
      if !synced { try await Task.sleep(for: .milliseconds(10)) }
    }
    syncing.cancel()
    await syncing.value
    #expect(synced, "the relay holds the note and the badge cleared")
    let listening = Task { @MainActor in await model.listen() }
    try model.rename(id, to: "Shopping")
    #expect(model.rows.map(\.value.title) == ["Shopping"])
    #expect(model.badge == 1)
    listening.cancel()
    await listening.value
    try notes.close()
  }
}
