import Converge
import ConvergeStore

/// Fault injection for testing the simulator itself.
public struct SimulationHooks: Sendable {
  /// Decides whether replica `receiver` (an index), whose document is `document`,
  /// integrates `delta`. Returning `false` drops the delta silently, every time it
  /// arrives, as a broken merge would: tests use it to show that the oracle catches a bug
  /// and the shrinker reduces it. (A delta is not a document of its own: to see its
  /// effect, apply it to a copy of `document`.)
  public var applyFilter: ApplyFilter?
  /// Rewrites the bytes of every message as it arrives, as a damaged channel or a codec
  /// bug would: tests use it to show that a message that does not decode fails the run.
  public var damage: Damage?
  /// Restores backups in place, keeping the files' identities (a file-system snapshot
  /// rolled back), which a store cannot tell from its own files: tests use it to show
  /// that the oracle catches a dot issued twice.
  public var restoresInPlace = false
  /// The log size past which a device's store compacts (256 KiB when nil): tests set a
  /// small one so that short runs restart from snapshots.
  public var compactionLogBytes: Int?
  /// Makes every mid-run forget use the device's whole context as the stable cut, as if
  /// every other device had seen all it has (a cut that over-estimates): tests use it to
  /// show that the oracle catches what that breaks.
  public var overestimatesCut = false

  public typealias ApplyFilter =
    @Sendable (_ receiver: Int, _ delta: DocumentDelta, _ document: Document) -> Bool
  public typealias Damage = @Sendable (_ bytes: [UInt8]) -> [UInt8]

  public init(
    applyFilter: ApplyFilter? = nil, damage: Damage? = nil, restoresInPlace: Bool = false
  ) {
    self.applyFilter = applyFilter
    self.damage = damage
    self.restoresInPlace = restoresInPlace
  }
}

/// Where a running simulation is, for a progress line.
public struct SimulationProgress: Sendable {
  /// Operations performed so far.
  public var operations: Int
  /// Operations the run will perform.
  public var total: Int
  /// Messages sent so far.
  public var messages: Int
  /// Messages in flight now.
  public var inFlight: Int
}

/// Many replicas of one document, forked from one origin, editing offline and syncing
/// over a hostile simulated network, then checked for convergence.
///
/// A run is a function of its ``SimulationConfiguration``: the seed fixes every replica
/// id, every edit, every latency and fault, and every wall-clock reading (virtual time
/// plus a per-replica skew, some replicas hours behind, and now and then a clock that
/// jumps, backwards too). Nothing iterates a `Set` or
/// `Dictionary` in a way that reaches the run, so the same seed gives the same final
/// state, and the same ``SimulationReport/stateSHA256``, in any process.
///
/// ```swift
/// let report = Simulation(SimulationConfiguration(seed: 7, replicas: 5, operations: 2_000))
///   .run()
/// print(report.text)           // verdict, messages, bytes, time
/// if !report.converged { print(Shrinker().shrink(report.configuration).summary) }
/// ```
///
/// Each device keeps its replica in a ``DeviceReplica`` over a store on its own simulated
/// disk (``MemoryFileSystem``), and devices talk only through ``SyncSession``, the types
/// an app uses: one session per ordered pair of devices attached to the device replicas,
/// every message encoded to bytes by the session and decoded by the peer's, every edit
/// and received delta going through the device replica and logged by its store, so the
/// simulator proves the path apps run. The run, step by step:
/// 1. An origin replica creates a few entities; every device opens an empty store under
///    a fresh id drawn from the seed and receives the origin's state.
/// 2. Each operation advances virtual time, delivers the messages that are due, maybe
///    starts a partition or takes a device offline, and has one device make one
///    transaction from its ``Workload`` through its device replica. Once the store has made it
///    durable (at once, or after ``SimulationConfiguration/syncInterval`` of group
///    commit), its delta is pushed to every peer through the pair's session
///    (``SyncSession/push(_:from:)``, or a frame of
///    ``SyncSession/pushEncoded(_:from:)``); an offline device holds it back. With
///    ``SimulationConfiguration/restarts``, a device is now and then killed without
///    closing its store and reopened from its disk, or from a stale backup. Every
///    ``SimulationConfiguration/antiEntropyInterval`` operations a replica restarts the
///    handshake with a peer (``SyncSession/restartHandshake()``). Whenever a session
///    owes its peer a message (``SyncSession/owesMessage``: an answer, or a request for
///    a new stream after a refused frame), it sends what the device replica's
///    ``DeviceReplica/makeMessage(for:)`` makes (durable edits only).
/// 3. At the end every partition heals and every device comes online; messages still in
///    flight are delivered, then replica 0 runs handshake rounds with every peer over a
///    reliable channel until a round changes nothing.
/// 4. The ``Oracle`` compares every replica's state with the first's, and checks that no
///    dot was made durable twice and that every durable edit survived (except what a
///    stale restore took back before anyone received it).
public struct Simulation: Sendable {
  public let configuration: SimulationConfiguration
  public let hooks: SimulationHooks

