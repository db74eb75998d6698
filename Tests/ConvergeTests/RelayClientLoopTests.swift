import Converge
import ConvergeRelayClient
import ConvergeStore
import Foundation
import Testing

/// A relay in memory behind a lock, with the tokens it accepts: what the client's
/// sockets talk to.
final class MemoryRelayServer: @unchecked Sendable {  // guarded by `lock`
  private let lock = NSLock()
  private var relay = MemoryRelay()
  private var accepting: Set<String>
  private var refusal: UInt16
  private var tokensSeen: [String] = []
  /// Messages sent at the next opening, before the client speaks.
  private var openingMessages: [[UInt8]] = []

  init(accepting: Set<String>, refusal: RelayCloseReason = .unauthorized) {
    self.accepting = accepting
    self.refusal = refusal.rawValue
  }

  var tokens: [String] { lock.withLock { tokensSeen } }
  var space: Replica { lock.withLock { relay.space } }

  func sendAtNextOpening(_ messages: [[UInt8]]) { lock.withLock { openingMessages = messages } }

  /// Edits the space's replica directly (another device's edits, already durable).
  func edit(_ body: (inout Replica) -> Void) { lock.withLock { body(&relay.space) } }

  /// Opens a connection: `nil` refused with the close code, otherwise what to send first.
  func open(token: String) -> Result<[[UInt8]], RelayCloseReasonCode> {
    lock.withLock {
      tokensSeen.append(token)
      guard accepting.contains(token) else { return .failure(RelayCloseReasonCode(code: refusal)) }
      relay.connect()
      defer { openingMessages = [] }
      return .success(openingMessages)
    }
  }

  func handle(_ bytes: [UInt8]) throws -> [[UInt8]] {
    try lock.withLock { try relay.handle(bytes) }
  }
}

struct RelayCloseReasonCode: Error { var code: UInt16 }

struct MemorySocket: RelaySocket {
  let server: MemoryRelayServer
  let events: AsyncStream<RelaySocketEvent>.Continuation

  func send(_ bytes: [UInt8]) async throws {
    for reply in try server.handle(bytes) { events.yield(.message(reply)) }
  }

  func close() async {
    events.yield(.closed(code: 1000))
    events.finish()
  }
}

struct MemoryConnector: RelaySocketConnector {
  let server: MemoryRelayServer

  func connect(token: String) async throws -> (
    socket: any RelaySocket, events: AsyncStream<RelaySocketEvent>
  ) {
    let (events, continuation) = AsyncStream.makeStream(of: RelaySocketEvent.self)
    let socket = MemorySocket(server: server, events: continuation)
    switch server.open(token: token) {
    case .failure(let refusal):
      // The relay accepts the upgrade, then closes with its reason.
      continuation.yield(.closed(code: refusal.code))
      continuation.finish()
    case .success(let opening):
      for message in opening { continuation.yield(.message(message)) }
    }
    return (socket, events)
  }
}

/// Tokens handed out in turn: "token-1", "token-2"…
final class TokenProvider: @unchecked Sendable {  // guarded by `lock`
  private let lock = NSLock()
  private var issued: [ReplicaID] = []
  var calls: Int { lock.withLock { issued.count } }
  /// The replica ids the tokens were asked for, in order.
  var ids: [ReplicaID] { lock.withLock { issued } }
  func next(for id: ReplicaID) -> String {
    lock.withLock {
      issued.append(id)
      return "token-\(issued.count)"
    }
  }
}

private let quickBackoff = RelayClient.Backoff(base: .milliseconds(1), maximum: .milliseconds(5))

/// Polls `condition` until it holds (at most ten seconds; a bound, not a timing).
@MainActor
private func eventually(_ condition: () -> Bool) async -> Bool {
  for _ in 0..<1000 {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(10))
  }
  return condition()
}

