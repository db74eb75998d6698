import Converge
import ConvergeStore
import Foundation
import Testing

/// The persistence samples, compiled and run against a real directory: the device
/// replica's, shown by the README and the Persistence article, and the store's, shown by
/// `DocumentStore`'s doc comment.
@Suite struct PersistenceArticleTests {
  /// Stands in for an app's connection to a relay.
  final class RelayConnection {
    var sent: [[UInt8]] = []
    func send(_ deltas: [[UInt8]]) { sent += deltas }
  }

  /// A folder of its own for one sample's notes.
  static func temporaryFolder() -> URL {
    FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-persistence-\(UInt64.random(in: 0 ... .max))")
  }

  @Test func theStoreSample() throws {
    let notesFolder = Self.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: notesFolder) }
    let relay = RelayConnection()
    let note = EntityKey(type: "note", id: "groceries")

    let store = try DocumentStore(directory: notesFolder.path)
    store.onDurable = { deltas in relay.send(deltas) }  // only durable deltas leave the device
    store.transact { $0.setValue(.string("Groceries"), for: "title", of: note) }
    try store.flush()  // when the app goes to the background
    try store.close()  // marks a clean shutdown

    #expect(relay.sent.count == 1)
    let reopened = try DocumentStore(directory: notesFolder.path)
    #expect(reopened.replica.document.value(of: "title", in: note) == .string("Groceries"))
    #expect(reopened.recovery.previousRunClosedCleanly)
  }

  @MainActor
  @Test func theDeviceReplicaSample() throws {
    let notesFolder = Self.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: notesFolder) }
    let relay = RelayConnection()

    let notes = try DeviceReplica(directory: notesFolder.path)
    notes.onDurable = { deltas in relay.send(deltas) }  // only durable deltas leave the device
    let (id, _) = notes.create(Note(title: "Groceries"))
    try notes.update(Note.self, id: id) { $0.tags.insert("home") }
    try notes.flush()  // when the app goes to the background
    try notes.close()  // marks a clean shutdown

    #expect(relay.sent.count == 2)
    let reopened = try DeviceReplica(directory: notesFolder.path)
    let note = EntityKey(type: "note", id: id)
    #expect(reopened.get(Note.self, id: id)?.title == "Groceries")
    #expect(reopened.get(Note.self, id: id)?.tags == ["home"])
    #expect(reopened.id == notes.id && reopened.identityChanges.isEmpty)
    #expect(reopened.pendingEntities == [note])
  }
}
