import ArgumentParser
import Converge
import ConvergeRelay
import Foundation
import Histogram
import HummingbirdWSClient
import Logging
import NIOCore
import RelayWire
import Synchronization

/// `converge-relay bench`: simulated devices typing into shared notes through a relay.
///
/// Devices are grouped into spaces (`--devices-per-space`, like one user's phone, laptop
/// and tablet); each types one character per transaction at `--rate` keystrokes a second
/// and pushes it as a session frame. The report counts deltas the relay acknowledged and
/// fanned out, the fan-out latency from a keystroke's push to its arrival at another
/// device (HdrHistogram), the bytes both ways, whether every space converged, and how
/// many acknowledged events the relay no longer has.
struct Bench: AsyncParsableCommand {
  static let configuration = CommandConfiguration(abstract: "Measure the relay under load.")

  @Option(help: "Simulated devices (1…1000).")
  var clients = 100
  @Option(help: "Seconds of typing (1…600).")
  var seconds = 30
  @Option(help: "Devices sharing each space.")
  var devicesPerSpace = 4
  @Option(help: "Keystrokes per second per device.")
  var rate = 60
  @Option(help: "A running relay (ws://host:port) instead of one started on loopback.")
  var url: String?
  @Option(help: "The secret of the relay given by --url (or CONVERGE_RELAY_SECRET).")
  var secret: String?
  @Flag(help: "Print the report as JSON.")
  var json = false

  func validate() throws {
    guard (1...1000).contains(clients), (1...600).contains(seconds),
      (1...1000).contains(rate), devicesPerSpace >= 1
    else { throw ValidationError("clients 1…1000, seconds 1…600, rate 1…1000") }
  }

  func run() async throws {
    var quietLogger = Logger(label: "converge-relay-bench")
    quietLogger.logLevel = .error
    let logger = quietLogger
    let secret =
      self.secret ?? ProcessInfo.processInfo.environment["CONVERGE_RELAY_SECRET"]
      ?? (0..<4).map { _ in String(UInt64.random(in: 1 << 60 ... .max), radix: 16) }.joined()
    let authority = try await RelayTokenAuthority(secret: secret)
    var local: (relay: LocalRelay, directory: String)?
    let base: String
    if let url {
      base = url
    } else {
      let directory =
        FileManager.default.temporaryDirectory.path
        + "/converge-relay-bench-\(UInt64.random(in: 0 ... .max))"
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      let store = try await SQLiteRelayStore.open(path: directory + "/relay.sqlite")
      var configuration = RelayConfiguration()
      configuration.messagesPerSecond = max(2_000, rate * 4)
      let relay = try await LocalRelay.start(
        store: store, authority: authority, configuration: configuration, logger: logger)
      base = relay.base
      local = (relay, directory)
    }
    defer {
      if let local { try? FileManager.default.removeItem(atPath: local.directory) }
    }

    let metrics = BenchMetrics()
    var devices: [BenchDevice] = []
    for index in 0..<clients {
      let id = ReplicaID(rawValue: UInt64(index) + 1)
      let space = "bench-\(index / devicesPerSpace)"
      let token = try await authority.sign(
        RelayTokenClaims(
          space: space, scope: .write, expiry: Date(timeIntervalSinceNow: 3_600),
          replicas: [id]))
      devices.append(BenchDevice(id: id, space: space, token: token, metrics: metrics))
    }
    let interval = Duration.seconds(1) / rate
    let typingEnds = ContinuousClock.now + .seconds(seconds)
    let connected = try await withThrowingTaskGroup(of: Bool.self) { group in
      for device in devices {
        group.addTask {
          await device.run(base: base, interval: interval, until: typingEnds, logger: logger)
        }
      }
      return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
    }
    let report = await metrics.report(
      devices: devices, connected: connected, seconds: seconds, base: base, authority: authority,
      logger: logger)
    if json {
      let data = try JSONEncoder().encode(report)
      print(String(decoding: data, as: UTF8.self))
    } else {
      report.printText()
    }
    if let local { await local.relay.stop() }
  }
}