  public init(_ configuration: SimulationConfiguration, hooks: SimulationHooks = SimulationHooks())
  {
    self.configuration = configuration
    self.hooks = hooks
  }

  /// Runs the simulation and checks the oracle. `progress` is called about a hundred
  /// times during a run.
  public func run(progress: ((SimulationProgress) -> Void)? = nil) -> SimulationReport {
    let clock = ContinuousClock()
    let start = clock.now
    var run: SimulationRun
    do {
      run = try SimulationRun(self)
    } catch {
      return SimulationReport(notStarted: configuration, because: error)
    }
    if !configuration.cuts.skippedOperations.isEmpty {
      // Kept operations make the edits they made in the uncut run: each takes its
      // author's workload (random stream and memory) as it was at that step there.
      var uncut = configuration
      uncut.cuts.skippedOperations = []
      var recording: SimulationRun
      do {
        recording = try SimulationRun(Simulation(uncut, hooks: hooks))
      } catch {
        return SimulationReport(notStarted: configuration, because: error)
      }
      recording.workloadsByStep = []
      recording.runOperations(progress: nil)
      run.workloadsByStep = recording.workloadsByStep
    }
    run.runOperations(progress: progress)
    run.finish()
    // Devices that forgot mid-run forgot different entities by different cuts: all
    // forget by the final one (copies) before their bytes are compared.
    let replicas =
      configuration.hasStability
      ? Oracle.forgettingByFinalCut(run.replicas, collectingLists: configuration.collectsLists)
      : run.replicas
    let takenBack = run.ledger.takenBack(finalReplicas: replicas)
    run.statistics.dotsTakenBack = takenBack
    var verdict = PhaseTimings.measure(&run.statistics.timings, \.oracle) {
      Oracle.check(
        replicas, pendingExplained: takenBack > 0,
        presenceChecked: run.statistics.damagedFiles == 0)
    }
    verdict.failures += run.statistics.stabilityFailures
    if configuration.workload == .boards {
      verdict.failures += Oracle.boardFailures(
        of: replicas, created: run.cardsCreated(heldBy: replicas), deleted: run.deletedCards,
        lostChecked: takenBack == 0 && run.statistics.damagedFiles == 0)
      verdict.failures += Oracle.treeFailures(of: replicas)
    }
    verdict.failures += run.ledger.failures(finalReplicas: replicas)
    if run.statistics.undecodable > 0 {
      verdict.failures.append(
        "\(run.statistics.undecodable) messages did not decode at the receiving session")
    }
    verdict.failures += run.statistics.unquietPairs.map { pair in
      "sessions of replicas \(pair.0) and \(pair.1) still had messages to send after "
        + "\(SimulationRun.finalExchangeLimit) exchanges on a reliable channel"
    }
    let elapsed = clock.now - start
    let seconds =
      Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return SimulationReport(
      configuration: configuration, verdict: verdict, statistics: run.statistics,
      network: run.network.statistics, seconds: seconds)
  }
}

