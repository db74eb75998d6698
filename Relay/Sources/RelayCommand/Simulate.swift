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
import Synchronization

/// `converge-relay simulate`: the simulator's devices sync through real relays.
///
/// Devices run the simulator's workloads (the `Workload` that `converge simulate` runs)
/// through `RelayClient`s connected to relays on loopback: child processes of this
/// executable (`converge-relay serve`) sharing one SQLite file, or with `--postgres URL`
/// stateless nodes on that PostgreSQL database (each run in a space of its own, so runs
/// may share a database). While the devices edit, some go offline and come back (to any
/// relay), and relays are killed with SIGKILL and started again on the same store.
/// At the end every device comes back; the run checks that every device and the store
/// hold the same document (the simulator's oracle) and that nothing a device saw
/// acknowledged is missing from the store.
///
/// Retirement (issue #48): the relays run with a horizon of seconds (`--retire-after`,
/// default 4), and with `--retirements` per operation (default 0.002) a connected device
/// goes away for longer than it, editing meanwhile. When it comes back the relay refuses
/// it as retired, its client rejoins under a fresh id, and the run checks, before anyone
/// edits again, that every entity it edited away and holds is alive after the rejoin
/// (the rebase re-applies it whole, even one another device deleted and the relay
/// forgot). An ordinary disconnect that outlasts the horizon ends in a rejoin too. At the
/// end the store must hold no content the relay's recorded stable cut forgets. With two
/// relays, rejoins converged on seeds 11–40 at `--operations 5000 --retirements 0.004`
/// once a rejoin in flight held the cut back (BENCHMARKS, fourteenth session).
///
/// Everything random draws from `--seed`; the timing of the sockets does not, so a run
/// is reproducible in its edits and faults but not in the order of every message.
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
  @Option(help: "Relays sharing one SQLite file or PostgreSQL database (1…4).")
  var relays = 2
  @Option(
    help: """
      Run the relays as nodes on this PostgreSQL database \
      (postgres://user[:password]@host[:port]/database) instead of one SQLite file.
      """)
  var postgres: String?
  @Option(help: "Per operation, the chance that a device goes offline or comes back.")
  var disconnects = 0.01
  @Option(help: "Per operation, the chance that a relay is killed (SIGKILL) and restarted.")
  var restarts = 0.001
  @Option(
    help: "Per operation, the chance that a connected device goes away past the horizon.")
  var retirements = 0.002
  @Option(help: "The relays' horizon: seconds a device may stay silent before it is retired.")
  var retireAfter = 4
  @Flag(help: "Print the report as JSON.")
  var json = false

  func validate() throws {
    guard (2...32).contains(devices), (1...1_000_000).contains(operations),
      (1...4).contains(relays), WorkloadKind(rawValue: workload) != nil,
      (0...1).contains(disconnects), (0...1).contains(restarts),
      (0...1).contains(retirements), (1...86_400).contains(retireAfter)
    else {
      throw ValidationError(
        "devices 2…32, operations 1…1,000,000, relays 1…4, workload notes|tasks|mixed, "
          + "disconnects, restarts and retirements 0…1, retire-after 1…86,400")
    }
  }

  func run() async throws {
    let kind = WorkloadKind(rawValue: workload) ?? .mixed
    let started = ContinuousClock.now
    let report = try await Self.simulate(
      devices: devices, relays: relays, kind: kind, seed: seed, operations: operations,
      disconnects: disconnects, restarts: restarts, retirements: retirements,
      retireAfter: retireAfter, postgres: postgres)
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
    disconnects: Double, restarts: Double, retirements: Double, retireAfter: Int,
    postgres: String? = nil
  ) async throws -> RelaySimulationReport {
    var simulation = try await RelaySimulation(
      devices: devices, relays: relays, kind: kind, seed: seed, retireAfter: retireAfter,
      postgres: postgres)
    do {
      let report = try await simulation.run(
        operations: operations, disconnects: disconnects, restarts: restarts,
        retirements: retirements)
      await simulation.close()
      return report
    } catch {
      await simulation.close()
      throw error
    }
  }
}

