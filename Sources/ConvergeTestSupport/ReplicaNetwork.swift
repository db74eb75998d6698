import Converge

/// One replica in a ``ReplicaNetwork``: its id, its state, a hybrid logical clock that
/// reads a skewed simulated wall clock, and the counter its dots come from.
public struct SimulatedReplica<State: Mergeable>: Sendable {
  /// The replica's id.
  public let id: ReplicaID
  /// The replica's current state.
  public var state: State
  /// The replica's clock; ``tick()`` reads it at the replica's wall time.
  public var clock: HybridLogicalClock
  /// The replica's wall-clock reading now, in milliseconds; set by the network, skewed.
  public var wallMilliseconds: UInt64
  /// The counter of the last dot this replica made with ``nextDot()``.
  public private(set) var lastCounter: UInt64

  /// A replica `id` holding `state`, whose wall clock reads `wallMilliseconds`, with a
  /// clock that has issued nothing and no dot made yet.
  public init(id: ReplicaID, state: State, wallMilliseconds: UInt64 = 0) {
    self.id = id
    self.state = state
    self.clock = HybridLogicalClock(wallClock: .fixed(0))
    self.wallMilliseconds = wallMilliseconds
    self.lastCounter = 0
  }

  /// A fresh dot of this replica (the counter saturates instead of trapping; a
  /// simulation never gets near it).
  public mutating func nextDot() -> Dot {
    if lastCounter < .max { lastCounter += 1 }
    return Dot(replica: id, counter: lastCounter)
  }

  /// A fresh timestamp at the replica's current wall time.
  public mutating func tick() -> Timestamp {
    clock.tick(wallMilliseconds: wallMilliseconds)
  }
}

/// A few replicas of one state type that make random local changes and exchange random
/// subsets of their deltas, so that the states they reach are realistic: concurrent
/// edits, deltas received out of order, twice or not at all, removals, skewed clocks.
///
/// Deterministic for a given generator seed. The law tests draw their random states from
/// here; later types reuse it with their own `mutate` closure.
///
/// ```swift
/// var network = ReplicaNetwork(replicas: 3, initial: ORSet<UInt8>(), using: &random)
/// network.run(steps: 20, using: &random) { replica, random in
///   replica.state.insert(.random(in: 0..<8, using: &random), replica: replica.id) ?? ORSet()
/// }
/// let states = network.replicas.map(\.state)
/// ```
public struct ReplicaNetwork<State: Mergeable>: Sendable {
  /// The replicas, with distinct ids.
  public private(set) var replicas: [SimulatedReplica<State>]
  /// Every delta any replica made, in the order they were made.
  public private(set) var deltas: [State]
  /// The simulated true time, in milliseconds.
  public private(set) var now: UInt64
  /// Each replica's wall-clock error in milliseconds: some replicas run an hour behind,
  /// and skews change during a run, so wall clocks also jump backwards.
  private var skews: [Int64]

  /// `count` replicas with distinct random ids, each starting from `initial`.
  public init(replicas count: Int, initial: State, using generator: inout SeededGenerator) {
    var ids: Set<ReplicaID> = []
    var replicas: [SimulatedReplica<State>] = []
    while replicas.count < Swift.max(count, 1) {
      // Small ids half of the time, so id order and counter order both break ties.
      let id =
        Bool.random(using: &generator)
        ? ReplicaID(rawValue: .random(in: 1...9, using: &generator))
        : ReplicaID.random(using: &generator)
      guard ids.insert(id).inserted else { continue }
      replicas.append(SimulatedReplica(id: id, state: initial))
    }
    self.replicas = replicas
    self.deltas = []
    self.now = 36_000_000
    self.skews = replicas.map { _ in Self.randomSkew(using: &generator) }
    updateWallClocks()
  }

  /// `count` replicas from `initial` after `steps` random steps of `mutate` (see
  /// ``run(steps:using:mutate:)``): a type's random network in one call.
  public init(
    replicas count: Int, initial: State, steps: Int, using generator: inout SeededGenerator,
    mutate: (inout SimulatedReplica<State>, inout SeededGenerator) -> State
  ) {
    self.init(replicas: count, initial: initial, using: &generator)
    run(steps: steps, using: &generator, mutate: mutate)
  }

  /// Runs `steps` random steps. In each, one replica makes a local change (`mutate`
  /// returns its delta), receives a random handful of the deltas made so far (shuffled,
  /// some twice), merges another replica's whole state, or has its wall clock jump.
  public mutating func run(
    steps: Int, using generator: inout SeededGenerator,
    mutate: (inout SimulatedReplica<State>, inout SeededGenerator) -> State
  ) {
    for _ in 0..<steps {
      now += UInt64.random(in: 0...3, using: &generator)
      updateWallClocks()
      let index = Int.random(in: replicas.indices, using: &generator)
      switch Int.random(in: 0..<100, using: &generator) {
      case 0..<55:
        deltas.append(mutate(&replicas[index], &generator))
      case 55..<85:
        guard !deltas.isEmpty else { continue }
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
          let delta = deltas[Int.random(in: deltas.indices, using: &generator)]
          replicas[index].state.merge(delta)
        }
      case 85..<95:
        let source = replicas[Int.random(in: replicas.indices, using: &generator)].state
        replicas[index].state.merge(source)
      default:
        skews[index] = Self.randomSkew(using: &generator)
        updateWallClocks()
      }
    }
  }

  /// A random replica index and a different one (the same if there is only one replica).
  public func randomPair(using generator: inout SeededGenerator) -> (Int, Int) {
    let first = Int.random(in: replicas.indices, using: &generator)
    guard replicas.count > 1 else { return (first, first) }
    var second = Int.random(in: 0..<replicas.count - 1, using: &generator)
    if second >= first { second += 1 }
    return (first, second)
  }

  private static func randomSkew(using generator: inout SeededGenerator) -> Int64 {
    switch Int.random(in: 0..<10, using: &generator) {
    case 0..<5: 0
    case 5..<8: .random(in: -5...5, using: &generator)
    case 8: -3_600_000
    default: .random(in: -60_000...60_000, using: &generator)
    }
  }

  private mutating func updateWallClocks() {
    for index in replicas.indices {
      let wall = Int64(now) + skews[index]
      replicas[index].wallMilliseconds = UInt64(Swift.max(wall, 0))
    }
  }
}
