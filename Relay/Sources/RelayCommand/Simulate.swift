import ArgumentParser
import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayNIO
import ConvergeRelayTestSupport
import ConvergeSimulator
import ConvergeStore
import Foundation
import Logging

/// `converge-relay simulate`: the simulator's devices sync through real relays.
///
/// Devices run the simulator's workloads (the `Workload` that `converge simulate` runs)
/// through `RelayClient`s connected to relays on loopback: child processes of this
/// executable (`converge-relay serve`) sharing one SQLite file. While the devices edit,
/// some go offline and come back (to any relay), and relays are killed with SIGKILL and
/// started again on the same file.
/// At the end every device comes back; the run checks that every device and the store
/// hold the same document (the simulator's oracle) and that nothing a device saw
/// acknowledged is missing from the store. Everything random draws from `--seed`; the
/// timing of the sockets does not, so a run is reproducible in its edits and faults but
/// not in the order of every message.
struct Simulate: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Sync simulated devices through real relays on loopback; check they converge.")

  @Option(help: "Devices (2…32).")
  var devices = 5
  @Option(help: "Operations over all devices (1…1,000,000).")
  var operations = 2_000
  @Option(help: "Seed of the schedule, the workloads and the faults.")
  var seed: UInt64 = 1
  @Option(help: "Workload: notes, tasks or mixed.")
  var workload = "mixed"
  @Option(help: "Relays sharing one SQLite file (1…4).")
  var relays = 2
  @Option(help: "Per operation, the chance that a device goes offline or comes back.")
  var disconnects = 0.01
  @Option(help: "Per operation, the chance that a relay is killed (SIGKILL) and restarted.")
  var restarts = 0.001
  @Flag(help: "Print the report as JSON.")
  var json = false

  func validate() throws {
    guard (2...32).contains(devices), (1...1_000_000).contains(operations),
      (1...4).contains(relays), WorkloadKind(rawValue: workload) != nil,
      (0...1).contains(disconnects), (0...1).contains(restarts)
    else {
      throw ValidationError(
        "devices 2…32, operations 1…1,000,000, relays 1…4, workload notes|tasks|mixed, "
          + "disconnects and restarts 0…1")
    }
  }

  func run() async throws {
    let kind = WorkloadKind(rawValue: workload) ?? .mixed
    let started = ContinuousClock.now
    let report = try await Self.simulate(
      devices: devices, relays: relays, kind: kind, seed: seed, operations: operations,
      disconnects: disconnects, restarts: restarts)
    let seconds = (ContinuousClock.now - started).seconds
    if json {
      var object = report.json
      object["seconds"] = seconds
      let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
      print(String(decoding: data, as: UTF8.self))
    } else {
      report.printText(seconds: seconds)
    }
    if !report.failures.isEmpty { throw ExitCode(1) }
  }

  /// Runs the simulation on the main actor, where the devices' owners live (as in an app).
  @MainActor static func simulate(
    devices: Int, relays: Int, kind: WorkloadKind, seed: UInt64, operations: Int,
    disconnects: Double, restarts: Double
  ) async throws -> RelaySimulationReport {
    var simulation = try await RelaySimulation(
      devices: devices, relays: relays, kind: kind, seed: seed)
    return try await simulation.run(
      operations: operations, disconnects: disconnects, restarts: restarts)
  }
}

/// One simulated device: what survives its disconnects (the owner of its replica, in
/// memory, and its user's workload), as the app's disk and its user would.
@MainActor final class SimulatedDevice {
  let id: ReplicaID
  let token: String
  let owner: DeviceReplica
  var workload: Workload

  init(id: ReplicaID, token: String, owner: DeviceReplica, workload: Workload) {
    self.id = id
    self.token = token
    self.owner = owner
    self.workload = workload
  }
}

struct RelaySimulationReport {
  var devices: Int
  var relays: Int
  var operations: Int
  var seed: UInt64
  var wentOffline = 0
  var relayRestarts = 0
  var entities = 0
  var failures: [String] = []

  var json: [String: Any] {
    [
      "devices": devices, "relays": relays, "operations": operations, "seed": seed,
      "went_offline": wentOffline, "relay_restarts": relayRestarts, "entities": entities,
      "converged": failures.isEmpty, "failures": failures,
    ]
  }

