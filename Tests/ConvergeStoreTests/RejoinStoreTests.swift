import Converge
import Foundation
import Testing

@testable import ConvergeStore

/// Fresh ids from a counter: the same run takes the same ids.
private final class IDSequence: @unchecked Sendable {
  // `@unchecked`: every access goes through `lock`.
  private let lock = NSLock()
  private var next: UInt64
  init(from first: UInt64) { next = first }
  func take() -> ReplicaID {
    lock.withLock {
      defer { next += 1 }
      return ReplicaID(rawValue: next)
    }
  }
}

/// A retired device's rejoin through its store: the rebased state under a fresh id,
/// written as one snapshot, its edits pending until the relay acknowledges them.
@Suite struct RejoinStoreTests {
  private static let kept = EntityKey(type: "note", id: "kept")
  private static let gone = EntityKey(type: "note", id: "gone")
  private static let offline = EntityKey(type: "note", id: "offline")
  private static let theirs = EntityKey(type: "note", id: "theirs")

  private static func settings(_ disk: MemoryFileSystem) -> DocumentStore.Configuration {
    var settings = configuration(disk)
    let ids = IDSequence(from: 100)
    settings.freshID = { ids.take() }
    return settings
  }

  /// A device whose two notes reached the relay; then, while it was away, the relay's
  /// other device deleted one (forgotten by the stable cut) and wrote a note of its own,
  /// and the device typed in both of its notes and created a third. Returns the store and
  /// the relay's state (`current`, already forgotten by `stable`).
  private static func retiredDevice(_ disk: MemoryFileSystem) throws -> (
    store: DocumentStore, current: Document, stable: CausalContext
  ) {
    let store = try DocumentStore(directory: directory, configuration: settings(disk))
    store.transact { tx in
      tx.insertText("kept", at: 0, in: "body", of: kept)
      tx.insertText("gone", at: 0, in: "body", of: gone)
    }
    var relay = Replica(id: ReplicaID(rawValue: 7), wallClock: .fixed(0))
    relay.apply(try store.outbox(for: "relay"))
    try store.recordAcknowledgement(relay.context, from: "relay")
    relay.transact { tx in
      tx.delete(gone)
      tx.setValue(.string("theirs"), for: "title", of: theirs)
    }
    let stable = relay.context
    var current = relay.document
    current.forgetDeleted(stable: stable)
    store.transact { tx in
      tx.insertText(" more", at: 4, in: "body", of: kept)
      tx.insertText(" x", at: 4, in: "body", of: gone)
      tx.setValue(.string("new"), for: "title", of: offline)
    }
    try store.flush()
    return (store, current, stable)
  }

  @Test func aReopenAfterARejoinShowsTheRebasedStateUnderTheFreshID() throws {
    let disk = MemoryFileSystem()
    let (store, current, stable) = try Self.retiredDevice(disk)
    let retired = store.replica.id
    #expect(store.pendingCount == 3)
    let rebase = try store.rejoin(onto: current, stable: stable, heldBy: "relay")
    #expect(rebase.replica.id != retired)
    #expect(store.replica.id == rebase.replica.id)
    #expect(store.identityChanges.last == .retired)
    let document = store.replica.document
    #expect(document.text(of: "body", in: Self.kept) == "kept more")
    // An edit the delete did not see keeps the deleted note alive, whole.
    #expect(document.text(of: "body", in: Self.gone) == "gone x")
    #expect(document.value(of: "title", in: Self.offline) == .string("new"))
    #expect(document.value(of: "title", in: Self.theirs) == .string("theirs"))
    // The re-applied edits are pending: three entities, none of them the relay's own.
    #expect(store.pendingEntities == [Self.gone, Self.kept, Self.offline].sorted())
    #expect(store.acknowledgedContext(of: "relay") == current.context)
    #expect(store.acknowledgedContext(of: "other").isEmpty)
    // The outbox is exactly the re-applied edits: the relay applying it holds the same.
    let outbox = try store.outbox(for: "relay")
    #expect(outbox.context.counters(of: retired).isEmpty)
    var relay = current
    relay.apply(outbox)
    #expect(relay == document)
    try store.close()

    let reopened = try DocumentStore(directory: directory, configuration: Self.settings(disk))
    #expect(reopened.recovery.identityChange == nil)
    #expect(reopened.replica.id == rebase.replica.id)
    #expect(reopened.replica.document == document)
    #expect(reopened.pendingCount == 3)
    try reopened.recordAcknowledgement(relay.context, from: "relay")
    #expect(reopened.pendingCount == 0)
    try reopened.close()
  }

