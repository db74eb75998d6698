import Converge
import Foundation
import Testing

@testable import ConvergeStore

/// Collecting list tombstones through the owner and the store: the next compaction
/// writes the collected document, and reopening (snapshot and any log replayed over it)
/// brings no collected slot back.
@Suite struct ListCollectionStoreTests {
  private let board = EntityKey(type: "column", id: "todo")

  @Test func aCompactionKeepsTheCollectedListAndReopeningBringsNoSlotBack() throws {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-collect-\(UInt64.random(in: 0...UInt64.max))").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var settings = DocumentStore.Configuration()
    settings.syncInBackground = false
    let device = try DeviceReplica(directory: directory, configuration: settings)
    device.transact { tx in
      for index in 0..<12 {
        tx.insert(.string("card\(index)"), at: index, intoList: "cards", of: board)
      }
    }
    // The last card to the front, forty times: blocks of dead slots at the end.
    for _ in 0..<40 {
      device.transact { $0.move(from: 11, to: 0, inList: "cards", of: board) }
    }
    try device.flush()
    let uncollected = device.replica.document
    // One device: its context is a stable cut covering its own report, and the next
    // cut (the same context) covers it.
    let context = uncollected.context
    var history = StableCutHistory()
    #expect(history.note(stable: context, covering: context) == nil)
    let noted = history.note(stable: context, covering: context)
    let cut = try #require(noted)
    let collected = device.collectListTombstones(at: cut)
    #expect(collected > 5)
    let collectedDocument = device.replica.document
    #expect(collectedDocument != uncollected)
    #expect(
      collectedDocument.list(of: "cards", in: board) == uncollected.list(of: "cards", in: board))
    #expect(collectedDocument.encoded().count < uncollected.encoded().count)
    // The logs that held the moves are replaced by the collected snapshot at close.
    try device.close()
    let reopened = try DeviceReplica(directory: directory, configuration: settings)
    #expect(reopened.replica.document == collectedDocument)
    // An old delta of the moves delivered again brings nothing back.
    reopened.apply(uncollected.delta(since: CausalContext()))
    #expect(reopened.replica.document == collectedDocument)
    try reopened.close()
  }
}
