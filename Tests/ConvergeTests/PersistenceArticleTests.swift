import Converge
import ConvergeStore
import Foundation
import Testing

/// The store's sample, shown by the README, the Persistence article and `DocumentStore`'s
/// doc comment, compiled and run against a real directory.
@Suite struct PersistenceArticleTests {
  /// Stands in for an app's connection to a relay.
  final class RelayConnection {
    var sent: [[UInt8]] = []
    func send(_ deltas: [[UInt8]]) { sent += deltas }
  }

  @Test func theStoreSample() throws {
    let notesFolder = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-persistence-\(UInt64.random(in: 0 ... .max))")
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
}
