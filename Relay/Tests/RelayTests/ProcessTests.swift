import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayTestSupport
import ConvergeTestSupport
import Foundation
import Testing

extension RelayChildProcess {
  /// The built `converge-relay` over `data`, with the tests' secret.
  static func start(data: String) throws -> RelayChildProcess {
    try start(
      executable: BuiltProduct.directory.appendingPathComponent("converge-relay"), data: data,
      secret: LiveRelay.secret)
  }
}

@Suite(.timeLimit(.minutes(1))) struct ProcessTests {
  @Test func anAcknowledgedDeltaSurvivesSIGKILL() async throws {
    let data = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: data) }
    let authority = try await RelayTokenAuthority(secret: LiveRelay.secret)
    let id = ReplicaID(rawValue: 0x5EED)
    let token = try await authority.sign(
      RelayTokenClaims(
        space: "s", scope: .write, expiry: Date(timeIntervalSinceNow: 600), replicas: [id]))
    let (replica, delta) = edit(id.rawValue, note: "kept", title: "durable")

    let first = try RelayChildProcess.start(data: data)
    let pushed: Exchange
    do {
      pushed = try await exchange(
        url: first.url(space: "s"), token: token, messages: [delta.encoded()],
        until: { $0.contains { RelayAcknowledgement.isRelayEnvelope($0[...]) } })
    } catch {
      first.kill()
      throw error
    }
    // Killed right after the acknowledgement arrived: no shutdown, no checkpoint.
    first.kill()
    #expect(pushed.acknowledgements.first?.durable.includes(delta.context) == true)

    let second = try RelayChildProcess.start(data: data)
    defer { second.kill() }
    let reader = try await authority.sign(
      RelayTokenClaims(
        space: "s", scope: .read, expiry: Date(timeIntervalSinceNow: 600), replicas: []))
    let hello = SyncMessage(context: CausalContext(), delta: nil).encoded()
    let answer = try await exchange(
      url: second.url(space: "s"), token: reader, messages: [hello], until: { !$0.isEmpty })
    var restored = Replica()
    var session = SyncSession()
    for bytes in answer.received { try session.receive(encoded: bytes, into: &restored) }
    #expect(restored.document == replica.document)
  }

  @Test func theExampleSyncsTwoDevicesThroughARelay() throws {
    let (status, output) = try BuiltProduct.run("relay-example")
    let printed = String(decoding: output, as: UTF8.self)
    #expect(status == 0, "\(printed)")
    #expect(printed.contains("both devices agree"))
  }

  @Test func aShortBenchConvergesAndLosesNothing() throws {
    let (status, printed) = try BuiltProduct.run(
      "converge-relay", ["bench", "--clients", "6", "--seconds", "1", "--json"])
    #expect(status == 0)
    let report = try JSONSerialization.jsonObject(with: printed) as? [String: Any]
    #expect(report?["converged"] as? Bool == true, "\(String(decoding: printed, as: UTF8.self))")
    #expect(report?["lostAcknowledged"] as? Int == 0)
    #expect(report?["connected"] as? Int == 6)
  }

  @Test func devicesSimulatedThroughTwoRelaysConverge() throws {
    let seed = 7
    let (status, printed) = try BuiltProduct.run(
      "converge-relay",
      [
        "simulate", "--devices", "4", "--operations", "400", "--seed", "\(seed)",
        "--disconnects", "0.05", "--restarts", "0.01", "--json",
      ], timeLimit: .seconds(90))
    let text = String(decoding: printed, as: UTF8.self)
    #expect(status == 0, "seed \(seed): \(text)")
    let report = try JSONSerialization.jsonObject(with: printed) as? [String: Any]
    #expect(report?["converged"] as? Bool == true, "seed \(seed): \(text)")
    // The faults happened: devices went offline and relays restarted during the run.
    #expect((report?["went_offline"] as? Int ?? 0) > 0, "seed \(seed): \(text)")
    #expect((report?["relay_restarts"] as? Int ?? 0) > 0, "seed \(seed): \(text)")
  }
}
