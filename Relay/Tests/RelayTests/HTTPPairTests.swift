import Converge
import ConvergeRelay
import ConvergeRelayClient
import Foundation
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The HTTP pair for clients that cannot hold a socket, and the readiness probe, on a live
/// relay.
@Suite(.timeLimit(.minutes(1))) struct HTTPPairTests {
  @Test func pushThenPullAndTheirRefusals() async throws {
    let relay = try await LiveRelay.start()
    let base = "http://127.0.0.1:\(relay.port)"
    let writer = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)])
    let reader = try await relay.token(space: "s", scope: .read, replicas: [])
    let (replica, delta) = edit(1, note: "a", title: "A")

    let health = try await request(base + "/healthz", method: "GET", token: nil, body: [])
    #expect(health.status == 200 && String(decoding: health.body, as: UTF8.self) == "ok")

    let pushed = try await request(
      base + "/v1/spaces/s/push", method: "POST", token: writer, body: delta.encoded())
    #expect(pushed.status == 200)
    let acknowledgement = try RelayAcknowledgement(decoding: pushed.body[...])
    #expect(acknowledgement.durable.includes(delta.context))
    #expect(try await relay.store.read(space: "s", after: 0).entries.count == 1)

    // A pull with nothing known returns the whole space; with its context, nothing more.
    let everything = try await request(
      base + "/v1/spaces/s/pull", method: "POST", token: reader, body: [])
    #expect(everything.status == 200)
    var pulled = Replica()
    let message = try SyncMessage(decoding: everything.body)
    if let received = message.delta { pulled.apply(received) }
    #expect(pulled.document == replica.document)
    let upToDate = try await request(
      base + "/v1/spaces/s/pull", method: "POST", token: reader,
      body: pulled.context.encoded())
    #expect(try SyncMessage(decoding: upToDate.body).delta == nil)

    // Refusals: no token, a read token that pushes, a malformed body. Nothing is stored.
    let (_, second) = edit(1, note: "b", title: "B")
    let anonymous = try await request(
      base + "/v1/spaces/s/push", method: "POST", token: nil, body: second.encoded())
    #expect(anonymous.status == 401)
    let readPush = try await request(
      base + "/v1/spaces/s/push", method: "POST", token: reader, body: second.encoded())
    #expect(readPush.status == 403)
    let garbage = try await request(
      base + "/v1/spaces/s/push", method: "POST", token: writer, body: [0x43, 0x4E, 0x00])
    #expect(garbage.status == 400)
    #expect(try await relay.store.read(space: "s", after: 0).entries.count == 1)
    await relay.stop()
  }

  private func request(
    _ url: String, method: String, token: String?, body: [UInt8]
  ) async throws -> (status: Int, body: [UInt8]) {
    guard let address = URL(string: url) else { throw RelayTestError("bad URL \(url)") }
    var request = URLRequest(url: address)
    request.httpMethod = method
    if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
    if !body.isEmpty { request.httpBody = Data(body) }
    let (data, response) = try await URLSession.shared.data(for: request)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    return (status, [UInt8](data))
  }
}
