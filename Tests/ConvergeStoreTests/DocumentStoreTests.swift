import Converge
import Foundation
import Testing

@testable import ConvergeStore

/// A manual clock for group commit.
final class ManualClock: @unchecked Sendable {
  // `@unchecked`: tests drive it from one task.
  var now: Duration = .zero
}

let directory = "/store"
let note = EntityKey(type: "note", id: "body")

func configuration(_ fileSystem: MemoryFileSystem, _ clock: ManualClock = ManualClock())
  -> DocumentStore.Configuration
{
  var configuration = DocumentStore.Configuration()
  configuration.fileSystem = fileSystem
  configuration.now = { clock.now }
  configuration.wallClock = .fixed(0)
  // Syncs on the caller's thread, so the tests see each one as it happens; the torture
  // command and the real-kill test run the background path.
  configuration.syncInBackground = false
  return configuration
}

/// Types `text` into the note, one commit per character.
func type(_ text: String, into store: DocumentStore) {
  for scalar in text.unicodeScalars {
    let length = store.replica.document.text(of: "body", in: note).unicodeScalars.count
    store.transact { $0.insertText(String(scalar), at: length, in: "body", of: note) }
  }
}

@Suite struct DocumentStoreTests {
  @Test func reopeningKeepsTheDocumentAndTheReplicaID() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    #expect(store.recovery.identityChange == .firstLaunch)
    type("hello", into: store)
    try store.compact()
    type(" world", into: store)
    try store.close()
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem))
    #expect(reopened.replica.document == store.replica.document)
    #expect(reopened.replica.id == store.replica.id)
    #expect(reopened.recovery.identityChange == nil)
    #expect(reopened.recovery.previousRunClosedCleanly)
    #expect(reopened.recovery.snapshotGeneration == 1)
    #expect(reopened.recovery.replayedRecords == 6)
  }

  @Test func aClosedStoreWritesNothingMoreAndSaysSo() throws {
    let fileSystem = MemoryFileSystem()
    let clock = ManualClock()
    let store = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem, clock))
    type("a", into: store)
    try store.close()
    let files = try fileSystem.contents(ofDirectory: directory).sorted()
    let bytes = files.map { fileSystem.bytes(directory + "/" + $0) }
    // An edit and a peer's delta after close: applied in memory (the app still shows
    // them), never written, and the store says why.
    clock.now += .seconds(10)
    type("b", into: store)
    #expect(store.lastError == .closed)
    #expect(throws: StoreError.closed) { try store.syncIfDue() }
    #expect(throws: StoreError.closed) { try store.flush() }
    #expect(try fileSystem.contents(ofDirectory: directory).sorted() == files)
    #expect(files.map { fileSystem.bytes(directory + "/" + $0) } == bytes)
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem, clock))
    #expect(reopened.replica.document.text(of: "body", in: note) == "a")
  }

  @Test func groupCommitSyncsOncePerIntervalAndReportsOnlyDurableDeltas() throws {
    let fileSystem = MemoryFileSystem()
    let clock = ManualClock()
    let store = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem, clock))
    var durable: [[UInt8]] = []
    store.onDurable = { durable += $0 }
    fileSystem.resetCounts()
    for step in 1...50 {
      clock.now += .milliseconds(10)
      type("x", into: store)
      // A sync happens only when 200 ms passed since the last one.
      #expect(store.syncCount == step / 20, "step \(step)")
      #expect(durable.count == store.durableCommits)
    }
    #expect(fileSystem.calls(.sync) == 2)
    #expect(store.durableCommits == 40)
    try store.flush()
    #expect(durable.count == 50)
    let rebuilt = try durable.reduce(into: Replica()) { try $0.apply(encodedDelta: $1) }
    #expect(rebuilt.document == store.replica.document)
  }

  /// A durable delta handed to the app is an array of its own bytes: a sync of a single
  /// commit once shared the store's whole pending buffer with it (an `Array` made of a
  /// slice spanning its buffer shares the buffer), so the app held that buffer's
  /// capacity per delta and the store allocated another as large for the next commits.
  @Test func aDurableDeltaHoldsOnlyItsOwnBytes() throws {
    let store = try DocumentStore(
      directory: directory, configuration: configuration(MemoryFileSystem()))
    let long = String(repeating: "x", count: 100_000)
    store.transact { $0.setValue(.string(long), for: "draft", of: note) }
    try store.flush()
    // The store keeps two buffers, the one being synced and the next commits': each small
    // commit below lands in one of them after the large one's buffer came back empty.
    for character in ["a", "b", "c"] {
      type(character, into: store)
      try store.flush()
    }
    let durable = store.takeDurableDeltas()
    #expect(durable.count == 4)
    for delta in durable {
      #expect(delta.capacity < delta.count + 1_024, "\(delta.count) bytes in \(delta.capacity)")
    }
  }

  /// Compaction waits until the log outgrows the last snapshot as well as the configured
  /// size, so a large document is not rewritten for every few commits of log.
  @Test func compactionWaitsForTheLogToOutgrowTheLastSnapshot() throws {
    let clock = ManualClock()
    var settings = configuration(MemoryFileSystem(), clock)
    settings.compactionLogBytes = 256
    let store = try DocumentStore(directory: directory, configuration: settings)
    store.transact {
      $0.setValue(.string(String(repeating: "x", count: 4_000)), for: "draft", of: note)
    }
    try store.compact()
    let generation = store.generation
    let snapshot = store.snapshotBytes
    #expect(snapshot > 4_000)
    var compactedAt: Int?
    for step in 0..<2_000 where compactedAt == nil {
      let before = store.logBytes
      clock.now += .seconds(1)
      type("y", into: store)  // one commit, framed in well under 100 bytes
      if store.generation != generation {
        compactedAt = step
        #expect(before > snapshot - 100, "compacted after \(before) bytes of log")
      } else {
        #expect(store.logBytes <= snapshot)
      }
    }
    #expect(compactedAt != nil)
    #expect(store.generation == generation + 1)
  }

  /// An app that commits from ``DocumentStore/onDurable`` (a receipt, say) loses nothing:
  /// the store settles its own state before it calls out, through a flush and through a
  /// compaction.
  @Test func aCommitMadeWhileDeltasAreReportedDurableIsKept() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    var receipts = 0
    store.onDurable = { deltas in
      guard receipts < 2 else { return }
      receipts += 1
      store.transact { $0.setValue(.int(Int64(deltas.count)), for: "receipt", of: note) }
    }
    type("ab", into: store)
    try store.flush()
    #expect(store.committed == 3)
    try store.compact()
    #expect(store.committed == 4)
    try store.close()
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem))
    #expect(reopened.replica.document == store.replica.document)
    #expect(reopened.replica.document.value(of: "receipt", in: note) == .int(1))
  }

  @Test func aPowerCutKeepsEverySyncedCommitAndTheReplicaID() throws {
    let fileSystem = MemoryFileSystem()
    let clock = ManualClock()
    let store = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem, clock))
    type("durable", into: store)
    try store.flush()
    let synced = store.replica.document
    type(" lost", into: store)
    fileSystem.crash()
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem, clock))
    #expect(reopened.replica.document == synced)
    #expect(!reopened.recovery.previousRunClosedCleanly)
    // The unsynced dots never left the device, so reissuing them is safe.
    #expect(reopened.recovery.identityChange == nil)
    #expect(reopened.replica.id == store.replica.id)
  }

  @Test func aTornTailAfterAnUncleanShutdownTakesAFreshID() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("abc", into: store)
    try store.flush()
    type("def", into: store)
    try fileSystem.append(
      RecordFrame.framed(store.pending.payloads()), to: directory + "/" + DocumentStore.logName(0))
    fileSystem.crash { $0 - 3 }
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem))
    #expect(reopened.recovery.cutTails.count == 1)
    #expect(reopened.recovery.identityChange == .uncleanShutdownUnproven)
    #expect(reopened.replica.id != store.replica.id)
    #expect(reopened.replica.document.text(of: "body", in: note) == "abcde")
  }

  @Test func aCopiedDirectoryTakesAFreshID() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("abc", into: store)
    try store.close()
    fileSystem.copyDirectory(directory, to: "/copy")
    let copy = try DocumentStore(directory: "/copy", configuration: configuration(fileSystem))
    #expect(copy.recovery.identityChange == .copiedOrRestored)
    #expect(copy.replica.id != store.replica.id)
    #expect(copy.replica.document == store.replica.document)
  }

  @Test func aPeerHoldingLaterDotsOfThisIDForcesAFreshID() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("abc", into: store)
    let id = store.replica.id
    var beyond = store.replica.context
    beyond.insert(Dot(replica: id, counter: 10))
    try store.recordAcknowledgement(beyond, from: "relay")
    #expect(store.replica.id != id)
    #expect(store.identityChanges.last == .peerHoldsLaterDots)
    type("d", into: store)
    #expect(store.replica.context.counters(of: id).maximum == 3)
  }

  @Test func pendingEntitiesFollowAcknowledgements() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    let other = EntityKey(type: "note", id: "other")
    type("abc", into: store)
    store.transact { $0.setValue(.string("Title"), for: "title", of: other) }
    #expect(store.pendingCount == 2)
    let outbox = try store.outbox(for: "relay")
    var relay = Replica()
    relay.apply(outbox)
    #expect(relay.document == store.replica.document)
    try store.recordAcknowledgement(relay.context, from: "relay")
    #expect(store.pendingCount == 0)
    store.transact { $0.setValue(.string("New"), for: "title", of: other) }
    #expect(store.isPending(other) && !store.isPending(note))
    #expect(try store.outbox(for: "relay").keys == [other])
    try store.close()
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem))
    #expect(reopened.pendingEntities == [other])
    #expect(reopened.acknowledgedContext(of: "relay") == relay.context)
  }
}
