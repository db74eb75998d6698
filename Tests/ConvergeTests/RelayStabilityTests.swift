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

  /// A cut whose stable context is one replica's single range and whose covering one
  /// adds a second replica.
  static let sampleCut: RelayStableCut = {
    var stable = CausalContext()
    stable.insert(replica: ReplicaID(rawValue: 7), counters: 1...40)
    var covering = stable
    covering.insert(replica: ReplicaID(rawValue: 9), counters: 1...3)
    return RelayStableCut(stable: stable, covering: covering)
  }()

  @Test func relayEnvelopesRoundTripAndRefuseBadBytes() throws {
    let cut = Self.sampleCut
    let context = cut.stable
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

  @Test func relayMessagesAreConvergeMessagesOfApplicationKinds() throws {
    var context = CausalContext()
    context.insert(replica: ReplicaID(rawValue: 7), counters: 1...40)
    let messages = [
      RelayAcknowledgement(durable: context).encoded(),
      RelayStableCut(stable: context, covering: context).encoded(),
      RelaySeenReport(seen: context).encoded(),
    ]
    #expect(messages.map { $0[5] } == [128, 129, 130])
    for message in messages {
      #expect(Array(message.prefix(5)) == Envelope.magic + [Envelope.formatVersion])
      #expect(RelayAcknowledgement.isRelayEnvelope(message[...]))
      // Converge's own decoders refuse them by kind, as a message of a later version.
      #expect(throws: ConvergeDecodingError.unknownMessageKind(message[5])) {
        try DocumentDelta(decoding: message)
      }
      // The frame's checksum covers every byte: any one flipped is refused.
      for index in message.indices {
        var flipped = message
        flipped[index] ^= 0x01
        #expect(throws: ConvergeDecodingError.self) {
          switch message[5] {
          case 128: _ = try RelayAcknowledgement(decoding: flipped[...])
          case 129: _ = try RelayStableCut(decoding: flipped[...])
          default: _ = try RelaySeenReport(decoding: flipped[...])
          }
        }
      }
    }
    // A Converge message and a session frame are not relay messages.
    #expect(!RelayAcknowledgement.isRelayEnvelope(context.encoded()[...]))
    #expect(!RelayAcknowledgement.isRelayEnvelope([0xCF, 1, 2, 3, 4, 5, 6][...]))
  }

  @Test func storedCutsOfEveryEarlierFormDecode() throws {
    let cut = Self.sampleCut
    let (stable, covering) = (cut.stable, cut.covering)
    #expect(try RelayStableCut(decodingStored: cut.encoded()[...]) == cut)
    // The relay's first header: `R`, 1, 2, the stable context behind its length, then the
    // covering one.
    var first = ByteWriter()
    first.writeBytes([0x52, 1, 2])
    first.writeLengthPrefixedBytes(stable.encoded())
    first.writeBytes(covering.encoded())
    #expect(try RelayStableCut(decodingStored: first.bytes[...]) == cut)
    // The stable context alone.
    #expect(
      try RelayStableCut(decodingStored: stable.encoded()[...])
        == RelayStableCut(stable: stable, covering: stable))
    #expect(throws: ConvergeDecodingError.self) {
      try RelayStableCut(decodingStored: first.bytes.dropLast())
    }
  }
}
