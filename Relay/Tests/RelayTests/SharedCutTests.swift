import ConvergeRelayClient
import Foundation
import Synchronization
import Testing

@testable import Converge
@testable import ConvergeDocument
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
      try RelayStableCut(decodingStored: stable.encoded()[...])
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

/// A rejoin in flight holds the cut back (issue #48: `converge-relay simulate` seeds 14, 19
/// and 25 refused a rejoined device with `replicaNotGranted`, seed 11 left the store on
/// another document than the devices).
///
/// A rejoin is served a state S and a cut C, rebases its offline edits on S forgotten by
/// C, and pushes them under its fresh id; an entity it edited away that S holds deleted
/// (not forgotten) comes back through a delta that creates it again and re-applies only
/// the edits S lacks. That delta converges only on replicas that still hold the deleted
/// record: ones that forgot it by a larger cut meanwhile get the re-applied fields alone,
/// and the relay's authorship check refuses the delta outright, its presence naming
/// events of the entity the relay no longer holds. Before the fix the fresh id's record
/// stated nothing and counted only while its bootstrap socket was open on the process
/// computing the cut: once that socket closed (or on any other process) the cut moved past
/// the delete before the rebased edits arrived.
@Suite struct RejoinInFlightCutTests {
  static let secret = SharedCutTests.secret
  static let writer = ReplicaID(rawValue: 0xA1)
  static let away = ReplicaID(rawValue: 0xB2)
  static let fresh = ReplicaID(rawValue: 0xD4)

  static func grant(_ replica: ReplicaID, space: String) -> RelayGrant {
    RelayGrant(
      space: space, canWrite: true, expiry: Date(timeIntervalSinceNow: 3_600),
      replicas: [replica])
  }

  @Test func aBootstrapHoldsTheCutAtWhatItWasToldUntilItsRebasedEditsArrive() async throws {
    let store = try await SQLiteRelayStore.open(path: temporaryDirectory() + "/relay.sqlite")
    defer { Task { try? await store.close() } }
    let space = "rejoin-in-flight"
    // The writer makes a note; the device that will be retired saw it, then left and
    // edited it away; the writer deleted it meanwhile.
    var writer = Replica(document: Document(), id: Self.writer)
    let made = writer.transact { tx in
      tx.create(Self.secret)
      tx.setValue(.string("diary title"), for: "title", of: Self.secret)
      tx.insert(.string("private"), into: "tags", of: Self.secret)
    }
    var away = Replica(document: writer.document, id: Self.away)
    _ = away.transact { tx in
      tx.setValue(.string("typed away"), for: "mood", of: Self.secret)
    }
    let deleted = writer.transact { tx in tx.delete(Self.secret) }
    _ = try await store.append(space: space, delta: made.delta.encoded())
    _ = try await store.append(space: space, delta: deleted.delta.encoded())
    let seconds = Date().relaySeconds
    try await store.record(
      space: space,
      devices: [
        RelayDeviceRecord(
          replica: Self.writer, seen: writer.context, lastHeard: seconds,
          expiry: seconds + 3_600, isRetired: false),
        RelayDeviceRecord(
          replica: Self.away, seen: made.delta.context, lastHeard: seconds - 10_000,
          expiry: seconds + 3_600, isRetired: true),
      ])
    // Two processes on the store: the bootstrap is served by `served`.
    let served = SpaceHub(space: space, store: store, compactionInterval: 1_000, waitingLimit: 100)
    let other = SpaceHub(space: space, store: store, compactionInterval: 1_000, waitingLimit: 100)
    await served.subscribe(1) { _ in true }
    let admission = try await served.admit(
      1, grant: Self.grant(Self.fresh, space: space), context: CausalContext())
    guard case .admitted(let told) = admission else {
      Issue.record("the bootstrap was refused: \(admission)")
      return
    }
    try await served.refresh()
    let state = await served.replica.document
    #expect(state.entities[Self.secret] != nil)
    // The bootstrap closes; the writer reports what it holds to the other process.
    await served.unsubscribe(1)
    try await other.noteSeen(grant: Self.grant(Self.writer, space: space), seen: writer.context)
    let recorded = try await store.stableCut(space: space)
    let toldStable = told?.stable ?? CausalContext()
    #expect(
      toldStable.includes(recorded),
      "the cut moved past what the rejoin was told while its rebase was in flight")
    // The rejoin rebases on what it was served and connects again as the fresh id.
    let rebase = Replica.rebasing(
      away.document, onto: state, stable: toldStable, as: Self.fresh)
    #expect(rebase.replica.document.contains(Self.secret))
    await served.subscribe(2) { _ in true }
    let again = try await served.admit(
      2, grant: Self.grant(Self.fresh, space: space), context: rebase.replica.context)
    #expect(again != .retired)
    let refusal = await Self.grant(Self.fresh, space: space).refusal(
      toPush: rebase.delta, known: await served.replica.document)
    #expect(refusal == nil, "the rebased edits were refused: \(String(describing: refusal))")
    guard refusal == nil else { return }
    _ = try await served.commit(rebase.delta, from: 2)
    #expect(await served.replica.document == rebase.replica.document)
    // Once the rejoined device reports, the cut moves on, and the note it brought back
    // is the same on the device, on both processes and in the store.
    try await served.noteSeen(
      grant: Self.grant(Self.fresh, space: space), seen: rebase.replica.context)
    try await other.noteSeen(
      grant: Self.grant(Self.writer, space: space), seen: served.replica.context)
    try await other.refresh()
    var device = rebase.replica
    device.forgetDeleted(stable: try await store.stableCut(space: space))
    #expect(await served.replica.document == device.document)
    #expect(await other.replica.document == device.document)
  }
}

