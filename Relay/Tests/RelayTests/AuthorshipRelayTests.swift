import ConvergeRelay
import ConvergeRelayClient
import Foundation
import Testing

// Internal initializers build the forged deltas: no correct replica makes them, so the
// public API cannot. The relay's tests are built in debug, where Converge is testable.
@testable import Converge
@testable import ConvergeCRDTs
@testable import ConvergeDocument

/// The three forgeries of issue #43, each pushed to a live relay by a device whose token
/// grants replica A, against replica B's note: each closes with its typed reason, none of
/// it is committed, and B's later edits are acknowledged and visible.
@Suite(.timeLimit(.minutes(1))) struct AuthorshipRelayTests {
  let a = ReplicaID(rawValue: 0xA)
  let b = ReplicaID(rawValue: 0xB)
  let note = EntityKey(type: "note", id: "n1")

  /// B's note on the relay: title, tag and body "hello" (events B:1…8); returns B's
  /// replica.
  func victimsNote(on relay: LiveRelay, space: String) async throws -> Replica {
    let (victim, made) = victimsEdit()
    try await push(made, as: b, to: relay, space: space)
    return victim
  }

  /// B's replica with its note, and the delta that made it.
  func victimsEdit() -> (Replica, DocumentDelta) {
    var victim = Replica(id: b)
    let made = victim.transact { tx in
      tx.create(note)
      tx.setValue(.string("B's title"), for: "title", of: note)
      tx.insert(.string("b-tag"), into: "tags", of: note)
      tx.insertText("hello", at: 0, in: "body", of: note)
    }
    return (victim, made.delta)
  }

  /// Pushes `delta` with a token for `replica` and waits for its acknowledgement.
  func push(_ delta: DocumentDelta, as replica: ReplicaID, to relay: LiveRelay, space: String)
    async throws
  {
    let token = try await relay.token(space: space, replicas: [replica])
    let result = try await exchange(
      url: relay.url(space: space), token: token, messages: [delta.encoded()],
      until: { $0.count >= 1 })
    #expect(result.closeReason == nil)
    #expect(result.acknowledgements.first?.durable.includes(delta.context) == true)
  }

  /// Pushes `forged` with A's token and returns how the relay closed (`nil` if it
  /// acknowledged the forgery instead).
  func pushForgery(_ forged: DocumentDelta, to relay: LiveRelay, space: String) async throws
    -> RelayCloseReason?
  {
    let token = try await relay.token(space: space, replicas: [a])
    return try await exchange(
      url: relay.url(space: space), token: token, messages: [forged.encoded()],
      until: { !$0.isEmpty }
    ).closeReason
  }

  /// The space as the store holds it.
  func stored(_ relay: LiveRelay, space: String) async throws -> Replica {
    var replica = Replica()
    let log = try await relay.store.read(space: space, after: 0)
    if let snapshot = log.snapshot { replica = try Replica(restoring: snapshot.state) }
    for entry in log.entries { replica.apply(try DocumentDelta(decoding: entry.delta)) }
    return replica
  }

  /// A delta from A whose context is `context` (A:1 by default), carrying `entity`.
  func forged(_ entity: EntityDelta, context: [Dot] = []) -> DocumentDelta {
    var delta = DocumentDelta()
    delta.context = CausalContext(dots: [Dot(replica: a, counter: 1)] + context)
    delta.entities[note] = entity
    return delta
  }

  /// Forgery 1: a register write stamped with B's title write's dot and a later
  /// timestamp (its context names B's dot too, which the relay holds, as decoding
  /// requires).
  func registerForgery(_ victim: Replica) throws -> DocumentDelta {
    guard case .register(let title)? = victim.document.entities[note]?.fields["title"],
      let stamp = title.stamp
    else { throw RelayTestError("no title") }
    // The entity's versions name the dot too, as decoding requires; the relay holds it.
    var entity = EntityDelta(
      presence: Presence(added: VersionVector([a: 1, b: stamp.dot.counter])))
    entity.fields["title"] = .register(
      LWWRegister(
        value: .string("forged"),
        stamp: .init(timestamp: Timestamp(wallMilliseconds: 4_000_000_000_000), dot: stamp.dot)))
    return forged(entity, context: [stamp.dot])
  }

  /// Forgery 2: text runs with B's next six ids, in a delta whose context is `A:1`.
  /// Its context holds the run's ids, as a text's must (the decoder refuses a run outside
  /// its message's context, `inContext: false`, before any authorship check).
  func textForgery(_ victim: Replica, inContext: Bool = true) -> DocumentDelta {
    let next = victim.context.counters(of: b).maximum + 1
    let scalars = Array("forged".unicodeScalars)
    let run = RGADelta.Insert(
      id: Dot(replica: b, counter: next), lamport: 1_000, origin: nil, rightOrigin: nil,
      scalars: scalars)
    var entity = EntityDelta(presence: .add(Dot(replica: a, counter: 1)))
    entity.fields["body"] = .text(RGADelta(inserts: [run], deletes: []))
    let ids = (0..<UInt64(scalars.count)).map { Dot(replica: b, counter: next + $0) }
    return forged(entity, context: inContext ? ids : [])
  }

  /// Forgery 3: a removal of the note claiming it observed `B: 2^40`.
  func removalForgery() -> DocumentDelta {
    forged(
      EntityDelta(
        presence: Presence(
          added: VersionVector([a: 1]), removed: VersionVector([a: 1, b: 1 << 40]))))
  }

  @Test func aRegisterWriteStampedWithAnotherReplicasDotIsRefused() async throws {
    let relay = try await LiveRelay.start()
    var victim = try await victimsNote(on: relay, space: "s")
    let before = try await relay.store.read(space: "s", after: 0)
    #expect(
      try await pushForgery(registerForgery(victim), to: relay, space: "s") == .replicaNotGranted)
    #expect(try await relay.store.read(space: "s", after: 0) == before)
    #expect(
      try await stored(relay, space: "s").document.value(of: "title", in: note)
        == .string("B's title"))

    let later = victim.transact { $0.setValue(.string("B later"), for: "title", of: note) }
    try await push(later.delta, as: b, to: relay, space: "s")
    #expect(
      try await stored(relay, space: "s").document.value(of: "title", in: note)
        == .string("B later"))
    await relay.stop()
  }

  @Test func textRunsWithAnotherReplicasIdsAreRefused() async throws {
    let relay = try await LiveRelay.start()
    var victim = try await victimsNote(on: relay, space: "s")
    let before = try await relay.store.read(space: "s", after: 0)
    #expect(try await pushForgery(textForgery(victim), to: relay, space: "s") == .replicaNotGranted)
    #expect(
      try await pushForgery(textForgery(victim, inContext: false), to: relay, space: "s")
        == .malformedMessage)
    #expect(try await relay.store.read(space: "s", after: 0) == before)

    // B's next edit takes exactly the ids the forgery used.
    let typed = victim.transact { $0.insertText(" world", at: 5, in: "body", of: note) }
    try await push(typed.delta, as: b, to: relay, space: "s")
    #expect(
      try await stored(relay, space: "s").document.text(of: "body", in: note) == "hello world")
    await relay.stop()
  }

  @Test func aRemovalClaimingFutureEventsOfAnotherReplicaIsRefused() async throws {
    let relay = try await LiveRelay.start()
    try await checkRemovalForgery(on: relay, space: "s")
    await relay.stop()
  }

  @Test func aRemovalClaimingFutureEventsIsRefusedOnPostgreSQL() async throws {
    guard let url = PostgresRelayTests.url else { return }
    let relay = try await LiveRelay.start(postgres: url)
    try await checkRemovalForgery(on: relay, space: PostgresRelayTests.space("authorship"))
    await relay.stop()
  }

  func checkRemovalForgery(on relay: LiveRelay, space: String) async throws {
    var victim = try await victimsNote(on: relay, space: space)
    let before = try await relay.store.read(space: space, after: 0)
    #expect(
      try await pushForgery(removalForgery(), to: relay, space: space) == .observedUnknownEvents)
    #expect(try await relay.store.read(space: space, after: 0) == before)

    let later = victim.transact { $0.setValue(.string("B later"), for: "title", of: note) }
    try await push(later.delta, as: b, to: relay, space: space)
    let state = try await stored(relay, space: space)
    #expect(state.document.value(of: "title", in: note) == .string("B later"))
  }

  /// A's honest edits of B's note (its title, a removal of B's tag, a delete of B's
  /// text, and then deleting the note) are accepted: they name B's events only as the
  /// relay holds them.
  @Test func aDevicesOwnEditsOfAnotherReplicasNoteAreAccepted() async throws {
    let relay = try await LiveRelay.start()
    let victim = try await victimsNote(on: relay, space: "s")
    var sender = Replica(id: a)
    sender.apply(victim.document.delta(since: CausalContext()))
    let edits: [(inout DocumentTransaction) -> Void] = [
      { $0.setValue(.string("A's title"), for: "title", of: note) },
      { $0.remove(.string("b-tag"), from: "tags", of: note) },
      { $0.deleteText(0..<2, in: "body", of: note) },
      { $0.delete(note) },
    ]
    for edit in edits {
      let commit = sender.transact(edit)
      try await push(commit.delta, as: a, to: relay, space: "s")
    }
    #expect(try await stored(relay, space: "s").document == sender.document)
    await relay.stop()
  }

  /// The same forgery over the HTTP pair (driven through the relay's router in this
  /// process) is refused with the same reason's status.
  @Test func theHTTPPushRefusesForgeriesToo() async throws {
    let relay = try await RoutedRelay.open()
    let (_, made) = victimsEdit()
    let victimsToken = try await relay.token(space: "s", replicas: [b])
    let token = try await relay.token(space: "s", replicas: [a])
    let forgery = removalForgery()
    let store = relay.store
    try await relay.test { client in
      let pushed = try await client.send(
        "/v1/spaces/s/push", .post, token: victimsToken, body: made.encoded())
      #expect(pushed.status == .ok)
      let before = try await store.read(space: "s", after: 0)
      let refused = try await client.send(
        "/v1/spaces/s/push", .post, token: token, body: forgery.encoded())
      #expect(refused.status == .forbidden)
      #expect(try await store.read(space: "s", after: 0) == before)
    }
    await relay.close()
  }
}
