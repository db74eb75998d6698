import Converge
import Foundation
import Testing

@testable import ConvergeStore

/// Compaction bounded by the records an open would replay, not only by the log's bytes.
@Suite struct CompactionTriggerTests {
  static func settings(
    _ disk: MemoryFileSystem, syncEachCommit: Bool, background: Bool = false
  ) -> DocumentStore.Configuration {
    var settings = HeldLogTests.settings(disk)
    settings.syncInterval = syncEachCommit ? .zero : .seconds(3600)
    settings.syncInBackground = background
    return settings
  }

  static func type(_ count: Int, into store: DocumentStore) {
    for index in 0..<count {
      store.transact { $0.insertText("a", at: index, in: "body", of: note) }
    }
  }

  /// 3,000 keystrokes, each synced, with the default thresholds: the log (a few
  /// hundred KB, far below the byte threshold) is compacted once it holds more than
  /// `compactionRecords` records and the last snapshot's bytes, so a reopen replays at
  /// most that many.
  @Test func manySmallSyncedCommitsAreCompacted() throws {
    let disk = MemoryFileSystem()
    let settings = Self.settings(disk, syncEachCommit: true)
    let store = try DocumentStore(directory: "/trigger", configuration: settings)
    Self.type(3_000, into: store)
    try store.close()
    let reopened = try DocumentStore(directory: "/trigger", configuration: settings)
    #expect(reopened.recovery.snapshotGeneration >= 2)
    #expect(reopened.recovery.replayedRecords <= settings.compactionRecords)
    #expect(reopened.replica.document.text(of: "body", in: note).count == 3_000)
  }

  /// The same keystrokes flushed at once (typing faster than the sync interval), on the
  /// caller's thread or in the background: the flush compacts after its append, and a
  /// close waits for that compaction.
  @Test(arguments: [false, true]) func aFlushOfManyCommitsCompactsAfterItsAppend(
    background: Bool
  ) throws {
    let disk = MemoryFileSystem()
    let settings = Self.settings(disk, syncEachCommit: false, background: background)
    let store = try DocumentStore(directory: "/trigger", configuration: settings)
    Self.type(3_000, into: store)
    try store.flush()
    #expect(store.durableCommits == 3_000)
    try store.close()
    #expect(store.lastError == nil)
    let reopened = try DocumentStore(directory: "/trigger", configuration: settings)
    #expect(reopened.recovery.replayedRecords == 0)
    #expect(reopened.replica.document.text(of: "body", in: note).count == 3_000)
  }

  /// Records beyond the bound but fewer bytes than the last snapshot: no compaction (each
  /// snapshot is paid for by as many bytes of log).
  @Test func aLogSmallerThanTheSnapshotIsNotCompacted() throws {
    let disk = MemoryFileSystem()
    var settings = Self.settings(disk, syncEachCommit: true)
    settings.compactionRecords = 10
    let store = try DocumentStore(directory: "/trigger", configuration: settings)
    store.transact {
      $0.setValue(.string(String(repeating: "x", count: 5_000)), for: "draft", of: note)
    }
    try store.compact()
    for index in 0..<50 { store.transact { $0.setValue(.int(Int64(index)), for: "n", of: note) } }
    try store.close()
    let reopened = try DocumentStore(directory: "/trigger", configuration: settings)
    #expect(reopened.recovery.replayedRecords == 50)
  }
}
