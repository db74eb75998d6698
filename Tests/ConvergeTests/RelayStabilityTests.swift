import Converge
import ConvergeRelayClient
import ConvergeStore
import Testing

/// The relay's stable cut and the device's reports of what it has seen (issue #48), on
/// the session alone: bytes in, bytes out.
@MainActor
@Suite struct RelayStabilityTests {
  static let secret = EntityKey(type: "note", id: "secret")
  static let kept = EntityKey(type: "note", id: "kept")

  /// A connected owner whose relay holds two notes, one of them deleted since.
  func ownerWithADeletedNote() throws -> (
    clock: RelayTestClock, owner: DeviceReplica, relay: MemoryRelay, session: RelaySession
  ) {
    let clock = RelayTestClock()
    let owner = try relayOwner(clock)
    var relay = MemoryRelay()
    owner.transact {
      $0.setValue(.string("Diary"), for: "title", of: Self.secret)
      $0.insertText("the secret body", at: 0, in: "body", of: Self.secret)
      $0.setValue(.string("Groceries"), for: "title", of: Self.kept)
    }
    owner.transact { $0.delete(Self.secret) }
    try owner.flush()
    var session = RelaySession(streamSeed: 1)
    relay.connect()
    try exchange(session.open(owner), &session, owner, &relay)
    #expect(relay.space.context == owner.replica.context)
    #expect(!owner.replica.document.fieldNames(of: Self.secret).isEmpty)
    return (clock, owner, relay, session)
  }

  @Test func aStableCutForgetsTheDeletedNoteOnTheOwner() throws {
    var (_, owner, relay, session) = try ownerWithADeletedNote()
    let cut = RelayStableCut(stable: relay.space.context, covering: relay.space.context)
    #expect(try session.receive(cut.encoded(), into: owner).isEmpty)
    #expect(owner.replica.document.fieldNames(of: Self.secret).isEmpty)
    #expect(owner.replica.document.text(of: "body", in: Self.secret).isEmpty)
    #expect(owner.replica.document.value(of: "title", in: Self.kept) == .string("Groceries"))
    // The forgotten note does not come back with the relay's next handshake answer.
    var next = RelaySession(streamSeed: 2)
    relay.connect()
    try exchange(next.open(owner), &next, owner, &relay)
    #expect(owner.replica.document.fieldNames(of: Self.secret).isEmpty)
  }

  /// A cut whose covering context holds an event the owner lacks (another device's edit,
  /// maybe concurrent with the delete) waits until the owner has it.
  @Test func aCutWaitsUntilTheOwnerHoldsItsCoveringContext() throws {
    var (_, owner, relay, session) = try ownerWithADeletedNote()
    let stable = relay.space.context
    // Another device's edit reaches the relay; the owner has not received it yet.
    var other = Replica(id: ReplicaID(rawValue: 0xB1), wallClock: .fixed(0))
    other.merge(relay.space)
    let edit = other.transact { $0.setValue(.string("x"), for: "title", of: Self.kept) }
    relay.space.apply(edit.delta)
    let cut = RelayStableCut(stable: stable, covering: relay.space.context)
    _ = try session.receive(cut.encoded(), into: owner)
    #expect(!owner.replica.document.fieldNames(of: Self.secret).isEmpty)
    // The relay's push brings the edit; the waiting cut is taken up.
    var relaySession = relay.session
    let push = relaySession.pushEncoded(edit.delta, from: relay.space)
    relay.session = relaySession
    _ = try session.receive(push, into: owner)
    #expect(owner.replica.context.includes(relay.space.context))
    #expect(owner.replica.document.fieldNames(of: Self.secret).isEmpty)
    #expect(owner.replica.document.value(of: "title", in: Self.kept) == .string("x"))
  }

  /// After the owner takes in what the relay pushed, it reports its context once that is
  /// durable and ``RelaySession/seenReportPatience`` calls have passed; not again until
  /// it grows.
  @Test func theOwnerReportsWhatItHasSeenOnceDurableAndDebounced() throws {
    var (clock, owner, relay, session) = try ownerWithADeletedNote()
    var other = Replica(id: ReplicaID(rawValue: 0xB1), wallClock: .fixed(0))
    other.merge(relay.space)
    let edit = other.transact { $0.setValue(.string("x"), for: "title", of: Self.kept) }
    relay.space.apply(edit.delta)
    var relaySession = relay.session
    let push = relaySession.pushEncoded(edit.delta, from: relay.space)
    relay.session = relaySession
    _ = try session.receive(push, into: owner)
    var reports: [[UInt8]] = []
    for _ in 0..<(RelaySession.seenReportPatience - 1) { reports += session.outgoing(owner) }
    #expect(reports.isEmpty)
    // Due, but the received edit is not durable yet: it waits for the group commit.
    #expect(session.outgoing(owner).isEmpty)
    clock.now += .milliseconds(250)
    owner.syncIfDue()
    let report = session.outgoing(owner)
    #expect(report.count == 1)
    let decoded = try RelaySeenReport(decoding: report[0][...])
    #expect(decoded.seen == owner.replica.context)
    print("seen report: \(report[0].count) bytes")
    // Nothing grew: no more reports.
    for _ in 0..<(3 * RelaySession.seenReportPatience) { #expect(session.outgoing(owner).isEmpty) }
  }

  @Test func relayEnvelopesRoundTripAndRefuseBadBytes() throws {
    var context = CausalContext()
    context.insert(replica: ReplicaID(rawValue: 7), counters: 1...40)
    var covering = context
    covering.insert(replica: ReplicaID(rawValue: 9), counters: 1...3)
    let cut = RelayStableCut(stable: context, covering: covering)
    let bytes = cut.encoded()
    #expect(try RelayStableCut(decoding: bytes[...]) == cut)
    let report = RelaySeenReport(seen: context)
    #expect(try RelaySeenReport(decoding: report.encoded()[...]) == report)
    print(
      "stable cut (two replicas): \(bytes.count) bytes; seen report (one): "
        + "\(report.encoded().count) bytes")
    // Every truncation, a wrong kind, a flipped byte: typed errors, never a trap.
    for end in 0..<bytes.count {
      #expect(throws: ConvergeDecodingError.self) { try RelayStableCut(decoding: bytes[..<end]) }
    }
    #expect(throws: ConvergeDecodingError.self) {
      try RelayStableCut(decoding: report.encoded()[...])
    }
    #expect(throws: ConvergeDecodingError.self) {
      try RelaySeenReport(decoding: bytes[...])
    }
    var flipped = bytes
    flipped[flipped.count - 2] ^= 0xFF
    #expect(throws: ConvergeDecodingError.self) { try RelayStableCut(decoding: flipped[...]) }
    // A session handed a bad cut throws and forgets nothing.
    var (_, owner, _, session) = try ownerWithADeletedNote()
    #expect(throws: ConvergeDecodingError.self) {
      _ = try session.receive(Array(bytes.dropLast()), into: owner)
    }
    #expect(!owner.replica.document.fieldNames(of: Self.secret).isEmpty)
  }
}
