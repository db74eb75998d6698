import ConvergeRelayClient
import Foundation
import Synchronization
import Testing

@testable import Converge
@testable import ConvergeRelay

/// Two relay processes sharing one store: the cut one of them recorded is the cut the
/// other serves a rejoin with and forgets by (issue #48, `converge-relay simulate` with two
/// relays and rejoins).
@Suite struct SharedCutTests {
  static let secret = EntityKey(type: "note", id: "secret")
  static let kept = EntityKey(type: "note", id: "kept")

  /// A space whose log holds a note created and deleted and a kept note, with the cut that
  /// makes the delete stable recorded as another process would have (it forgot by it).
  static func recordedSpace(_ store: SQLiteRelayStore, space: String) async throws
    -> (cut: RelayStableCut, beforeDelete: Document, current: Document)
  {
    var writer = Replica(document: Document(), id: ReplicaID(rawValue: 0xA1))
    let made = writer.transact { tx in
      tx.create(Self.secret)
      tx.setValue(.string("deleted diary title"), for: "title", of: Self.secret)
      tx.create(Self.kept)
      tx.setValue(.string("kept title"), for: "title", of: Self.kept)
    }
    let beforeDelete = writer.document
    let deleted = writer.transact { tx in tx.delete(Self.secret) }
    _ = try await store.append(space: space, delta: made.delta.encoded())
    _ = try await store.append(space: space, delta: deleted.delta.encoded())
    let cut = RelayStableCut(stable: writer.context, covering: writer.context)
    try await store.recordStableCut(space: space, cut: cut)
    return (cut, beforeDelete, writer.document)
  }

  @Test func theStoreKeepsTheWholeCutAndReadsAStableContextAlone() async throws {
    let store = try await SQLiteRelayStore.open(path: temporaryDirectory() + "/relay.sqlite")
    defer { Task { try? await store.close() } }
    #expect(try await store.recordedCut(space: "none") == nil)
    #expect(try await store.stableCut(space: "none").isEmpty)
    var stable = CausalContext()
    stable.insert(Dot(replica: ReplicaID(rawValue: 7), counter: 1))
    var covering = stable
    covering.insert(Dot(replica: ReplicaID(rawValue: 8), counter: 1))
    let cut = RelayStableCut(stable: stable, covering: covering)
    try await store.recordStableCut(space: "s", cut: cut)
    #expect(try await store.recordedCut(space: "s") == cut)
    #expect(try await store.stableCut(space: "s") == stable)
    // A row written before the covering context was kept: the stable context alone.
    #expect(
      try SQLiteRelayStore.decodeStoredCut(stable.encoded())
        == RelayStableCut(stable: stable, covering: stable))
  }

  /// Before the fix a process that had not computed the cut itself answered a rejoin's
  /// bootstrap (an empty context) with no cut and a state still holding the deleted note:
  /// the rejoined device rebased on it and kept (or revived) fields the others forgot.
  @Test func aBootstrapOnAnotherProcessIsServedTheRecordedCutAndAForgottenState()
    async throws
  {
    let store = try await SQLiteRelayStore.open(path: temporaryDirectory() + "/relay.sqlite")
    defer { Task { try? await store.close() } }
    let space = "shared-cut"
    let recorded = try await Self.recordedSpace(store, space: space).cut
    let hub = SpaceHub(space: space, store: store, compactionInterval: 1_000, waitingLimit: 100)
    let sent = Mutex<[[UInt8]]>([])
    await hub.subscribe(1) { bytes in
      sent.withLock { $0.append(bytes) }
      return true
    }
    let fresh = ReplicaID(rawValue: 0xC3)
    let grant = RelayGrant(
      space: space, canWrite: true, expiry: Date(timeIntervalSinceNow: 3_600),
      replicas: [fresh])
    let admission = try await hub.admit(1, grant: grant, context: CausalContext())
    guard case .admitted(let cut?) = admission else {
      Issue.record("a bootstrap was served no cut: \(admission)")
      return
    }
    #expect(cut.stable.includes(recorded.stable))
    let state = await hub.replica.document
    #expect(!state.contains(Self.secret))
    #expect(state.entities[Self.secret] == nil)
    #expect(state.contains(Self.kept))
    // The socket being admitted gets the cut after its answer (from the admission), not
    // before it.
    #expect(
      !sent.withLock { messages in
        messages.contains { RelayAcknowledgement.envelopeKind($0[...]) == RelayStableCut.kind }
      })
  }

  /// A process reading a new replica's entry (a rejoin's re-applied edits, rebased on the
  /// recorded cut) forgets by the recorded cut before it applies it: otherwise the rebase's
  /// re-created note would show the fields the rejoin's cut forgot.
  @Test func anEntryOfANewReplicaIsAppliedAfterTheRecordedCut() async throws {
    let store = try await SQLiteRelayStore.open(path: temporaryDirectory() + "/relay.sqlite")
    defer { Task { try? await store.close() } }
    let space = "shared-cut-read"
    let (recorded, beforeDelete, current) = try await Self.recordedSpace(store, space: space)
    let hub = SpaceHub(space: space, store: store, compactionInterval: 1_000, waitingLimit: 100)
    await hub.subscribe(1) { _ in true }
    try await hub.refresh()
    // The hub read the log without a socket's handshake: it holds the deleted record.
    #expect(await hub.replica.document.entities[Self.secret] != nil)
    // A device that left before the delete edited the note away; retired, it rejoins
    // rebased on the recorded cut, which brings the note back whole from its view.
    var away = Replica(document: beforeDelete, id: ReplicaID(rawValue: 0xB2))
    _ = away.transact { tx in
      tx.setValue(.string("typed away"), for: "mood", of: Self.secret)
    }
    let rebase = Replica.rebasing(
      away.document, onto: current, stable: recorded.stable, as: ReplicaID(rawValue: 0xD4))
    #expect(rebase.replica.document.contains(Self.secret))
    _ = try await store.append(space: space, delta: rebase.delta.encoded())
    try await hub.refresh()
    let state = await hub.replica.document
    #expect(state == rebase.replica.document)
    #expect(await hub.publishedCut?.stable.includes(recorded.stable) == true)
  }
}
