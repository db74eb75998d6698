import Converge
import ConvergeRelayClient
import ConvergeStore
import Foundation
import Testing

/// A clock a test moves by hand, for the owner's group commit.
final class RelayTestClock: @unchecked Sendable {  // guarded by `lock`
  private let lock = NSLock()
  private var value = Duration.zero
  var now: Duration {
    get { lock.withLock { value } }
    set { lock.withLock { value = newValue } }
  }
}

/// The relay's side of the protocol in memory, as the relay's connections handle it: a
/// delta is committed (applied) and acknowledged with the space's context, a handshake is
/// answered from the space, a live push is not.
struct MemoryRelay {
  var space = Replica(id: ReplicaID(rawValue: 0xEE), wallClock: .fixed(0))
  var session = SyncSession(streamSeed: 0x5EED)
  /// Every message received, decoded.
  var received: [SyncMessage] = []
  /// Every report of what the device has seen, decoded.
  var reports: [RelaySeenReport] = []

  mutating func connect() { session.reset() }

  mutating func handle(_ bytes: [UInt8]) throws -> [[UInt8]] {
    if RelayAcknowledgement.isRelayEnvelope(bytes[...]) {
      reports.append(try RelaySeenReport(decoding: bytes[...]))
      return []
    }
    let message = try session.decode(bytes[...])
    received.append(message)
    var replies: [[UInt8]] = []
    if let delta = message.delta, !delta.isEmpty,
      SyncSession.canApply(message, to: space.context)
    {
      space.apply(delta)
      replies.append(RelayAcknowledgement(durable: space.context).encoded())
    }
    guard message.context != nil else {
      session.noteReceived(message, appliedTo: space)
      return replies
    }
    session.noteReceived(message, appliedTo: space)
    if message.delta != nil, !session.owesMessage { return replies }
    return replies + (session.makeEncodedMessage(for: space).map { [$0] } ?? [])
  }
}

/// Sends `messages` to the relay and its replies to the client until both are quiet.
func exchange(
  _ messages: [[UInt8]], _ session: inout RelaySession, _ owner: DeviceReplica,
  _ relay: inout MemoryRelay
) throws {
  var toRelay = messages
  while !toRelay.isEmpty {
    var toClient: [[UInt8]] = []
    for bytes in toRelay { toClient += try relay.handle(bytes) }
    toRelay = []
    for bytes in toClient { toRelay += try session.receive(bytes, into: owner) }
  }
}

/// An owner in memory whose group commit syncs on the caller's thread at `clock`'s times.
func relayOwner(
  _ clock: RelayTestClock = RelayTestClock(), files: MemoryFileSystem = MemoryFileSystem()
) throws -> DeviceReplica {
  var settings = DocumentStore.Configuration()
  settings.fileSystem = files
  settings.syncInBackground = false
  settings.now = { clock.now }
  settings.wallClock = .fixed(0)
  // 0xA1 first, then 0xA2, 0xA3… for each fresh id.
  let ids = RelayTestClock()
  settings.freshID = {
    ids.now += .seconds(1)
    return ReplicaID(rawValue: 0xA0 + UInt64(ids.now.components.seconds))
  }
  return try DeviceReplica(directory: "/owner", configuration: settings)
}

let relayNote = EntityKey(type: "note", id: "list")

@MainActor
@Suite struct RelaySessionTests {
  @Test func aReconnectionResumesFromWhatTheOwnerRecordedAsAcknowledged() throws {
    let owner = try relayOwner()
    var relay = MemoryRelay()
    owner.transact { $0.setValue(.string("Groceries"), for: "title", of: relayNote) }
    try owner.flush()
    var session = RelaySession(streamSeed: 1)
    relay.connect()
    try exchange(session.open(owner), &session, owner, &relay)
    #expect(relay.space.context == owner.replica.context)
    let first = owner.replica.context
    // The relay's acknowledgement is recorded in the owner, under the session's peer.
    #expect(owner.acknowledgedContext(of: RelaySession.defaultPeer).includes(first))
    #expect(owner.pendingCount == 0)

    // Offline: another edit, in another note.
    owner.transact {
      $0.setValue(.string("Todo"), for: "title", of: EntityKey(type: "note", id: "b"))
    }
    try owner.flush()
    #expect(owner.pendingCount == 1)

    // A new connection states the owner's context and sends only what the relay lacks.
    var next = RelaySession(streamSeed: 2)
    relay.connect()
    relay.received.removeAll()
    let opening = next.open(owner)
    try exchange(opening, &next, owner, &relay)
    #expect(relay.received.first?.context == owner.replica.context)
    #expect(relay.received.first?.delta == nil)
    let sent = relay.received.compactMap(\.delta)
    #expect(sent.count == 1)
    #expect(sent.first?.context == owner.replica.context.subtracting(first))
    #expect(relay.space.context == owner.replica.context)
    #expect(owner.pendingCount == 0)
    #expect(next.status(of: owner) == .upToDate)
  }

