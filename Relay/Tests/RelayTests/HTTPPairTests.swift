import Converge
import ConvergeRelay
import ConvergeRelayClient
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// The HTTP pair for clients that cannot hold a socket, and the readiness probe, driven
/// through the relay's router in this process (HummingbirdTesting's router mode).
@Suite(.timeLimit(.minutes(1))) struct HTTPPairTests {
  @Test func pushThenPullAndTheirRefusals() async throws {
    let relay = try await RoutedRelay.open()
    let writer = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)])
    let reader = try await relay.token(space: "s", scope: .read, replicas: [])
    let (replica, delta) = edit(1, note: "a", title: "A")
    let (_, second) = edit(1, note: "b", title: "B")
    let store = relay.store

    try await relay.test { client in
      let health = try await client.send("/healthz", .get, token: nil)
      #expect(health.status == .ok && String(buffer: health.body) == "ok")

      let pushed = try await client.send(
        "/v1/spaces/s/push", .post, token: writer, body: delta.encoded())
      #expect(pushed.status == .ok)
      let acknowledgement = try RelayAcknowledgement(decoding: pushed.bytes[...])
      #expect(acknowledgement.durable.includes(delta.context))
      #expect(try await store.read(space: "s", after: 0).entries.count == 1)

      // A pull with nothing known returns the whole space; with its context, nothing more.
      let everything = try await client.send("/v1/spaces/s/pull", .post, token: reader)
      #expect(everything.status == .ok)
      var pulled = Replica()
      let message = try SyncMessage(decoding: everything.bytes)
      if let received = message.delta { pulled.apply(received) }
      #expect(pulled.document == replica.document)
      let upToDate = try await client.send(
        "/v1/spaces/s/pull", .post, token: reader, body: pulled.context.encoded())
      #expect(try SyncMessage(decoding: upToDate.bytes).delta == nil)

      // Refusals: no token, a read token that pushes, a malformed body. Nothing is stored.
      let anonymous = try await client.send(
        "/v1/spaces/s/push", .post, token: nil, body: second.encoded())
      #expect(anonymous.status == .unauthorized)
      let readPush = try await client.send(
        "/v1/spaces/s/push", .post, token: reader, body: second.encoded())
      #expect(readPush.status == .forbidden)
      let garbage = try await client.send(
        "/v1/spaces/s/push", .post, token: writer, body: [0x43, 0x4E, 0x00])
      #expect(garbage.status == .badRequest)
      #expect(try await store.read(space: "s", after: 0).entries.count == 1)
    }
    await relay.close()
  }
}
