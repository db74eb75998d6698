import Converge
import ConvergeRelay
import Foundation
import RelayWire
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The built `converge-relay` executable as a child process, killed for real.
struct RelayProcess {
  let process: Process
  let port: Int

  /// The executable beside this test bundle (`swift build --build-tests` builds both), or
  /// `CONVERGE_RELAY_EXECUTABLE`.
  static var executable: String {
    if let path = ProcessInfo.processInfo.environment["CONVERGE_RELAY_EXECUTABLE"] { return path }
    return built("converge-relay")
  }

  /// An executable product built beside this test bundle.
  static func built(_ name: String) -> String {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    // On Darwin the test runner sits inside the .xctest bundle.
    while directory.path.contains(".xctest") { directory.deleteLastPathComponent() }
    return directory.appendingPathComponent(name).path
  }

  static func start(data: String) throws -> RelayProcess {
    let path = executable
    guard FileManager.default.isExecutableFile(atPath: path) else {
      throw RelayTestError("\(path) is missing: run `swift build --build-tests` first")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = [
      "serve", "--data", data, "--port", "0", "--secret", LiveRelay.secret,
    ]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    // The first line names the port; read it byte by byte so nothing else is consumed.
    var line: [UInt8] = []
    let handle = output.fileHandleForReading
    while true {
      let byte = handle.readData(ofLength: 1)
      guard let first = byte.first else { break }
      if first == UInt8(ascii: "\n") { break }
      line.append(first)
    }
    let text = String(decoding: line, as: UTF8.self)
    guard let portText = text.split(separator: ":").last, let port = Int(portText) else {
      process.terminate()
      throw RelayTestError("unexpected first line: \(text)")
    }
    return RelayProcess(process: process, port: port)
  }

  func killHard() {
    _ = kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }

  func url(space: String) -> String { "ws://127.0.0.1:\(port)/v1/spaces/\(space)/sync" }
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

    let first = try RelayProcess.start(data: data)
    let pushed: Exchange
    do {
      pushed = try await exchange(
        url: first.url(space: "s"), token: token, messages: [delta.encoded()],
        until: { $0.contains { RelayAcknowledgement.isRelayEnvelope($0[...]) } })
    } catch {
      first.killHard()
      throw error
    }
    // Killed right after the acknowledgement arrived: no shutdown, no checkpoint.
    first.killHard()
    #expect(pushed.acknowledgements.first?.durable.includes(delta.context) == true)

    let second = try RelayProcess.start(data: data)
    defer { second.killHard() }
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
    let path = RelayProcess.built("relay-example")
    guard FileManager.default.isExecutableFile(atPath: path) else {
      throw RelayTestError("\(path) is missing: run `swift build --build-tests` first")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(printed)")
    #expect(printed.contains("both devices agree"))
  }

  @Test func aShortBenchConvergesAndLosesNothing() throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: RelayProcess.executable)
    process.arguments = ["bench", "--clients", "6", "--seconds", "1", "--json"]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let printed = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    let report = try JSONSerialization.jsonObject(with: printed) as? [String: Any]
    #expect(report?["converged"] as? Bool == true, "\(String(decoding: printed, as: UTF8.self))")
    #expect(report?["lostAcknowledged"] as? Int == 0)
    #expect(report?["connected"] as? Int == 6)
  }

  @Test func devicesSimulatedThroughTwoRelaysConverge() throws {
    let seed = 7
    let process = Process()
    process.executableURL = URL(fileURLWithPath: RelayProcess.executable)
    process.arguments = [
      "simulate", "--devices", "4", "--operations", "400", "--seed", "\(seed)",
      "--disconnects", "0.05", "--restarts", "0.01", "--json",
    ]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    // A bound, not a performance assertion: a hung run fails instead of blocking the suite.
    let deadline = DispatchWorkItem { if process.isRunning { process.terminate() } }
    DispatchQueue.global().asyncAfter(deadline: .now() + 90, execute: deadline)
    let printed = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    deadline.cancel()
    let text = String(decoding: printed, as: UTF8.self)
    #expect(process.terminationStatus == 0, "seed \(seed): \(text)")
    let report = try JSONSerialization.jsonObject(with: printed) as? [String: Any]
    #expect(report?["converged"] as? Bool == true, "seed \(seed): \(text)")
    // The faults happened: devices went offline and relays restarted during the run.
    #expect((report?["went_offline"] as? Int ?? 0) > 0, "seed \(seed): \(text)")
    #expect((report?["relay_restarts"] as? Int ?? 0) > 0, "seed \(seed): \(text)")
  }
}
