import Converge
import ConvergeRelay
import ConvergeRelayClient
import Testing

/// Every refusal closes the socket with its own typed reason and commits nothing.
@Suite(.timeLimit(.minutes(1))) struct RelayAuthTests {
  /// The opening every client sends first; the relay answers refusals after it.
  let hello = SyncMessage(context: CausalContext(), delta: nil).encoded()

  @Test func refusalsCloseWithTheirReason() async throws {
    let relay = try await LiveRelay.start()
    let (_, delta) = edit(1, note: "a", title: "A")
    let push = delta.encoded()
    let granted = ReplicaID(rawValue: 1)

    let missing = try await exchange(url: relay.url(space: "s"), token: nil, messages: [hello])
    #expect(missing.closeReason == .unauthorized)

    let forged = try await exchange(
      url: relay.url(space: "s"), token: "e30.e30.c2ln", messages: [hello])
    #expect(forged.closeReason == .unauthorized)

    let otherSpace = try await relay.token(space: "other", replicas: [granted])
    let wrong = try await exchange(
      url: relay.url(space: "s"), token: otherSpace, messages: [hello])
    #expect(wrong.closeReason == .wrongSpace)

    let expiredToken = try await relay.token(space: "s", replicas: [granted], expiresIn: -10)
    let expired = try await exchange(
      url: relay.url(space: "s"), token: expiredToken, messages: [hello])
    #expect(expired.closeReason == .tokenExpired)

    let readToken = try await relay.token(space: "s", scope: .read, replicas: [granted])
    let readPush = try await exchange(
      url: relay.url(space: "s"), token: readToken, messages: [push])
    #expect(readPush.closeReason == .readOnlyToken)

    let otherReplica = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 2)])
    let forgedDots = try await exchange(
      url: relay.url(space: "s"), token: otherReplica, messages: [push])
    #expect(forgedDots.closeReason == .replicaNotGranted)

    #expect(try await relay.store.read(space: "s", after: 0).entries.isEmpty)
    await relay.stop()
  }

  @Test func expiryIsCheckedWhileTheSocketLives() async throws {
    let relay = try await LiveRelay.start()
    let token = try await relay.token(space: "s", replicas: [], expiresIn: 1.5)
    // A reader that sends nothing after its opening: the relay closes it when the token
    // expires.
    let result = try await exchange(url: relay.url(space: "s"), token: token, messages: [hello])
    #expect(result.closeReason == .tokenExpired)
    await relay.stop()
  }

  @Test func aRefusedSocketThatNeverSpeaksIsClosedAfterTheIdleTimeout() async throws {
    let relay = try await LiveRelay.start { $0.idleTimeout = .seconds(1) }
    let result = try await exchange(url: relay.url(space: "s"), token: nil, messages: [])
    #expect(result.closeReason == .unauthorized)
    await relay.stop()
  }

  @Test func limitsCloseWithTheirReason() async throws {
    let relay = try await LiveRelay.start { configuration in
      configuration.messagesPerSecond = 3
      configuration.idleTimeout = .seconds(1)
      configuration.maxMessageSize = 4096
    }
    let token = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)])
    let flood = try await exchange(
      url: relay.url(space: "s"), token: token, messages: Array(repeating: hello, count: 20))
    #expect(flood.closeReason == .rateLimited)

    let idle = try await exchange(url: relay.url(space: "s"), token: token, messages: [hello])
    #expect(idle.closeReason == .idleTimeout)

    let big = try await exchange(
      url: relay.url(space: "s"), token: token, messages: [[UInt8](repeating: 0x43, count: 10_000)])
    #expect(big.closeReason == .messageTooLarge)
    await relay.stop()
  }

  @Test func malformedMessageClosesWithoutChangingTheSpace() async throws {
    let relay = try await LiveRelay.start()
    let token = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)])
    let (_, first) = edit(1, note: "a", title: "A")
    let accepted = try await exchange(
      url: relay.url(space: "s"), token: token, messages: [first.encoded()],
      until: { $0.count >= 1 })
    #expect(accepted.acknowledgements.first?.durable.includes(first.context) == true)
    let before = try await relay.store.read(space: "s", after: 0)

    // A valid delta with one byte flipped (its checksum no longer matches), then garbage.
    let (_, second) = edit(1, note: "b", title: "B")
    var damaged = second.encoded()
    damaged[damaged.count / 2] ^= 0x5A
    for bytes in [damaged, [0x43, 0x4E, 0x56, 0x47, 0xFF], [0x00]] {
      let refused = try await exchange(url: relay.url(space: "s"), token: token, messages: [bytes])
      #expect(refused.closeReason == .malformedMessage)
    }
    #expect(try await relay.store.read(space: "s", after: 0) == before)
    await relay.stop()
  }
}
