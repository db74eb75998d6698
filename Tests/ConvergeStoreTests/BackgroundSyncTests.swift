import Converge
import Foundation
import Testing

@testable import ConvergeStore

/// Files that hold every snapshot write until the test opens the gate, so that a test
/// decides when a compaction running on the sync queue may go on.
final class GatedFileSystem: ForwardingFileSystem, @unchecked Sendable {
  // `@unchecked`: `base` locks its own state; `gate` is a semaphore.
  let base: MemoryFileSystem
  let gate = DispatchSemaphore(value: 0)

  init(_ base: MemoryFileSystem) { self.base = base }

  func write(_ bytes: [UInt8], to path: String) throws {
    if path.hasSuffix(".tmp"), path.contains("/snapshot-") {
      // A store that compacted on the caller's thread would wait here for ever: fail the
      // write instead, so the test reports it.
      guard gate.wait(timeout: .now() + 60) == .success else {
        throw StoreFileError(operation: "gate", path: path, code: 0)
      }
      gate.signal()
    }
    try base.write(bytes, to: path)
  }

}

@Suite struct BackgroundSyncTests {
  /// A due sync of a long log compacts on the sync queue from a copy of the document;
  /// the commits typed while it runs wait for the next sync, go to the new generation's
  /// log, and survive a power cut with everything the compaction made durable.
  @Test func commitsTypedDuringABackgroundCompactionAreKept() throws {
    let disk = MemoryFileSystem()
    let gated = GatedFileSystem(disk)
    let clock = ManualClock()
    var settings = configuration(disk, clock)
    settings.fileSystem = gated
    settings.syncInBackground = true
    settings.compactionLogBytes = 256
    let store = try DocumentStore(directory: directory, configuration: settings)
    var durable: [[UInt8]] = []
    store.onDurable = { durable += $0 }
    type("a log longer than the compaction threshold", into: store)
    try store.flush()
    #expect(store.recovery.snapshotGeneration == 0 && store.syncCount == 1)

    clock.now += .seconds(1)
    type("!", into: store)  // due: starts the compaction, which waits at the gate
    let compacted = store.replica.document
    clock.now += .seconds(1)
    type(" typed meanwhile", into: store)
    #expect(store.syncCount == 1 && durable.count == store.committed - 17)

    gated.gate.signal()
    try store.flush()
    #expect(store.syncCount == 3)
    #expect(durable.count == store.committed)
    disk.crash()
    let reopened = try DocumentStore(directory: directory, configuration: configuration(disk))
    #expect(reopened.recovery.snapshotGeneration == 1)
    #expect(reopened.recovery.replayedRecords == 16)
    #expect(reopened.replica.document == store.replica.document)
    #expect(reopened.replica.document != compacted)
    let logs = try disk.contents(ofDirectory: directory).filter { $0.hasPrefix("log-") }
    #expect(logs == [DocumentStore.logName(1)])
  }

  /// The replica is the transaction's while a body runs: reading the store's copy there
  /// (which would be empty) traps rather than answering wrong.
  @Test func readingTheStoreInsideItsTransactionTraps() async {
    await #expect(processExitsWith: .failure) {
      let store = try DocumentStore(
        directory: directory, configuration: configuration(MemoryFileSystem()))
      store.transact { transaction in
        _ = store.replica.document.text(of: "body", in: note)
        transaction.insertText("a", at: 0, in: "body", of: note)
      }
    }
  }
}

/// A sync hands its records back emptied with their buffer, for the next commits: the
/// job is the buffer's only holder when it empties it, on the sync queue as on the
/// caller's thread (a second holder would make emptying allocate a buffer as large).
@Suite struct SyncJobBufferTests {
  /// A job of one large commit's records, and where their buffer is; nothing else holds
  /// the records. With `fileSystem`, the job compacts (a snapshot) instead of appending.
  static func job(compactingOn fileSystem: (any StoreFileSystem)? = nil) -> (
    SyncJob, UnsafeRawPointer?
  ) {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    let commit = replica.transact {
      $0.setValue(.string(String(repeating: "x", count: 10_000)), for: "draft", of: note)
    }
    var records = PendingRecords()
    records.append(commit.delta)
    let buffer = Self.buffer(of: records)
    let job = SyncJob(
      records: records,
      work: fileSystem == nil
        ? .append(log: PathAppendHandle(fileSystem: MemoryFileSystem(), path: directory + "/log"))
        : .snapshot(replica.document, generation: 1),
      directory: directory, fileSystem: fileSystem ?? MemoryFileSystem(),
      key: SnapshotKey(low: 1, high: 2))
    return (job, buffer)
  }

  static func buffer(of records: PendingRecords) -> UnsafeRawPointer? {
    records.payloadBytes.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
  }

  @Test func aSyncOnTheCallersThreadKeepsTheBuffer() throws {
    var (job, buffer) = Self.job()
    let outcome = job.run()
    #expect(outcome.records.isEmpty && outcome.durable.count == 1)
    #expect(Self.buffer(of: outcome.records) == buffer)
  }

  @Test func aSyncOnTheQueueKeepsTheBuffer() throws {
    let sync = BackgroundSync()
    // The job waits at the gate until the test has let go of every copy of it.
    let gated = GatedFileSystem(MemoryFileSystem())
    let buffer: UnsafeRawPointer?
    do {
      let (job, address) = Self.job(compactingOn: gated)
      buffer = address
      sync.start(job)
    }
    gated.gate.signal()
    sync.wait()
    let outcome = try #require(sync.take())
    #expect(outcome.records.isEmpty && outcome.durable.count == 1)
    #expect(Self.buffer(of: outcome.records) == buffer)
  }
}
