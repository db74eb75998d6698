import ArgumentParser
import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayTestSupport
import Foundation
import Histogram
import HummingbirdWSClient
import Logging
import NIOCore
import Synchronization

/// `converge-relay bench`: simulated devices typing into shared notes through a relay.
///
/// Devices are grouped into spaces (`--devices-per-space`, like one user's phone, laptop
/// and tablet); each types one character per transaction at `--rate` keystrokes a second
/// and pushes it as a session frame. The report counts deltas the relay acknowledged and
/// fanned out, the fan-out latency from a keystroke's push to its arrival at another
/// device (HdrHistogram), the bytes both ways, whether every space converged, and how
/// many acknowledged events the relay no longer has.
///
/// With `--nodes N` (and `--postgres`), N relay processes share the database and the
/// devices are spread over them; `--kill-node-at T` kills the first with SIGKILL T
/// seconds in, its devices reconnect to the next, and the report adds the reconnections,
/// how long after the kill every device held everything acknowledged before it, and the
/// fan-out p99 outside that window.
///
/// The bench ends at any offered rate: the devices stop by 10 s after typing ends, the
/// settling handshakes and the relay's contexts take at most 20 s each, and a last-resort
/// deadline (typing plus 90 s) exits the process with status 2 should anything still
/// hang. The report gives what was offered beside what was typed and acknowledged, the
/// sockets the relay closed by reason, and a verdict.
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
  @Option(help: "Relay processes sharing the store (1…8); more than one needs --postgres.")
  var nodes = 1
  @Option(help: "A PostgreSQL database (postgres://…) for the relays instead of SQLite.")
  var postgres: String?
  @Option(help: "Seconds into the run at which the first node is killed with SIGKILL.")
  var killNodeAt: Int?
  @Flag(help: "Print the report as JSON.")
  var json = false

  func validate() throws {
    guard (1...1000).contains(clients), (1...600).contains(seconds),
      (1...1000).contains(rate), devicesPerSpace >= 1, (1...8).contains(nodes)
    else { throw ValidationError("clients 1…1000, seconds 1…600, rate 1…1000, nodes 1…8") }
    if nodes > 1, postgres == nil || url != nil {
      throw ValidationError("--nodes above 1 needs --postgres (and no --url)")
    }
    if let killNodeAt, nodes < 2 || !(1..<seconds).contains(killNodeAt) {
      throw ValidationError("--kill-node-at needs --nodes 2 or more and lies within --seconds")
    }
  }

  func run() async throws {
    let seconds = self.seconds
    // The last resort: a run that has not printed its report by now never will.
    Thread.detachNewThread {
      Thread.sleep(forTimeInterval: Double(seconds + 90))
      let message = "bench: no report \(seconds + 90) s in; giving up\n"
      FileHandle.standardError.write(Data(message.utf8))
      Foundation.exit(2)
    }
    var quietLogger = Logger(label: "converge-relay-bench")
    quietLogger.logLevel = .error
    let logger = quietLogger
    let secret =
      self.secret ?? ProcessInfo.processInfo.environment["CONVERGE_RELAY_SECRET"]
      ?? (0..<4).map { _ in String(UInt64.random(in: 1 << 60 ... .max), radix: 16) }.joined()
    let authority = try await RelayTokenAuthority(secret: secret)
    let directory =
      FileManager.default.temporaryDirectory.path
      + "/converge-relay-bench-\(UInt64.random(in: 0 ... .max))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var local: LocalRelay?
    var children: [RelayChildProcess] = []
    defer { for child in children { child.kill() } }
    let bases: [String]
    if let url {
      bases = [url]
    } else if nodes > 1 {
      // Real processes, so that a kill is a real SIGKILL.
      for _ in 0..<nodes {
        children.append(
          try RelayChildProcess.start(
            executable: RelaySimulation.executable, data: directory, secret: secret,
            postgres: postgres))
      }
      bases = children.map { "ws://127.0.0.1:\($0.port)" }
    } else {
      let store: any RelayStore =
        if let postgres {
          try await PostgresRelayStore.connect(url: postgres, logger: logger)
        } else {
          try await SQLiteRelayStore.open(path: directory + "/relay.sqlite")
        }
      var configuration = RelayConfiguration()
      configuration.messagesPerSecond = max(2_000, rate * 4)
      let relay = try await LocalRelay.start(
        store: store, authority: authority, configuration: configuration, logger: logger)
      bases = [relay.base]
      local = relay
    }

    let metrics = BenchMetrics()
    var devices: [BenchDevice] = []
    // Spaces of their own: a PostgreSQL database (or --url's relay) keeps earlier runs'
    // spaces, whose dots these devices' replica ids would collide with.
    let run = String(UInt64.random(in: 0 ... .max), radix: 36)
    for index in 0..<clients {
      let id = ReplicaID(rawValue: UInt64(index) + 1)
      let space = "bench-\(run)-\(index / devicesPerSpace)"
      let token = try await authority.sign(
        RelayTokenClaims(
          space: space, scope: .write, expiry: Date(timeIntervalSinceNow: 3_600),
          replicas: [id]))
      devices.append(
        BenchDevice(id: id, space: space, token: token, metrics: metrics, home: index))
    }
    let interval = Duration.seconds(1) / rate
    let typingStarts = ContinuousClock.now
    let typingEnds = typingStarts + .seconds(seconds)
    let victim = children.first
    let killAt = killNodeAt.map { typingStarts + .seconds($0) }
    let everyDevice = devices
    let killing = Task { () -> Duration? in
      guard let killAt, let victim else { return nil }
      try? await Task.sleep(until: killAt)
      return await Self.kill(victim, devices: everyDevice, metrics: metrics, until: typingEnds)
    }
    let deviceBases = bases
    // Each device on its own task, so that one stuck in its socket cannot hold up the
    // others or the report: devices still running 10 s after typing ends are cancelled
    // and left behind.
    let running = devices.map { device in
      Task {
        await device.run(
          bases: deviceBases, interval: interval, until: typingEnds, logger: logger)
      }
    }
    let connectedCount = await Self.within(until: typingEnds + .seconds(10)) {
      var connected = 0
      for task in running where await task.value { connected += 1 }
      return connected
    }
    for task in running { task.cancel() }
    let convergedAfterKill = await killing.value
    let report = await metrics.report(
      devices: devices, connected: connectedCount ?? 0, seconds: seconds,
      offeredPerDevice: rate, base: bases[bases.count - 1], nodes: bases.count,
      convergedAfterKill: convergedAfterKill, endedWithinDeadline: connectedCount != nil,
      authority: authority, logger: logger)
    if json {
      let data = try JSONEncoder().encode(report)
      print(String(decoding: data, as: UTF8.self))
    } else {
      report.printText()
    }
    if let local { await local.stop() }
  }

  /// What `body` returns, or `nil` if it has not returned within `limit`; it runs on a
  /// task of its own, cancelled and not waited for when the time is up.
  static func within<T: Sendable>(
    _ limit: Duration, _ body: @escaping @Sendable () async -> T
  ) async -> T? {
    await within(until: .now + limit, body)
  }

  static func within<T: Sendable>(
    until deadline: ContinuousClock.Instant, _ body: @escaping @Sendable () async -> T
  ) async -> T? {
    let (results, result) = AsyncStream<T?>.makeStream()
    let work = Task {
      result.yield(await body())
    }
    let timer = Task {
      try? await Task.sleep(until: deadline)
      result.yield(nil)
    }
    var iterator = results.makeAsyncIterator()
    let value = await iterator.next() ?? nil
    timer.cancel()
    work.cancel()
    result.finish()
    return value
  }

  /// Kills `victim` and returns how long after the kill every device held everything
  /// acknowledged before it to any device of its space (checked every 10 ms), or `nil`
  /// if that had not happened 10 s after typing ended.
  static func kill(
    _ victim: RelayChildProcess, devices: [BenchDevice], metrics: BenchMetrics,
    until typingEnds: ContinuousClock.Instant
  ) async -> Duration? {
    let killedAt = ContinuousClock.now
    victim.kill()
    metrics.killed(at: killedAt)
    var acknowledged: [String: CausalContext] = [:]
    for device in devices {
      acknowledged[device.space, default: CausalContext()].formUnion(
        device.state.withLock { $0.acknowledgedOwn })
    }
    var waiting = devices
    while ContinuousClock.now < typingEnds + .seconds(10) {
      waiting.removeAll { device in
        let target = acknowledged[device.space] ?? CausalContext()
        return device.state.withLock { $0.replica.context.includes(target) }
      }
      if waiting.isEmpty { return ContinuousClock.now - killedAt }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return nil
  }
}