/// Runs `client` on `owner` until `done` holds for a status it reports; returns the
/// statuses reported.
@MainActor
private func run(
  _ client: RelayClient, _ owner: DeviceReplica, until done: (RelayClientStatus) -> Bool
) async -> [RelayClientStatus] {
  let task = Task { @MainActor in await client.run(owner: owner) }
  var statuses: [RelayClientStatus] = []
  for await status in client.statuses {
    statuses.append(status)
    if done(status) { break }
  }
  task.cancel()
  await task.value
  return statuses
}

// The view model of `RelayClient`'s documentation.
@MainActor final class NotesModel {
  let notes: DeviceReplica
  let relay: RelayClient

  init(notes: DeviceReplica, relay: RelayClient) {
    self.notes = notes
    self.relay = relay
  }

  func sync() async { await relay.run(owner: notes) }  // runs on the main actor
}

@MainActor
@Suite(.timeLimit(.minutes(1))) struct RelayClientLoopTests {
  /// `RelaySession`'s documented loop over a socket, and `RelayClient`'s view model.
  @Test func theDocumentedSamplesSync() async throws {
    let owner = try relayOwner()
    owner.transact { $0.insertText("milk\n", at: 0, in: "body", of: relayNote) }
    try owner.flush()
    let server = MemoryRelayServer(accepting: ["token-1"])
    let (socket, events) = try await MemoryConnector(server: server).connect(token: "token-1")
    var session = RelaySession()
    for bytes in session.open(owner) { try await socket.send(bytes) }

    var inbound = events.makeAsyncIterator()
    let first = await inbound.next()
    guard case .message(let message)? = first else {
      Issue.record("no answer: \(String(describing: first))")
      return
    }
    // for each binary message from the relay:
    for bytes in try session.receive(message, into: owner) { try await socket.send(bytes) }

    // whenever the owner made edits durable (its `onDurable`, or a timer):
    for bytes in session.outgoing(owner) { try await socket.send(bytes) }
    #expect(session.isAnswered)
    #expect(server.space.document.text(of: "body", in: relayNote) == "milk\n")

    let model = NotesModel(
      notes: try relayOwner(),
      relay: RelayClient(
        connector: MemoryConnector(server: server), token: { _ in "token-1" },
        backoff: quickBackoff))
    let sync = Task { await model.sync() }
    #expect(
      await eventually { model.notes.replica.document.text(of: "body", in: relayNote) == "milk\n" })
    sync.cancel()
    await sync.value
  }

  @Test func aRefusedTokenSurfacesItsTypedReasonAndStops() async throws {
    let owner = try relayOwner()
    let server = MemoryRelayServer(accepting: [], refusal: .wrongSpace)
    let tokens = TokenProvider()
    let client = RelayClient(
      connector: MemoryConnector(server: server), token: { tokens.next(for: $0) },
      backoff: quickBackoff)
    await client.run(owner: owner)
    var statuses: [RelayClientStatus] = []
    for await status in client.statuses { statuses.append(status) }
    #expect(statuses == [.offline, .connected, .refused(.wrongSpace)])
    #expect(tokens.calls == 1)
  }

  @Test func anExpiredTokenIsReplacedFromTheProviderAndTheClientSyncs() async throws {
    let owner = try relayOwner()
    owner.transact { $0.insertText("milk\n", at: 0, in: "body", of: relayNote) }
    try owner.flush()
    let server = MemoryRelayServer(accepting: ["token-2"], refusal: .tokenExpired)
    let tokens = TokenProvider()
    let client = RelayClient(
      connector: MemoryConnector(server: server), token: { tokens.next(for: $0) },
      backoff: quickBackoff)
    let statuses = await run(client, owner) { $0 == .upToDate }
    #expect(server.tokens == ["token-1", "token-2"])
    #expect(statuses.last == .upToDate)
    #expect(!statuses.contains { if case .refused = $0 { true } else { false } })
    #expect(server.space.document.text(of: "body", in: relayNote) == "milk\n")
    #expect(owner.pendingCount == 0)
  }

  /// A device the relay retired: refused with 4011 under its old id, the client fetches
  /// the current state under a token for a fresh id (a handshake stating nothing), rejoins
  /// through the owner and reconnects as the fresh id; its offline edits reach the relay.
  @Test func aRetiredDeviceRejoinsUnderAFreshIDAndItsOfflineEditsReachTheRelay() async throws {
    let owner = try relayOwner()
    owner.transact { $0.insertText("milk", at: 0, in: "body", of: relayNote) }
    try owner.flush()
    let theirs = EntityKey(type: "note", id: "theirs")
    let server = MemoryRelayServer(accepting: ["token-2"], refusal: .retired)
    let before = owner.replica.delta(since: CausalContext())
    server.edit { space in
      space.apply(before)
      space.transact { $0.setValue(.string("from the laptop"), for: "title", of: theirs) }
    }
    // Away past the horizon, the device typed on.
    owner.transact { $0.insertText(" eggs", at: 4, in: "body", of: relayNote) }
    try owner.flush()
    let retired = owner.id
    let tokens = TokenProvider()
    let client = RelayClient(
      connector: MemoryConnector(server: server), token: { tokens.next(for: $0) },
      backoff: quickBackoff)
    let statuses = await run(client, owner) { $0 == .upToDate }
    #expect(owner.id != retired)
    #expect(owner.identityChanges.last == .retired)
    // One token for the retired id (refused), one for the fresh id, used for the
    // bootstrap and the reconnection.
    #expect(tokens.ids == [retired, owner.id])
    #expect(server.tokens == ["token-1", "token-2", "token-2"])
    #expect(!statuses.contains { if case .refused = $0 { true } else { false } })
    #expect(statuses.contains(.syncing) && statuses.last == .upToDate)
    #expect(server.space.document.text(of: "body", in: relayNote) == "milk eggs")
    #expect(owner.replica.document.value(of: "title", in: theirs) == .string("from the laptop"))
    #expect(server.space.document == owner.replica.document)
    #expect(owner.pendingCount == 0)
    // The fresh id's events reached the relay; no new event of the retired id did.
    #expect(server.space.context.counters(of: retired) == before.context.counters(of: retired))
  }

  /// A bootstrap that fails (here refused) is retried with backoff under the same fresh
  /// id: one rejoin, one fresh id, whatever the attempts.
  @Test func aFailedBootstrapIsRetriedUnderTheSameFreshID() async throws {
    let owner = try relayOwner()
    owner.transact { $0.insertText("milk", at: 0, in: "body", of: relayNote) }
    try owner.flush()
    let server = MemoryRelayServer(accepting: ["token-3"], refusal: .retired)
    let retired = owner.id
    let tokens = TokenProvider()
    let client = RelayClient(
      connector: MemoryConnector(server: server), token: { tokens.next(for: $0) },
      backoff: quickBackoff)
    let statuses = await run(client, owner) { $0 == .upToDate }
    #expect(!statuses.contains { if case .refused = $0 { true } else { false } })
    #expect(owner.id != retired)
    #expect(tokens.ids == [retired, owner.id, owner.id])
    #expect(server.tokens == ["token-1", "token-2", "token-1", "token-3", "token-3"])
    #expect(owner.identityChanges.filter { $0 == .retired }.count == 1)
    #expect(server.space.document.text(of: "body", in: relayNote) == "milk")
  }

  /// The bootstrap reads the relay's stable cut: a note the laptop deleted comes back
  /// whole because the device edited it while away, and one it did not edit is forgotten
  /// by the cut; the device holds what the relay holds once it forgets by the same cut.
  @Test func aRejoinReadsTheStableCutTheRelaySendsWithTheState() async throws {
    let owner = try relayOwner()
    let edited = EntityKey(type: "note", id: "edited")
    let untouched = EntityKey(type: "note", id: "untouched")
    owner.transact { tx in
      tx.setValue(.string("keep"), for: "title", of: edited)
      tx.setValue(.string("old"), for: "title", of: untouched)
    }
    try owner.flush()
    let server = MemoryRelayServer(accepting: ["token-2"], refusal: .retired)
    let before = owner.replica.delta(since: CausalContext())
    var cut = RelayStableCut(stable: CausalContext(), covering: CausalContext())
    server.edit { space in
      space.apply(before)
      space.transact { tx in
        tx.delete(edited)
        tx.delete(untouched)
      }
      // The relay here sends the cut without having forgotten yet: only a device that
      // reads the cut forgets the untouched note.
      cut = RelayStableCut(stable: space.context, covering: space.context)
    }
    server.sendAtNextOpening([cut.encoded()])
    let relayState = server.space.document
    owner.transact { $0.setValue(.string("body"), for: "body", of: edited) }
    try owner.flush()
    let tokens = TokenProvider()
    let client = RelayClient(
      connector: MemoryConnector(server: server), token: { tokens.next(for: $0) },
      backoff: quickBackoff)
    let statuses = await run(client, owner) { $0 == .upToDate }
    #expect(statuses.last == .upToDate)
    let document = owner.replica.document
    #expect(document.value(of: "title", in: edited) == .string("keep"))
    #expect(document.value(of: "body", in: edited) == .string("body"))
    #expect(document.value(of: "title", in: untouched) == nil)
    // What a relay that forgets by the cut before it applies the re-applied edits holds
    // (as the real relay does): without the cut, the device would still hold the
    // untouched note's deleted record.
    var expected = relayState
    #expect(expected.forgetDeleted(stable: cut.stable) == 2)
    expected.apply(owner.replica.delta(since: relayState.context))
    #expect(expected == document)
  }

  @Test func aFreshReplicaIDAsksForANewTokenAndReconnects() async throws {
    let owner = try relayOwner()
    owner.transact { $0.insertText("milk\n", at: 0, in: "body", of: relayNote) }
    try owner.flush()
    let restoredFrom = owner.id
    let server = MemoryRelayServer(accepting: ["token-1", "token-2"])
    // The relay holds later events of this id than the owner (a restored backup).
    var later = CausalContext()
    later.insert(replica: restoredFrom, counters: 1...500)
    server.sendAtNextOpening([RelayAcknowledgement(durable: later).encoded()])
    let events = owner.events()
    let tokens = TokenProvider()
    let client = RelayClient(
      connector: MemoryConnector(server: server), token: { tokens.next(for: $0) },
      backoff: quickBackoff)
    let statuses = await run(client, owner) { $0 == .upToDate }
    #expect(owner.id != restoredFrom)
    #expect(server.tokens == ["token-1", "token-2"])
    // The second token was asked for the fresh id.
    #expect(tokens.ids == [restoredFrom, owner.id])
    #expect(statuses.last == .upToDate)
    // The edit made before the fresh id reached the relay all the same.
    #expect(server.space.document.text(of: "body", in: relayNote) == "milk\n")
    var iterator = events.makeAsyncIterator()
    var sawIdentityChange = false
    while !sawIdentityChange, let event = await iterator.next() {
      if case .identityChanged = event { sawIdentityChange = true }
    }
    #expect(sawIdentityChange)
  }

  @Test func editsWhileConnectedGoOutOnceDurable() async throws {
    let owner = try relayOwner()
    let server = MemoryRelayServer(accepting: ["token-1"])
    let client = RelayClient(
      connector: MemoryConnector(server: server), token: { _ in "token-1" }, backoff: quickBackoff)
    let task = Task { @MainActor in await client.run(owner: owner) }
    var statuses = client.statuses.makeAsyncIterator()
    while let status = await statuses.next(), status != .upToDate {}
    owner.transact { $0.insertText("eggs\n", at: 0, in: "body", of: relayNote) }
    // The store's clock is manual: the edit waits for its group commit.
    try owner.flush()
    while let status = await statuses.next(), status != .upToDate {}
    #expect(server.space.document.text(of: "body", in: relayNote) == "eggs\n")
    #expect(owner.pendingCount == 0)
    task.cancel()
    await task.value
  }
}