/// What a run counted besides the network's own statistics.
struct RunStatistics: Sendable {
  var operations = 0
  var skippedOperations = 0
  var handshakes = 0
  var finalHandshakes = 0
  var finalRounds = 0
  var finalBytes = 0
  /// Bytes of live pushes (messages or frames) sent during the run.
  var liveBytes = 0
  var undecodable = 0
  /// Devices killed and reopened from their stores, and how many of those reopened
  /// from a stale copy of their directory.
  var restarts = 0
  var staleRestores = 0
  /// Restarts drawn, made or not (a shrinker's cuts skip some), and the numbers of those
  /// made and of those that restored a stale backup.
  var restartsDrawn = 0
  /// Restarts that also lost or damaged one of the device's files.
  var damagedFiles = 0
  var restartLog: [Int] = []
  var staleRestoreLog: [Int] = []
  /// Restarts whose store loaded its snapshot with the texts deferred (its tag matched).
  var taggedRestarts = 0
  /// Undo and Redo presses that took back or made again a step.
  var undoPresses = 0
  /// Local commits a restart lost before the store made them durable (never sent).
  var unsyncedCommitsLost = 0
  var identityChanges = 0
  /// Durable dots that stale restores took back and no replica holds at the end.
  var dotsTakenBack: UInt64 = 0
  var refusedFrames = 0
  var filtered = 0
  var maxReplicasWithPending = 0
  var virtualMilliseconds: UInt64 = 0
  /// Pairs whose sessions did not fall quiet in the final phase.
  var unquietPairs: [(Int, Int)] = []
  var timings = PhaseTimings()
  /// Stability during the run (see `SimulationRun+Stability.swift`): devices that left,
  /// were retired and rejoined (and of those, rejoins that re-applied offline edits);
  /// forgets that ran and the deleted entities they dropped; forgets given up for want of
  /// a member's bound or of a cut; messages refused as retired.
  var leaves = 0
  var retirements = 0
  var rejoins = 0
  var rejoinsReapplying = 0
  var forgets = 0
  var forgottenEntities = 0
  var forgetsWithoutBounds = 0
  var refusedRetired = 0
  /// The waiting items of retired ids the members dropped when a device rejoined
  /// (edits delivered ahead of an earlier event of a retired device that no member
  /// held), each re-applied by that device's rebase under its fresh id.
  var strandedDropped = 0
  /// The list slot tombstones devices collected mid-run, counted on every device.
  var collectedSlots = 0
  /// What the stability checks found wrong.
  var stabilityFailures: [String] = []
}

/// Where a run's wall-clock time went, in seconds per phase.
public struct PhaseTimings: Sendable, Equatable {
  /// Local transactions (the workloads, through `Replica.transact`).
  public var transact: Double = 0
  /// `Replica.apply` of received deltas.
  public var apply: Double = 0
  /// `SyncSession.makeMessage(for:)`, whose `Replica.delta(since:)` answers handshakes.
  public var deltaSince: Double = 0
  /// The sessions' encoding and decoding of messages and frames.
  public var transport: Double = 0
  /// The oracle's checks and fingerprints.
  public var oracle: Double = 0

  /// Runs `body`, adding its duration to the phase at `phase`.
  static func measure<T>(
    _ timings: inout PhaseTimings, _ phase: WritableKeyPath<PhaseTimings, Double>,
    _ body: () -> T
  ) -> T {
    let clock = ContinuousClock()
    let start = clock.now
    let result = body()
    let elapsed = (clock.now - start).components
    timings[keyPath: phase] +=
      Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    return result
  }
}

