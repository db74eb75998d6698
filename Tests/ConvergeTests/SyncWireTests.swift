import Converge
import ConvergeTestSupport
import Testing

@Suite struct SyncWireTests {
  @Test func sessionsConvergeOverBytesOnALossyReorderingChannel() throws {
    try forEachSeed(count: 100, base: 0xB17E5) { random in
      let network = DocumentNetwork(replicaCount: 2, rounds: 10, using: &random)
      var (a, b) = (network.replicas[0], network.replicas[1])
      var (sessionA, sessionB) = (SyncSession(), SyncSession())
      var toA: [[UInt8]] = []
      var toB: [[UInt8]] = []
      for round in 0..<40 {
        if round % 5 == 0 {
          sessionA.reset()
          sessionB.reset()
        }
        if round < 10, Bool.random(using: &random) {
          toB.append(sessionA.push(a.randomTransaction(using: &random), from: a).encoded())
        }
        if let bytes = sessionA.makeEncodedMessage(for: a) { toB.append(bytes) }
        if let bytes = sessionB.makeEncodedMessage(for: b) { toA.append(bytes) }
        let lossy = round < 25
        for bytes in toB.shuffled(using: &random)
        where !lossy || Int.random(in: 0..<4, using: &random) > 0 {
          try sessionB.receive(encoded: bytes, into: &b)
        }
        for bytes in toA.shuffled(using: &random)
        where !lossy || Int.random(in: 0..<4, using: &random) > 0 {
          try sessionA.receive(encoded: bytes, into: &a)
        }
        toA = []
        toB = []
      }
      try ensure(a.encodedState() == b.encodedState(), "replicas differ after syncing over bytes")
    }
  }

  @Test func messagesRoundTripAndALivePushIsAPlainDelta() throws {
    var random = SeededGenerator(seed: 2)
    var replica = Replica.seeded(using: &random)
    let commit = replica.randomTransaction(using: &random)
    let handshake = SyncMessage(
      context: replica.context, delta: replica.delta(since: CausalContext()))
    #expect(try SyncMessage(decoding: handshake.encoded()) == handshake)
    let hello = SyncMessage(context: replica.context, delta: nil)
    #expect(try SyncMessage(decoding: hello.encoded()) == hello)
    let push = SyncMessage(context: nil, delta: commit.delta)
    #expect(push.encoded() == commit.delta.encoded())
    #expect(try SyncMessage(decoding: commit.delta.encoded()) == push)
  }

  @Test func damagedMessagesAreRejectedAndLeaveTheReplicaUnchanged() throws {
    try forEachSeed(count: 200, base: 0xBAD5) { random in
      let network = DocumentNetwork(replicaCount: 2, rounds: 6, using: &random)
      let sender = network.replicas[0]
      var receiver = network.replicas[1]
      let message = SyncMessage(
        context: sender.context, delta: sender.delta(since: receiver.context))
      let bytes = message.encoded()
      let before = receiver.encodedState()
      var session = SyncSession()
      for length in stride(from: 0, to: bytes.count, by: Swift.max(1, bytes.count / 40)) {
        #expect(throws: ConvergeDecodingError.self) {
          try session.receive(encoded: Array(bytes[..<length]), into: &receiver)
        }
      }
      for _ in 0..<20 {
        let damaged = mutateBytes(bytes, splicingWith: bytes, using: &random)
        if let decoded = try? SyncMessage(decoding: damaged) {
          try ensure(
            decoded.encoded() == damaged, "a damaged message decoded to a different encoding")
        }
      }
      try ensure(receiver.encodedState() == before, "a rejected message changed the replica")
    }
  }
}