  func printText(seconds: Double) {
    print(
      "\(devices) devices, \(relays) relays on one store, \(operations) operations, seed \(seed)")
    print("went offline \(wentOffline) times, relays restarted \(relayRestarts) times")
    print(
      failures.isEmpty
        ? "converged: every device and the store hold the same \(entities) entities, "
          + "nothing acknowledged is missing"
        : "FAILED:\n" + failures.map { "  " + $0 }.joined(separator: "\n"))
    print("\(String(format: "%.1f", seconds)) s")
  }
}

/// The devices and relays of one run, on the main actor with the devices' owners.
@MainActor struct RelaySimulation {
  static let space = "simulation"
  /// The relays share one SQLite file: each polls it for the others' appends.
  static let storePoll = Duration.milliseconds(250)
  /// This very executable, whose `serve` the relays run.
  nonisolated static let executable =
    FileManager.default.fileExists(atPath: "/proc/self/exe")
    ? URL(fileURLWithPath: "/proc/self/exe")
    : Bundle.main.executableURL
      ?? URL(fileURLWithPath: CommandLine.arguments[0])
  let directory: String
  let authority: RelayTokenAuthority
  let logger: Logger
  let secret: String
  var relays: [RelayChildProcess] = []
  var devices: [SimulatedDevice] = []
  /// Each device's current client, the relay it talks to, and its task (nil: offline).
  var clients: [(client: RelayClient, relay: Int, task: Task<Void, Never>?)] = []
  var random: SimulationRandom
  var report: RelaySimulationReport

  init(devices count: Int, relays: Int, kind: WorkloadKind, seed: UInt64) async throws {
    random = SimulationRandom(seed: seed, stream: 0)
    report = RelaySimulationReport(devices: count, relays: relays, operations: 0, seed: seed)
    var quiet = Logger(label: "converge-relay-simulate")
    quiet.logLevel = .critical
    logger = quiet
    directory =
      FileManager.default.temporaryDirectory.path
      + "/converge-relay-simulate-\(UInt64.random(in: 0 ... .max))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    secret = (0..<4).map { _ in String(UInt64.random(in: 1 << 60 ... .max), radix: 16) }.joined()
    authority = try await RelayTokenAuthority(secret: secret)
    for _ in 0..<relays {
      self.relays.append(
        try RelayChildProcess.start(
          executable: Self.executable, data: directory, secret: secret,
          storePoll: Self.storePoll))
    }
    for index in 0..<count {
      let id = ReplicaID(rawValue: UInt64(index) + 1)
      var workload = Workload(kind: kind, random: SimulationRandom(seed: seed, stream: id.rawValue))
      var configuration = DocumentStore.Configuration()
      configuration.freshID = { id }
      let owner = try DeviceReplica.inMemory(configuration: configuration)
      // The first device starts with the few entities every fork of the simulator has.
      if index == 0 { workload.seedOrigin(owner) }
      let token = try await authority.sign(
        RelayTokenClaims(
          space: Self.space, scope: .write, expiry: Date(timeIntervalSinceNow: 86_400),
          replicas: [id]))
      let device = SimulatedDevice(
        id: id, token: token, owner: owner, workload: workload)
      devices.append(device)
      clients.append((try await client(for: device, relay: index % relays), index % relays, nil))
      connect(index)
    }
  }

  private func client(for device: SimulatedDevice, relay: Int) async throws -> RelayClient {
    let token = device.token
    return RelayClient(
      url: relays[relay].url(space: Self.space), token: { _ in token },
      backoff: .init(base: .milliseconds(20), maximum: .milliseconds(200)), logger: logger)
  }

  private mutating func connect(_ index: Int) {
    let client = clients[index].client
    let owner = devices[index].owner
    clients[index].task = Task { await client.run(owner: owner) }
  }

  private mutating func disconnect(_ index: Int) async {
    guard let task = clients[index].task else { return }
    task.cancel()
    await task.value
    clients[index].task = nil
  }

  /// Brings an offline device back through a new client (a relaunch reads its store)
  /// on any relay.
  private mutating func reconnect(_ index: Int, to relay: Int) async throws {
    await disconnect(index)
    clients[index] = (try await client(for: devices[index], relay: relay), relay, nil)
    connect(index)
  }