/// A device connected to one relay process and retired by another (which judges it by its
/// record alone: a heartbeat that came late, a clock ahead) is closed with `retired` by the
/// process holding its socket, at its next heartbeat or cut computation, so it rejoins
/// instead of pushing edits the cut no longer waits for.
@Suite struct RetiredElsewhereTests {
  @Test func aSocketWhoseDeviceAnotherProcessRetiredIsClosedWithRetired() async throws {
    let store = try await SQLiteRelayStore.open(path: temporaryDirectory() + "/relay.sqlite")
    defer { Task { try? await store.close() } }
    let space = "retired-elsewhere"
    let (phone, laptop) = (ReplicaID(rawValue: 0xA1), ReplicaID(rawValue: 0xB2))
    var writer = Replica(document: Document(), id: phone)
    let made = writer.transact { tx in
      tx.setValue(.string("t"), for: "title", of: SharedCutTests.kept)
    }
    _ = try await store.append(space: space, delta: made.delta.encoded())
    // The phone's socket is on `holding`; `other` runs with a clock past the horizon.
    let holding = SpaceHub(
      space: space, store: store, compactionInterval: 1_000, waitingLimit: 100,
      retireAfter: .seconds(60))
    let other = SpaceHub(
      space: space, store: store, compactionInterval: 1_000, waitingLimit: 100,
      retireAfter: .seconds(60), now: { Date(timeIntervalSinceNow: 600) })
    let closed = Mutex<[RelayCloseReason]>([])
    await holding.subscribe(
      1, close: { reason in closed.withLock { $0.append(reason) } }, send: { _ in true })
    let phoneGrant = RejoinInFlightCutTests.grant(phone, space: space)
    let admission = try await holding.admit(1, grant: phoneGrant, context: writer.context)
    #expect(admission != .retired)
    await holding.touchConnectedDevices()
    #expect(closed.withLock { $0 }.isEmpty)
    // The laptop reports to the other process, which retires the phone as silent.
    try await other.noteSeen(
      grant: RejoinInFlightCutTests.grant(laptop, space: space), seen: writer.context)
    let records = try await store.devices(space: space)
    #expect(records.first { $0.replica == phone }?.isRetired == true)
    // The holding process learns it at its next heartbeat and closes the socket once.
    await holding.touchConnectedDevices()
    await holding.touchConnectedDevices()
    #expect(closed.withLock { $0 } == [.retired])
    #expect(await holding.connectedDevices[1] == nil)
  }

  /// A process whose devices are quiet computes no cut of its own; its heartbeat adopts the
  /// one another process recorded and tells its sockets, so they forget what the store
  /// forgot.
  @Test func theHeartbeatTellsTheSocketsACutAnotherProcessRecorded() async throws {
    let store = try await SQLiteRelayStore.open(path: temporaryDirectory() + "/relay.sqlite")
    defer { Task { try? await store.close() } }
    let space = "heartbeat-cut"
    let (recorded, _, current) = try await SharedCutTests.recordedSpace(store, space: space)
    let hub = SpaceHub(space: space, store: store, compactionInterval: 1_000, waitingLimit: 100)
    let sent = Mutex<[[UInt8]]>([])
    await hub.subscribe(1) { bytes in
      sent.withLock { $0.append(bytes) }
      return true
    }
    let reader = ReplicaID(rawValue: 0xE5)
    // Admitted by a live push (no handshake): the hub adopts nothing at admission.
    let admission = try await hub.admit(
      1, grant: RejoinInFlightCutTests.grant(reader, space: space), context: nil)
    #expect(admission == .admitted(nil))
    try await hub.refresh()
    #expect(await hub.replica.document.entities[SharedCutTests.secret] != nil)
    await hub.touchConnectedDevices()
    #expect(await hub.publishedCut?.stable.includes(recorded.stable) == true)
    #expect(
      await hub.replica.document
        == {
          var forgotten = current
          _ = forgotten.forgetDeleted(stable: recorded.stable)
          return forgotten
        }())
    let cuts = sent.withLock { messages in
      messages.filter { RelayAcknowledgement.envelopeKind($0[...]) == RelayStableCut.kind }
    }
    #expect(cuts.count == 1)
  }
}