/// One simulated device: what survives its disconnects (the owner of its replica, in
/// memory, and its user's workload), as the app's disk and its user would.
@MainActor final class SimulatedDevice {
  let id: ReplicaID
  let owner: DeviceReplica
  var workload: Workload

  init(id: ReplicaID, owner: DeviceReplica, workload: Workload) {
    self.id = id
    self.owner = owner
    self.workload = workload
  }
}

/// A device's replica ids: its first, then one per rejoin, none shared with another
/// device (the high half is the device's number).
final class SimulatedFreshIDs: Sendable {
  private let device: UInt64
  private let taken = Mutex<UInt64>(0)

  init(device: UInt64) { self.device = device }

  func next() -> ReplicaID {
    let count = taken.withLock { count in
      defer { count += 1 }
      return count
    }
    return ReplicaID(rawValue: count == 0 ? device : (device << 32) | count)
  }
}

struct RelaySimulationReport {
  var devices: Int
  var relays: Int
  /// `sqlite` or `postgres`.
  var store = "sqlite"
  var operations: Int
  var seed: UInt64
  var wentOffline = 0
  var relayRestarts = 0
  /// Devices sent away past the horizon, and how many of them rejoined under a fresh id.
  var sentAway = 0
  var rejoined = 0
  /// Rejoins of every device, those after an ordinary disconnect that outlasted the
  /// horizon included.
  var rejoinsInAll = 0
  /// Entities the devices that rejoined had edited away, all found alive after it.
  var offlineEntitiesChecked = 0
  /// Whether the store recorded a stable cut by the end.
  var hasStableCut = false
  var entities = 0
  var failures: [String] = []

  var json: [String: Any] {
    [
      "devices": devices, "relays": relays, "store": store, "operations": operations,
      "seed": seed,
      "went_offline": wentOffline, "relay_restarts": relayRestarts, "entities": entities,
      "sent_away": sentAway, "rejoined": rejoined, "rejoins_in_all": rejoinsInAll,
      "offline_entities_checked": offlineEntitiesChecked, "stable_cut": hasStableCut,
      "converged": failures.isEmpty, "failures": failures,
    ]
  }