  mutating func run(operations: Int, disconnects: Double, restarts: Double) async throws
    -> RelaySimulationReport
  {
    report.operations = operations
    for step in 0..<operations {
      let index = Int.random(in: 0..<devices.count, using: &random)
      let device = devices[index]
      device.workload.perform(on: device.owner)
      if Double.random(in: 0..<1, using: &random) < disconnects {
        let target = Int.random(in: 0..<devices.count, using: &random)
        if clients[target].task == nil {
          try await reconnect(target, to: Int.random(in: 0..<relays.count, using: &random))
        } else {
          await disconnect(target)
          report.wentOffline += 1
        }
      }
      if Double.random(in: 0..<1, using: &random) < restarts {
        try await restartRelay(Int.random(in: 0..<relays.count, using: &random))
      }
      // Let the sockets move between bursts of edits.
      if step % 8 == 7 { try await Task.sleep(for: .milliseconds(2)) } else { await Task.yield() }
    }
    for index in devices.indices where clients[index].task == nil {
      try await reconnect(index, to: Int.random(in: 0..<relays.count, using: &random))
    }
    await settleAndCheck()
    for index in devices.indices { await disconnect(index) }
    for relay in relays { relay.kill() }
    try? FileManager.default.removeItem(atPath: directory)
    return report
  }

  /// Kills relay `index` with SIGKILL (its sockets close as a crash closes them) and
  /// starts it again on the same file; its devices reconnect to it.
  private mutating func restartRelay(_ index: Int) async throws {
    report.relayRestarts += 1
    relays[index].kill()
    relays[index] = try RelayChildProcess.start(
      executable: Self.executable, data: directory, secret: secret, storePoll: Self.storePoll)
    for device in devices.indices where clients[device].relay == index {
      let wasOnline = clients[device].task != nil
      await disconnect(device)
      if wasOnline { try await reconnect(device, to: index) }
    }
  }

  /// Waits (at most a minute) until every device is up to date and all agree, then runs
  /// the oracle over the devices and the store's state.
  private mutating func settleAndCheck() async {
    let deadline = ContinuousClock.now + .seconds(60)
    var replicas: [Replica] = []
    while true {
      replicas = []
      var upToDate = true
      for device in devices {
        replicas.append(device.owner.replica)
        let acknowledged = device.owner.acknowledgedContext(of: RelaySession.defaultPeer)
        if !acknowledged.includes(device.owner.replica.context) { upToDate = false }
      }
      let agree = replicas.allSatisfy { $0.document == replicas[0].document }
      if upToDate && agree { break }
      guard ContinuousClock.now < deadline else {
        report.failures.append("devices did not settle within 60 s (up to date: \(upToDate))")
        break
      }
      try? await Task.sleep(for: .milliseconds(50))
    }
    let stored: Replica
    do {
      stored = try await storedReplica()
    } catch {
      report.failures.append("the store's state does not load: \(error)")
      return
    }
    let verdict = Oracle.check(replicas + [stored])
    report.failures += verdict.failures
    report.entities = verdict.entityCount
    for (index, device) in devices.enumerated() {
      let acknowledged = device.owner.acknowledgedContext(of: RelaySession.defaultPeer)
      if !stored.context.includes(acknowledged) {
        report.failures.append(
          "device \(index) saw events acknowledged that the store does not have")
      }
    }
  }

  /// The space as the store holds it: the latest snapshot, then the log after it.
  private func storedReplica() async throws -> Replica {
    let store = try await SQLiteRelayStore.open(path: directory + "/relay.sqlite")
    let log: SpaceLog
    do {
      log = try await store.read(space: Self.space, after: 0)
      try? await store.close()
    } catch {
      try? await store.close()
      throw error
    }
    var replica = try log.snapshot.map { try Replica(restoring: $0.state) } ?? Replica()
    for entry in log.entries { replica.apply(try DocumentDelta(decoding: entry.delta)) }
    return replica
  }
}

extension Duration {
  var seconds: Double {
    Double(components.seconds) + Double(components.attoseconds) * 1e-18
  }
}