/// The mutable state of one run.
struct SimulationRun {
  let configuration: SimulationConfiguration
  let hooks: SimulationHooks
  let clock = VirtualClock()
  var devices: [SimulatedDevice] = []
  /// What the stores promised, checked by the oracle: no dot made durable twice, and
  /// nothing made durable lost.
  var ledger = DurabilityLedger()
  var workloads: [Workload] = []
  /// Cards created and deleted in the run (boards workload), seeded ones included.
  var createdCards: Set<String> = []
  /// Cards of commits that restarts took back, with each commit's latest dot.
  var cardsTakenBack: [(card: String, dot: Dot)] = []
  var deletedCards: Set<String> = []
  /// The author's workload before each step: recorded when empty, else taken at each
  /// step (see ``ScheduleCuts``); `nil` when neither.
  var workloadsByStep: [Workload]?
  var network: Network
  var schedule: SimulationRandom
  /// Restarts and backups draw from their own stream, so a run without them keeps the
  /// schedule it had before they existed.
  var restartRandom: SimulationRandom
  /// Which restarts also lose or damage a file, and which: a stream of its own, so runs
  /// without file damage draw exactly what they drew before it existed.
  var fileDamageRandom: SimulationRandom
  var sessionSeeds: SimulationRandom
  /// Leaves and forgets draw from their own stream, so runs without them keep their
  /// schedule.
  var stabilityRandom: SimulationRandom
  var stability: StabilityState
  var statistics = RunStatistics()
  /// `sessions[a][b]` is replica a's session with replica b.
  var sessions: [[SyncSession]] = []
  /// How many messages the two sessions of a pair may exchange in the final phase
  /// before the run fails for chatter: a handshake takes at most four.
  static let finalExchangeLimit = 16

  /// Independent random streams of the seed, one per concern.
  enum Stream: UInt64 {
    case setup = 1
    case schedule = 2
    case network = 3
    case origin = 4
    case sessions = 5
    case restarts = 6
    case identities = 7
    case fileDamage = 8
    case stability = 9
    case workloads = 100
  }

  init(_ simulation: Simulation) throws(StoreError) {
    configuration = simulation.configuration
    hooks = simulation.hooks
    let seed = configuration.seed
    let count = configuration.replicas
    schedule = SimulationRandom(seed: seed, stream: Stream.schedule.rawValue)
    network = Network(
      replicas: count, faults: configuration.faults, messageLimit: configuration.messageLimit,
      random: SimulationRandom(seed: seed, stream: Stream.network.rawValue))
    network.droppedSends = configuration.cuts.droppedMessages
    var setup = SimulationRandom(seed: seed, stream: Stream.setup.rawValue)
    var origin = Replica(id: .random(using: &setup), wallClock: clock.addDevice(skew: 0))
    var originUser = Workload(
      kind: configuration.workload,
      random: SimulationRandom(seed: seed, stream: Stream.origin.rawValue))
    originUser.seedOrigin(&origin, library: configuration.library)
    createdCards = Set(Workload.cardColumns(in: origin.document).keys)
    restartRandom = SimulationRandom(seed: seed, stream: Stream.restarts.rawValue)
    fileDamageRandom = SimulationRandom(seed: seed, stream: Stream.fileDamage.rawValue)
    stabilityRandom = SimulationRandom(seed: seed, stream: Stream.stability.rawValue)
    stability = StabilityState(devices: count)
    for index in 0..<count {
      let skew = Self.skew(using: &setup)
      let ids = ReplicaIDSource(
        first: .random(using: &setup),
        random: SimulationRandom(
          seed: seed, stream: Stream.identities.rawValue << 32 + UInt64(index)))
      devices.append(
        try SimulatedDevice(
          origin: origin, ids: ids, wallClock: clock.addDevice(skew: skew), clock: clock,
          // A stability run syncs every commit (see `SimulationRun+Stability.swift`).
          syncInterval: configuration.hasStability ? 0 : configuration.syncInterval,
          compactionLogBytes: hooks.compactionLogBytes ?? 256 << 10))
      workloads.append(
        Workload(
          kind: configuration.workload,
          random: SimulationRandom(seed: seed, stream: Stream.workloads.rawValue + UInt64(index))))
      workloads[index].reusesIDs = !configuration.hasStability
    }
    sessionSeeds = SimulationRandom(seed: seed, stream: Stream.sessions.rawValue)
    sessions = (0..<count).map { _ in
      (0..<count).map { _ in SyncSession(streamSeed: sessionSeeds.next()) }
    }
  }

  /// A device's clock error: most are right, some drift, some are hours behind.
  static func skew(using random: inout SimulationRandom) -> Int64 {
    switch Int.random(in: 0..<10, using: &random) {
    case 0..<4: 0
    case 4..<6: .random(in: -5_000...5_000, using: &random)
    case 6, 7: -Int64.random(in: 1...6, using: &random) * 3_600_000
    default: .random(in: 60_000...1_800_000, using: &random)
    }
  }