  @Test func aRejoinWithoutAPeerResetsEveryAcknowledgement() throws {
    let disk = MemoryFileSystem()
    let (store, current, stable) = try Self.retiredDevice(disk)
    try store.rejoin(onto: current, stable: stable)
    #expect(store.acknowledgedContext(of: "relay").isEmpty)
    #expect(try store.outbox(for: "relay") == store.replica.delta(since: CausalContext()))
    // With no peer known to hold anything, every entity is pending (the rule an open
    // applies): the relay's own note too, until the relay acknowledges it.
    #expect(store.pendingEntities == [Self.gone, Self.kept, Self.offline, Self.theirs].sorted())
    try store.close()
    let reopened = try DocumentStore(directory: directory, configuration: Self.settings(disk))
    #expect(reopened.acknowledgedContext(of: "relay").isEmpty)
    #expect(reopened.pendingCount == 4)
    // An open counts an entity pending until some peer holds every unacknowledged
    // counter (a conservative rule): the relay acknowledging the whole state settles all.
    try reopened.recordAcknowledgement(current.context, from: "relay")
    #expect(reopened.pendingCount == 4)
    try reopened.recordAcknowledgement(reopened.replica.context, from: "relay")
    #expect(reopened.pendingCount == 0)
  }

  /// Cuts the power at every file operation of a rejoin (the failed operation and every
  /// one after it never happen): each reopen holds the old state under the retired id or
  /// the rebased state under the fresh one, and the next open (after a compaction) agrees.
  @Test func aCrashAtEveryStepOfARejoinReopensTheOldStateOrTheNew() throws {
    var step = 0
    var outcomes: Set<String> = []
    while true {
      let disk = MemoryFileSystem()
      let (store, current, stable) = try Self.retiredDevice(disk)
      let old = store.replica
      // The id the rejoin takes: the next of the store's sequence (100 was its first).
      let expected = Replica.rebasing(
        old.document, onto: current, stable: stable, as: ReplicaID(rawValue: 101),
        wallClock: .fixed(0)
      ).replica
      disk.failAnyOperation(at: step)
      let completed =
        (try? store.rejoin(onto: current, stable: stable, heldBy: "relay")) != nil
        && store.lastError == nil
      disk.crash()
      for open in 0..<2 {
        let reopened = try DocumentStore(directory: directory, configuration: Self.settings(disk))
        let label = "crash at operation \(step), open \(open)"
        #expect(reopened.recovery.losses.isEmpty, "\(label)")
        if reopened.replica.id == old.id {
          outcomes.insert("old")
          #expect(reopened.replica.document == old.document, "\(label)")
          #expect(reopened.pendingCount == 3, "\(label)")
        } else {
          outcomes.insert("new")
          #expect(reopened.replica.id == expected.id, "\(label)")
          #expect(reopened.replica.document == expected.document, "\(label)")
          #expect(reopened.recovery.identityChange == nil, "\(label)")
        }
        #expect(!completed || reopened.replica.id == expected.id, "\(label)")
        // A compaction makes the generation the rejoin named: the next open must still
        // continue the id this one did.
        if open == 0 { try reopened.compact() }
        try reopened.close()
      }
      if completed { break }
      step += 1
    }
    #expect(outcomes == ["old", "new"])
    #expect(step > 10)
    print("a rejoin is durable after \(step) file operations")
  }

  @MainActor @Test func aDeviceReplicaRejoinsClearsItsUndoAndTellsItsObservers() async throws {
    let disk = MemoryFileSystem()
    let (store, current, stable) = try Self.retiredDevice(disk)
    let owner = DeviceReplica(store: store)
    owner.transact { $0.setValue(.string("undoable"), for: "title", of: Self.kept) }
    try owner.flush()
    #expect(owner.canUndo && owner.pendingCount == 3)
    let events = owner.events()
    let retired = owner.id
    let rebase = try owner.rejoin(onto: current, stable: stable, heldBy: "relay")
    #expect(owner.id == rebase.replica.id && owner.id != retired)
    #expect(!owner.canUndo && !owner.canRedo)
    #expect(owner.identityChanges.last == .retired)
    #expect(owner.pendingCount == 3)
    #expect(owner.replica.document.value(of: "title", in: Self.kept) == .string("undoable"))
    var iterator = events.makeAsyncIterator()
    switch await iterator.next() {
    case .identityChanged(let change)?: #expect(change == .retired)
    default: Issue.record("expected the identity change first")
    }
    // An edit after the rejoin is the fresh id's, and pending like any other.
    owner.transact { $0.setValue(.string("later"), for: "title", of: Self.theirs) }
    #expect(owner.pendingCount == 4)
    try owner.flush()
    #expect(owner.replica.context.counters(of: retired).maximum <= retiredMaximum(current, retired))
  }

  private func retiredMaximum(_ current: Document, _ retired: ReplicaID) -> UInt64 {
    current.context.counters(of: retired).maximum
  }
}