  @Test func theRelaysAcknowledgementMovesTheOwnersPendingCount() throws {
    let clock = RelayTestClock()
    let owner = try relayOwner(clock)
    var relay = MemoryRelay()
    var session = RelaySession(streamSeed: 1)
    relay.connect()
    try exchange(session.open(owner), &session, owner, &relay)
    #expect(session.isAnswered)

    owner.transact { $0.insertText("m", at: 0, in: "body", of: relayNote) }
    #expect(owner.pendingCount == 1)
    // Not durable yet: nothing goes out, and the badge stays.
    #expect(session.outgoing(owner).isEmpty)
    #expect(session.status(of: owner) == .syncing)

    clock.now += .milliseconds(250)
    let pushes = session.outgoing(owner)
    #expect(pushes.count == 1)
    var acknowledgements: [[UInt8]] = []
    for bytes in pushes { acknowledgements += try relay.handle(bytes) }
    #expect(acknowledgements.count == 1)
    #expect(owner.pendingCount == 1)
    for bytes in acknowledgements { #expect(try session.receive(bytes, into: owner).isEmpty) }
    #expect(owner.pendingCount == 0)
    #expect(session.status(of: owner) == .upToDate)
    #expect(relay.space.document.text(of: "body", in: relayNote) == "m")
  }

  /// A push's acknowledgement counts at once and is saved at close (not per push, which
  /// would cost two fsyncs per group commit): the reopened owner has nothing pending.
  @Test func pushAcknowledgementsAreSavedAtClose() throws {
    let clock = RelayTestClock()
    let files = MemoryFileSystem()
    let owner = try relayOwner(clock, files: files)
    var relay = MemoryRelay()
    var session = RelaySession(streamSeed: 1)
    relay.connect()
    try exchange(session.open(owner), &session, owner, &relay)
    for index in 0..<5 {
      owner.transact { $0.insertText("x", at: index, in: "body", of: relayNote) }
      clock.now += .milliseconds(250)
      try exchange(session.outgoing(owner), &session, owner, &relay)
    }
    #expect(relay.space.document.text(of: "body", in: relayNote) == "xxxxx")
    #expect(owner.pendingCount == 0)
    try owner.close()
    let reopened = try relayOwner(clock, files: files)
    #expect(reopened.pendingCount == 0)
    #expect(reopened.acknowledgedContext(of: RelaySession.defaultPeer) == relay.space.context)
  }

  /// Durable events beside an unsynced keystroke wait a few calls for the group commit
  /// instead of syncing the keystroke at once (a sync of their own per push would double
  /// the syncs of typing); after that the call syncs and sends both.
  /// A connected session over an owner that typed "a" (synced by the group commit) and
  /// then "b" (not synced yet); `onDurable` is the owner's before it types.
  private func typedOneSyncedOneNot(onDurable: (([[UInt8]]) -> Void)? = nil) throws -> (
    clock: RelayTestClock, owner: DeviceReplica, relay: MemoryRelay, session: RelaySession
  ) {
    let clock = RelayTestClock()
    let owner = try relayOwner(clock)
    owner.onDurable = onDurable
    var relay = MemoryRelay()
    var session = RelaySession(streamSeed: 1)
    relay.connect()
    try exchange(session.open(owner), &session, owner, &relay)
    owner.transact { $0.insertText("a", at: 0, in: "body", of: relayNote) }
    clock.now += .milliseconds(250)
    owner.syncIfDue()
    owner.transact { $0.insertText("b", at: 1, in: "body", of: relayNote) }
    return (clock, owner, relay, session)
  }

  @Test func durableEventsBesideAnUnsyncedEditWaitForTheGroupCommit() throws {
    var (clock, owner, relay, session) = try typedOneSyncedOneNot()
    let syncs = owner.durableCommits
    for _ in 0..<4 { #expect(session.outgoing(owner).isEmpty) }
    #expect(owner.durableCommits == syncs)
    let pushes = session.outgoing(owner)
    #expect(pushes.count == 1)
    #expect(owner.durableCommits == syncs + 1)
    try exchange(pushes, &session, owner, &relay)
    #expect(relay.space.document.text(of: "body", in: relayNote) == "ab")
    #expect(owner.pendingCount == 0)

    // Once the group commit has synced everything, a push goes at the first call.
    owner.transact { $0.insertText("c", at: 2, in: "body", of: relayNote) }
    #expect(session.outgoing(owner).isEmpty)
    clock.now += .milliseconds(250)
    owner.syncIfDue()
    #expect(session.outgoing(owner).count == 1)
  }

  /// The commits the store made durable go out as they are, beside a later keystroke
  /// still waiting for its sync, with no sync of their own.
  @Test func commitsMadeDurableArePushedAsTheyAre() throws {
    final class Collected { var deltas: [[UInt8]] = [] }
    let collected = Collected()
    var (_, owner, relay, session) = try typedOneSyncedOneNot { collected.deltas += $0 }
    var madeDurable: [[UInt8]] { collected.deltas }
    let syncs = owner.durableCommits
    let pushes = session.durable(madeDurable, of: owner)
    #expect(pushes.count == 1)
    #expect(owner.durableCommits == syncs)
    try exchange(pushes, &session, owner, &relay)
    #expect(relay.space.document.text(of: "body", in: relayNote) == "a")
    // The same deltas again, or before the relay answered, send nothing.
    #expect(session.durable(madeDurable, of: owner).isEmpty)
    var unanswered = RelaySession(streamSeed: 2)
    _ = unanswered.open(owner)
    #expect(unanswered.durable(madeDurable, of: owner).isEmpty)
  }

  @Test func theRelaysAnswerAppliesToTheOwner() throws {
    let owner = try relayOwner()
    var relay = MemoryRelay()
    var laptop = Replica(id: ReplicaID(rawValue: 0xB2), wallClock: .fixed(0))
    relay.space.apply(
      laptop.transact { $0.insertText("eggs\n", at: 0, in: "body", of: relayNote) }.delta)

    var session = RelaySession(streamSeed: 1)
    relay.connect()
    try exchange(session.open(owner), &session, owner, &relay)
    #expect(owner.replica.document.text(of: "body", in: relayNote) == "eggs\n")
    #expect(!owner.lastChanges.isEmpty)
    // What the relay stated it holds is durable there: recorded as its acknowledgement.
    #expect(owner.acknowledgedContext(of: RelaySession.defaultPeer) == relay.space.context)
    #expect(owner.pendingCount == 0)
    // A live push from the relay applies too.
    let push = laptop.transact { $0.insertText("milk\n", at: 5, in: "body", of: relayNote) }
    relay.space.apply(push.delta)
    let frame = relay.session.pushEncoded(push, from: relay.space)
    #expect(try session.receive(frame, into: owner).isEmpty)
    #expect(owner.replica.document.text(of: "body", in: relayNote) == "eggs\nmilk\n")
  }

  @Test func bytesThatAreNotARelayMessageThrowAndLeaveTheOwnerAlone() throws {
    let owner = try relayOwner()
    var session = RelaySession(streamSeed: 1)
    _ = session.open(owner)
    let before = owner.replica.context
    #expect(throws: ConvergeDecodingError.self) {
      // The header of a message of an application kind the relay does not send.
      _ = try session.receive(Envelope.magic + [Envelope.formatVersion, 200, 9], into: owner)
    }
    #expect(throws: ConvergeDecodingError.self) { _ = try session.receive([0x43, 1], into: owner) }
    #expect(owner.replica.context == before)
  }
}
