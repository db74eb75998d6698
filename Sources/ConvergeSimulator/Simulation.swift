import Converge

/// Fault injection for testing the simulator itself.
public struct SimulationHooks: Sendable {
  /// Decides whether replica `receiver` (an index), whose document is `document`,
  /// integrates `delta`. Returning `false` drops the delta silently, every time it
  /// arrives, as a broken merge would: tests use it to show that the oracle catches a bug
  /// and the shrinker reduces it. (A delta is not a document of its own: to see its
  /// effect, apply it to a copy of `document`.)
  public var applyFilter: ApplyFilter?

  public typealias ApplyFilter =
    @Sendable (_ receiver: Int, _ delta: DocumentDelta, _ document: Document) -> Bool

  public init(applyFilter: ApplyFilter? = nil) {
    self.applyFilter = applyFilter
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
/// The run, step by step:
/// 1. An origin replica creates a few entities; every replica is forked from it under a
///    fresh id drawn from the seed.
/// 2. Each operation advances virtual time, delivers the messages that are due, maybe
///    starts a partition or takes a device offline, and has one replica make one
///    transaction from its ``Workload``. Its delta is pushed to every peer (an offline
///    device holds it back). Every ``SimulationConfiguration/antiEntropyInterval``
///    operations two replicas start a handshake: each sends its context and gets back
///    exactly what it lacks.
/// 3. At the end every partition heals and every device comes online; messages still in
///    flight are delivered, then handshake rounds run until a round changes nothing.
/// 4. The ``Oracle`` compares every replica's state with the first's.
public struct Simulation: Sendable {
  public let configuration: SimulationConfiguration
  public let transport: SimulationTransport
  public let hooks: SimulationHooks

  public init(
    _ configuration: SimulationConfiguration, transport: SimulationTransport = .standard,
    hooks: SimulationHooks = SimulationHooks()
  ) {
    self.configuration = configuration
    self.transport = transport
    self.hooks = hooks
  }

  /// Runs the simulation and checks the oracle. `progress` is called about a hundred
  /// times during a run.
  public func run(progress: ((SimulationProgress) -> Void)? = nil) -> SimulationReport {
    let clock = ContinuousClock()
    let start = clock.now
    var run = SimulationRun(self)
    run.runOperations(progress: progress)
    run.finish()
    var verdict = PhaseTimings.measure(&run.statistics.timings, \.oracle) {
      Oracle.check(run.replicas, transport: transport)
    }
    if run.statistics.undecodable > 0 {
      verdict.failures.append(
        "\(run.statistics.undecodable) messages did not decode with the transport")
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
  var emptyOperations = 0
  var handshakes = 0
  var finalHandshakes = 0
  var finalRounds = 0
  var finalBytes = 0
  var undecodable = 0
  var refusedFrames = 0
  var filtered = 0
  var maxReplicasWithPending = 0
  var virtualMilliseconds: UInt64 = 0
  var timings = PhaseTimings()
}

/// Where a run's wall-clock time went, in seconds per phase.
public struct PhaseTimings: Sendable, Equatable {
  /// Local transactions (the workloads, through `Replica.transact`).
  public var transact: Double = 0
  /// `Replica.apply` of received deltas.
  public var apply: Double = 0
  /// `Replica.delta(since:)` answering handshakes.
  public var deltaSince: Double = 0
  /// The transport's encoding and decoding.
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
  let transport: SimulationTransport
  let hooks: SimulationHooks
  let clock = VirtualClock()
  var replicas: [Replica] = []
  var workloads: [Workload] = []
  var network: Network
  var schedule: SimulationRandom
  var statistics = RunStatistics()
  /// With framed pushes, `sessions[a][b]` is replica a's session with replica b, and
  /// what a knows of b's stream to it.
  var sessions: [[SyncSession]] = []
  var newStreamRequested: [[Bool]] = []
  var refusalsSinceRequest: [[Int]] = []
  static let refusalsBeforeRepeat = 8

  /// Independent random streams of the seed, one per concern.
  enum Stream: UInt64 {
    case setup = 1
    case schedule = 2
    case network = 3
    case origin = 4
    case sessions = 5
    case workloads = 100
  }

  init(_ simulation: Simulation) {
    configuration = simulation.configuration
    transport = simulation.transport
    hooks = simulation.hooks
    let seed = configuration.seed
    let count = configuration.replicas
    schedule = SimulationRandom(seed: seed, stream: Stream.schedule.rawValue)
    network = Network(
      replicas: count, faults: configuration.faults, messageLimit: configuration.messageLimit,
      random: SimulationRandom(seed: seed, stream: Stream.network.rawValue))
    var setup = SimulationRandom(seed: seed, stream: Stream.setup.rawValue)
    var origin = Replica(id: .random(using: &setup), wallClock: clock.addDevice(skew: 0))
    var originUser = Workload(
      kind: configuration.workload,
      random: SimulationRandom(seed: seed, stream: Stream.origin.rawValue))
    originUser.seedOrigin(&origin)
    for index in 0..<count {
      let skew = Self.skew(using: &setup)
      replicas.append(
        origin.forked(as: .random(using: &setup), wallClock: clock.addDevice(skew: skew)))
      workloads.append(
        Workload(
          kind: configuration.workload,
          random: SimulationRandom(seed: seed, stream: Stream.workloads.rawValue + UInt64(index))))
    }
    if configuration.framedPushes {
      var streams = SimulationRandom(seed: seed, stream: Stream.sessions.rawValue)
      sessions = (0..<count).map { _ in
        (0..<count).map { _ in SyncSession(streamSeed: streams.next()) }
      }
      newStreamRequested = Array(repeating: Array(repeating: false, count: count), count: count)
      refusalsSinceRequest = Array(repeating: Array(repeating: 0, count: count), count: count)
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
        let device = Int.random(in: 0..<replicas.count, using: &schedule)
        clock.setSkew(Self.skew(using: &schedule), of: device + 1)
      }
      let author = Int.random(in: 0..<replicas.count, using: &schedule)
      let commit = PhaseTimings.measure(&statistics.timings, \.transact) {
        workloads[author].perform(on: &replicas[author])
      }
      statistics.operations += 1
      if commit.delta.isEmpty {
        statistics.emptyOperations += 1
      } else if configuration.livePush, replicas.count > 1 {
        if network.isOnline(author, at: now), configuration.framedPushes {
          for peer in replicas.indices where peer != author {
            let frame = PhaseTimings.measure(&statistics.timings, \.transport) {
              sessions[author][peer].pushEncoded(commit, from: replicas[author])
            }
            network.send(
              Message(from: author, to: peer, payload: .frame(frame)), size: frame.count, at: now)
          }
        } else if network.isOnline(author, at: now) {
          let wire = wrap(commit.delta)
          for peer in replicas.indices where peer != author {
            network.send(
              Message(from: author, to: peer, payload: .push(wire)), size: wire.size, at: now)
          }
        } else {
          network.statistics.heldOffline += 1
        }
      }
      let interval = configuration.antiEntropyInterval
      if interval > 0, step % interval == interval - 1, replicas.count > 1 {
        let a = Int.random(in: 0..<replicas.count, using: &schedule)
        var b = Int.random(in: 0..<replicas.count - 1, using: &schedule)
        if b >= a { b += 1 }
        startHandshake(from: a, to: b)
      }
      if step % 64 == 0 { samplePending() }
      if let progress, step % reportEvery == 0 || step == total - 1 {
        progress(
          SimulationProgress(
            operations: step + 1, total: total, messages: network.statistics.sent,
            inFlight: network.inFlight))
      }
    }
  }

  mutating func startHandshake(from a: Int, to b: Int, newStream: Bool = false) {
    guard network.canTalk(a, b, at: now) else { return }
    statistics.handshakes += 1
    let context = replicas[a].context
    network.send(
      Message(from: a, to: b, payload: .syncRequest(context, newStream: newStream)),
      size: context.encoded().count + 1, at: now)
  }

  /// Delivers every message due by now.
  mutating func deliverDue() {
    while let message = network.nextDelivery(upTo: now) { receive(message) }
  }

  mutating func receive(_ message: Message) {
    let receiver = message.to
    switch message.payload {
    case .push(let wire):
      integrate(wire, into: receiver)
    case .frame(let bytes):
      receiveFrame(bytes, from: message.from, at: receiver)
    case .syncRequest(let context, let newStream):
      // The requester refused one of our frames: our next push starts a new stream.
      if newStream { sessions[receiver][message.from].restartOutgoingStream() }
      let reply = wrap(answer(receiver, since: context))
      let own = replicas[receiver].context
      network.send(
        Message(from: receiver, to: message.from, payload: .syncReply(reply, own)),
        size: reply.size.map { $0 + own.encoded().count }, at: now)
    case .syncReply(let wire, let context):
      integrate(wire, into: receiver)
      let finish = wrap(answer(receiver, since: context))
      network.send(
        Message(from: receiver, to: message.from, payload: .syncFinish(finish)),
        size: finish.size, at: now)
    case .syncFinish(let wire):
      integrate(wire, into: receiver)
    }
  }

  /// A frame of `sender`'s stream to `receiver`: applied if it continues the stream,
  /// otherwise refused, and the receiver asks the sender for a handshake, whose answer
  /// carries what the refused frames held.
  mutating func receiveFrame(_ bytes: [UInt8], from sender: Int, at receiver: Int) {
    let decoded = PhaseTimings.measure(&statistics.timings, \.transport) {
      try? sessions[receiver][sender].decode(bytes[...])
    }
    guard let decoded else {
      statistics.refusedFrames += 1
      // As `SyncSession` does: ask for a new stream once, and again only after more
      // refusals (frames of the old stream still on their way are refused too).
      refusalsSinceRequest[receiver][sender] += 1
      if !newStreamRequested[receiver][sender]
        || refusalsSinceRequest[receiver][sender] > SimulationRun.refusalsBeforeRepeat
      {
        newStreamRequested[receiver][sender] = true
        refusalsSinceRequest[receiver][sender] = 0
        startHandshake(from: receiver, to: sender, newStream: true)
      }
      return
    }
    newStreamRequested[receiver][sender] = false
    refusalsSinceRequest[receiver][sender] = 0
    if let delta = decoded.delta { apply(delta, to: receiver) }
  }

  mutating func integrate(_ wire: WireDelta, into receiver: Int) {
    let opened = PhaseTimings.measure(&statistics.timings, \.transport) {
      wire.open(with: transport)
    }
    guard let delta = opened else {
      statistics.undecodable += 1
      return
    }
    apply(delta, to: receiver)
  }

  mutating func apply(_ delta: DocumentDelta, to receiver: Int) {
    if let filter = hooks.applyFilter, !filter(receiver, delta, replicas[receiver].document) {
      statistics.filtered += 1
      return
    }
    PhaseTimings.measure(&statistics.timings, \.apply) {
      _ = replicas[receiver].apply(delta)
    }
  }

  /// What replica `index` sends a peer that knows `context`.
  mutating func answer(_ index: Int, since context: CausalContext) -> DocumentDelta {
    PhaseTimings.measure(&statistics.timings, \.deltaSince) {
      replicas[index].delta(since: context)
    }
  }

  /// A delta made ready for the wire by the transport.
  mutating func wrap(_ delta: DocumentDelta) -> WireDelta {
    PhaseTimings.measure(&statistics.timings, \.transport) {
      WireDelta(delta, transport: transport)
    }
  }

  mutating func samplePending() {
    // Counted in place: filtering would copy every replica that has pending text.
    let pending = replicas.reduce(0) { $0 + ($1.document.hasPendingChanges ? 1 : 0) }
    statistics.maxReplicasWithPending = Swift.max(statistics.maxReplicasWithPending, pending)
  }

  // MARK: The end

  /// Heals the network, delivers what is in flight, and runs handshake rounds through
  /// the transport until a whole round changes no replica's context.
  mutating func finish() {
    network.healAll()
    while let time = network.nextDeliveryTime {
      clock.now = Swift.max(now, time)
      deliverDue()
    }
    samplePending()
    statistics.virtualMilliseconds = now
    guard replicas.count > 1 else { return }
    // Replica 0 gathers everything, then hands it back: two rounds suffice on a correct
    // library; more run until nothing changes, to show quiescence rather than assume it.
    for _ in 0..<(4 + replicas.count) {
      statistics.finalRounds += 1
      var changed = false
      for peer in 1..<replicas.count {
        changed = finalHandshake(0, peer) || changed
      }
      if !changed { break }
    }
  }

  /// A reliable, immediate handshake through the transport; whether anything changed.
  mutating func finalHandshake(_ a: Int, _ b: Int) -> Bool {
    statistics.finalHandshakes += 1
    let before = (replicas[a].context, replicas[b].context)
    let toA = wrap(answer(b, since: replicas[a].context))
    statistics.finalBytes += replicas[a].context.encoded().count + (toA.size ?? 0)
    integrate(toA, into: a)
    let toB = wrap(answer(a, since: replicas[b].context))
    statistics.finalBytes += replicas[b].context.encoded().count + (toB.size ?? 0)
    integrate(toB, into: b)
    return replicas[a].context != before.0 || replicas[b].context != before.1
  }
}