  func printText(seconds: Double) {
    print(
      "\(devices) devices, \(relays) relays on one \(store == "postgres" ? "PostgreSQL database" : "SQLite file"), "
        + "\(operations) operations, seed \(seed)")
    print("went offline \(wentOffline) times, relays restarted \(relayRestarts) times")
    print(
      "sent away past the horizon \(sentAway) times, rejoined \(rejoined) times "
        + "(\(rejoinsInAll) rejoins in all), "
        + "\(offlineEntitiesChecked) entities edited away found alive after the rejoin; "
        + (hasStableCut ? "the store has a stable cut" : "no stable cut recorded"))
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
  /// The space of a run: on PostgreSQL, one no other run used (the database outlives it).
  let space: String
  /// The relays share one SQLite file: each polls it for the others' appends (nodes on
  /// PostgreSQL hear of them through LISTEN/NOTIFY).
  static let storePoll = Duration.milliseconds(250)
  /// The PostgreSQL database the relays run on, or `nil` for the SQLite file in
  /// `directory`.
  let postgres: String?
  /// The run's own connection to the PostgreSQL database, for its checks.
  let checks: PostgresRelayStore?
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
  /// The devices away past the horizon, and when each comes back.
  var away: [Int: ContinuousClock.Instant] = [:]
  let retireAfter: Int
  var random: SimulationRandom
  var report: RelaySimulationReport

  init(
    devices count: Int, relays: Int, kind: WorkloadKind, seed: UInt64, retireAfter: Int,
    postgres: String? = nil
  ) async throws {
    self.retireAfter = retireAfter
    self.postgres = postgres
    space = postgres == nil ? "simulation" : "simulation-\(seed)-\(UInt64.random(in: 0 ... .max))"
    if let postgres {
      checks = try await PostgresRelayStore.connect(url: postgres)
    } else {
      checks = nil
    }
    random = SimulationRandom(seed: seed, stream: 0)
    report = RelaySimulationReport(devices: count, relays: relays, operations: 0, seed: seed)
    if postgres != nil { report.store = "postgres" }
    var quiet = Logger(label: "converge-relay-simulate")
    quiet.logLevel = .critical
    logger = quiet
    directory =
      FileManager.default.temporaryDirectory.path
      + "/converge-relay-simulate-\(UInt64.random(in: 0 ... .max))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    secret = (0..<4).map { _ in String(UInt64.random(in: 1 << 60 ... .max), radix: 16) }.joined()
    authority = try await RelayTokenAuthority(secret: secret)
    for _ in 0..<relays { self.relays.append(try startRelay()) }
    for index in 0..<count {
      let id = ReplicaID(rawValue: UInt64(index) + 1)
      var workload = Workload(kind: kind, random: SimulationRandom(seed: seed, stream: id.rawValue))
      var configuration = DocumentStore.Configuration()
      let ids = SimulatedFreshIDs(device: id.rawValue)
      configuration.freshID = { ids.next() }
      let owner = try DeviceReplica.inMemory(configuration: configuration)
      // The first device starts with the few entities every fork of the simulator has.
      if index == 0 { workload.seedOrigin(owner) }
      let device = SimulatedDevice(id: id, owner: owner, workload: workload)
      devices.append(device)
      clients.append((try await client(for: device, relay: index % relays), index % relays, nil))
      connect(index)
    }
  }

  /// A relay process on the run's store.
  private func startRelay() throws -> RelayChildProcess {
    try RelayChildProcess.start(
      executable: Self.executable, data: directory, secret: secret, postgres: postgres,
      storePoll: postgres == nil ? Self.storePoll : nil, retireAfter: retireAfter)
  }

  /// Closes the run's connection to PostgreSQL, if it has one.
  func close() async {
    await checks?.close()
  }

  private func client(for device: SimulatedDevice, relay: Int) async throws -> RelayClient {
    // A token for whichever id the device has: a rejoin asks for one of its fresh id.
    let authority = authority
    let space = space
    return RelayClient(
      url: relays[relay].url(space: space),
      token: { id in
        try await authority.sign(
          RelayTokenClaims(
            space: space, scope: .write, expiry: Date(timeIntervalSinceNow: 86_400),
            replicas: [id]))
      },
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

  mutating func run(
    operations: Int, disconnects: Double, restarts: Double, retirements: Double
  ) async throws -> RelaySimulationReport {
    report.operations = operations
    for step in 0..<operations {
      let index = Int.random(in: 0..<devices.count, using: &random)
      let device = devices[index]
      device.workload.perform(on: device.owner)
      if Double.random(in: 0..<1, using: &random) < retirements {
        let target = Int.random(in: 0..<devices.count, using: &random)
        if clients[target].task != nil {
          await disconnect(target)
          away[target] = .now + Self.awayPastTheHorizon(retireAfter)
          report.sentAway += 1
        }
      }
      if Double.random(in: 0..<1, using: &random) < disconnects {
        let target = Int.random(in: 0..<devices.count, using: &random)
        if away[target] != nil {
          // Away past the horizon: back only when its time comes.
        } else if clients[target].task == nil {
          try await reconnect(target, to: Int.random(in: 0..<relays.count, using: &random))
        } else {
          await disconnect(target)
          report.wentOffline += 1
        }
      }
      if Double.random(in: 0..<1, using: &random) < restarts {
        try await restartRelay(Int.random(in: 0..<relays.count, using: &random))
      }
      for (target, until) in away.sorted(by: { $0.key < $1.key }) where until <= .now {
        try await comeBack(target)
      }
      // Let the sockets move between bursts of edits.
      if step % 8 == 7 { try await Task.sleep(for: .milliseconds(2)) } else { await Task.yield() }
    }
    for (target, until) in away.sorted(by: { $0.value < $1.value }) {
      try await Task.sleep(until: until)
      try await comeBack(target)
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

  /// How long a device sent away stays away: past the horizon, with a margin for the
  /// whole seconds the relays count in and for their side of its socket to close.
  static func awayPastTheHorizon(_ retireAfter: Int) -> Duration {
    .seconds(retireAfter) + .milliseconds(2_500)
  }

  /// Brings device `index` back from past the horizon: the relay, which recorded it (one
  /// that left before its first handshake is served as new), refuses it as retired and
  /// its client rejoins under a fresh id. Before anyone edits again, every entity it
  /// edited away and holds must be alive on it (the rebase re-applies it, whole if the
  /// others deleted it meanwhile), and the relay must have acknowledged all it holds.
  private mutating func comeBack(_ index: Int) async throws {
    away[index] = nil
    let owner = devices[index].owner
    let (stored, _, known) = try await storedState(device: owner.id)
    // A device that left before the relay admitted it is served as a new one.
    guard known else {
      try await reconnect(index, to: Int.random(in: 0..<relays.count, using: &random))
      return
    }
    let edited = owner.replica.delta(since: stored.context).keys.filter {
      owner.replica.document.contains($0)
    }
    let rejoinsBefore = owner.identityChanges.filter { $0 == .retired }.count
    try await reconnect(index, to: Int.random(in: 0..<relays.count, using: &random))
    let deadline = ContinuousClock.now + .seconds(60)
    var rejoined = false
    while ContinuousClock.now < deadline {
      rejoined = owner.identityChanges.filter { $0 == .retired }.count > rejoinsBefore
      if rejoined,
        owner.acknowledgedContext(of: RelaySession.defaultPeer).includes(owner.replica.context)
      {
        break
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    guard rejoined else {
      report.failures.append("device \(index) came back past the horizon and did not rejoin")
      return
    }
    report.rejoined += 1
    report.offlineEntitiesChecked += edited.count
    let lost = edited.filter { !owner.replica.document.contains($0) }
    if !lost.isEmpty {
      report.failures.append(
        "device \(index) lost \(lost.count) entities it edited away when it rejoined: "
          + lost.prefix(3).map(\.id).joined(separator: ", "))
    }
  }

  /// Kills relay `index` with SIGKILL (its sockets close as a crash closes them) and
  /// starts it again on the same file; its devices reconnect to it.
  private mutating func restartRelay(_ index: Int) async throws {
    report.relayRestarts += 1
    relays[index].kill()
    relays[index] = try startRelay()
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
    // The store as the loop last read it: the state the oracle judges.
    var settled: (replica: Replica, stable: CausalContext, knows: Bool)?
    while true {
      replicas = []
      settled = nil
      var upToDate = true
      for device in devices {
        replicas.append(device.owner.replica)
        let acknowledged = device.owner.acknowledgedContext(of: RelaySession.defaultPeer)
        if !acknowledged.includes(device.owner.replica.context) { upToDate = false }
      }
      let agree = replicas.allSatisfy { $0.document == replicas[0].document }
      // And the store, once done forgetting: the relays go on recording cuts as the last
      // reports come in, a cut is recorded before the snapshot forgets by it, and it
      // reaches every device within a heartbeat (a second with the 4 s horizon).
      if upToDate && agree, let state = try? await storedState() {
        settled = state
        var forgetting = state.replica
        if forgetting.forgetDeleted(stable: state.stable) == 0,
          state.replica.document == replicas[0].document
        {
          break
        }
      }
      guard ContinuousClock.now < deadline else {
        report.failures.append(
          "devices did not settle within 60 s (up to date: \(upToDate), agree: \(agree))")
        // Which device the relay never acknowledged, and what it lacks.
        for (index, device) in devices.enumerated() {
          let acknowledged = device.owner.acknowledgedContext(of: RelaySession.defaultPeer)
          let unacknowledged = device.owner.replica.context.subtracting(acknowledged)
          guard !unacknowledged.isEmpty else { continue }
          report.failures.append(
            "device \(index) (\(device.owner.id), relay \(clients[index].relay)): not acknowledged \(unacknowledged)"
          )
        }
        break
      }
      try? await Task.sleep(for: .milliseconds(50))
    }
    let stored: Replica
    do {
      let state: (replica: Replica, stable: CausalContext, knows: Bool)
      if let settled { state = settled } else { state = try await storedState() }
      stored = state.replica
      report.hasStableCut = !state.stable.isEmpty
      var forgetting = stored
      let left = forgetting.forgetDeleted(stable: state.stable)
      if left > 0 {
        report.failures.append(
          "the store still holds \(left) deleted entities its recorded stable cut forgets")
      }
    } catch {
      report.failures.append("the store's state does not load: \(error)")
      return
    }
    report.rejoinsInAll = devices.reduce(0) { total, device in
      total + device.owner.identityChanges.filter { $0 == .retired }.count
    }
    let verdict = Oracle.check(replicas + [stored])
    report.failures += verdict.failures
    if !verdict.failures.isEmpty {
      let all = replicas + [stored]
      for index in all.indices.dropFirst() where all[index].document != all[0].document {
        report.failures.append(
          "replica \(index) against replica 0: "
            + Self.differences(all[index], all[0]).joined(separator: "; "))
      }
    }
    report.entities = verdict.entityCount
    for (index, device) in devices.enumerated() {
      let acknowledged = device.owner.acknowledgedContext(of: RelaySession.defaultPeer)
      if !stored.context.includes(acknowledged) {
        report.failures.append(
          "device \(index) saw events acknowledged that the store does not have")
      }
    }
  }

  /// Where two replicas' documents differ, for a failure's report: the events one holds
  /// and the other lacks, then up to three entities that differ (shown or not, fields).
  static func differences(_ one: Replica, _ other: Replica) -> [String] {
    var found: [String] = []
    let onlyOne = one.context.subtracting(other.context)
    let onlyOther = other.context.subtracting(one.context)
    if !onlyOne.isEmpty || !onlyOther.isEmpty {
      found.append("events only here \(onlyOne), only there \(onlyOther)")
    }
    let keys = Set(one.delta(since: CausalContext()).keys)
      .union(other.delta(since: CausalContext()).keys).sorted()
    for key in keys {
      let (a, b) = (one.document, other.document)
      let fields = Set(a.fieldNames(of: key)).union(b.fieldNames(of: key)).sorted()
      let differing = fields.filter {
        a.value(of: $0, in: key) != b.value(of: $0, in: key)
          || a.elements(of: $0, in: key) != b.elements(of: $0, in: key)
          || a.text(of: $0, in: key) != b.text(of: $0, in: key)
      }
      guard
        a.contains(key) != b.contains(key) || a.fieldNames(of: key) != b.fieldNames(of: key)
          || !differing.isEmpty
      else { continue }
      found.append(
        "\(key.type)/\(key.id): shown \(a.contains(key))/\(b.contains(key)), fields "
          + "\(a.fieldNames(of: key))/\(b.fieldNames(of: key)), values differ in \(differing)")
      if found.count >= 4 { break }
    }
    return found
  }

  /// The space as the store holds it (the latest snapshot, then the log after it), the
  /// stable cut it recorded, and whether it has a record of `device`.
  private func storedState(device: ReplicaID? = nil) async throws -> (
    replica: Replica, stable: CausalContext, knows: Bool
  ) {
    let log: SpaceLog
    let stable: CausalContext
    let knows: Bool
    if let checks {
      log = try await checks.read(space: space, after: 0)
      stable = try await checks.stableCut(space: space)
      knows = try await checks.devices(space: space).contains { $0.replica == device }
    } else {
      let store = try await SQLiteRelayStore.open(path: directory + "/relay.sqlite")
      do {
        log = try await store.read(space: space, after: 0)
        stable = try await store.stableCut(space: space)
        knows = try await store.devices(space: space).contains { $0.replica == device }
        try? await store.close()
      } catch {
        try? await store.close()
        throw error
      }
    }
    var replica = try log.snapshot.map { try Replica(restoring: $0.state) } ?? Replica()
    for entry in log.entries { replica.apply(try DocumentDelta(decoding: entry.delta)) }
    return (replica, stable, knows)
  }
}

extension Duration {
  var seconds: Double {
    Double(components.seconds) + Double(components.attoseconds) * 1e-18
  }
}