  var now: UInt64 { clock.now }

  /// Each device's replica, in device order.
  var replicas: [Replica] { devices.map(\.store.replica) }

  // MARK: Operations

  mutating func runOperations(progress: ((SimulationProgress) -> Void)?) {
    let total = configuration.operations
    let reportEvery = Swift.max(1, total / 100)
    for step in 0..<total {
      clock.now += UInt64.random(in: 1...20, using: &schedule)
      deliverDue()
      network.step(at: now)
      if schedule.chance(0.001) {
        // A device's clock is corrected or goes wrong: its wall time jumps, maybe back
        // by hours. Device 0 is the origin.
        let device = Int.random(in: 0..<devices.count, using: &schedule)
        clock.setSkew(Self.skew(using: &schedule), of: device + 1)
      }
      let author = Int.random(in: 0..<devices.count, using: &schedule)
      if configuration.cuts.skippedOperations.contains(step) {
        // Skipped by a schedule shrinker: time, the author's draw and the timer stay.
        statistics.skippedOperations += 1
      } else {
        if let recorded = workloadsByStep {
          if recorded.count > step {
            // The nodes deleted in this run, not in the recorded one: a shrunk schedule
            // may delete a node the recorded run did not (or later).
            let deletedNodes = workloads[author].deletedNodes
            workloads[author] = recorded[step]
            workloads[author].deletedNodes = deletedNodes
          } else {
            workloadsByStep?.append(workloads[author])
          }
        }
        perform(by: author)
      }
      let interval = configuration.antiEntropyInterval
      if interval > 0, step % interval == interval - 1, devices.count > 1 {
        let a = Int.random(in: 0..<devices.count, using: &schedule)
        var b = Int.random(in: 0..<devices.count - 1, using: &schedule)
        if b >= a { b += 1 }
        startHandshake(from: a, to: b)
      }
      if configuration.hasStability {
        stabilityStep()
      } else {
        restartOrBackUp()
      }
      pushDurable()
      if step % 64 == 0 { samplePending() }
      if let progress, step % reportEvery == 0 || step == total - 1 {
        progress(
          SimulationProgress(
            operations: step + 1, total: total, messages: network.statistics.sent,
            inFlight: network.inFlight))
      }
    }
  }

  /// One transaction of `author`'s workload, through its device replica; it is pushed to every
  /// peer once the store has made it durable (see ``pushDurable(from:)``).
  mutating func perform(by author: Int) {
    let presses = workloads[author].undoPresses
    let commit = PhaseTimings.measure(&statistics.timings, \.transact) {
      devices[author].perform(&workloads[author], undoRate: configuration.undo)
    }
    statistics.undoPresses += workloads[author].undoPresses - presses
    createdCards.formUnion(workloads[author].lastCardEvents.created)
    deletedCards.formUnion(workloads[author].lastCardEvents.deleted)
    statistics.operations += 1
    if configuration.hasStability { noteDeletedNodes(in: commit, by: author) }
    pushDurable(from: author)
  }

  /// Tells every workload the card nodes `commit` deleted (an Undo of the move that
  /// created one), so that no device creates their keys again once devices forget (see
  /// ``Workload/deletedNodes``).
  private mutating func noteDeletedNodes(in commit: Commit, by author: Int) {
    let document = devices[author].store.replica.document
    let deleted = commit.delta.keys.filter {
      $0.type == Workload.cardNodeType && !document.contains($0)
    }
    guard !deleted.isEmpty else { return }
    for index in workloads.indices {
      workloads[index].deletedNodes.formUnion(deleted.map(\.id))
    }
  }

  mutating func samplePending() {
    // Counted in place: filtering would copy every replica that has pending text.
    let pending = devices.reduce(0) {
      $0 + ($1.store.replica.document.hasPendingChanges ? 1 : 0)
    }
    statistics.maxReplicasWithPending = Swift.max(statistics.maxReplicasWithPending, pending)
  }
}
