import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// Seeded random histories of two or three devices inserting, moving and removing items
/// of one list and syncing at random, checked against the laws: merge is a join, every
/// delivery order of the edits' deltas (duplicates included) converges to the merged
/// state, `delta(since:)` brings a peer up to date, and no item ever shows twice.
@Suite struct MovableListLawTests {
  /// One random history: each device's list and context, and every edit's delta with the
  /// events it made.
  private struct History {
    var lists: [MovableList]
    var contexts: [CausalContext]
    var edits: [(delta: MovableListDelta, context: CausalContext)] = []
  }

  private func randomHistory(using random: inout SeededGenerator) -> History {
    let deviceCount = Int.random(in: 2...3, using: &random)
    var history = History(
      lists: Array(repeating: MovableList(), count: deviceCount),
      contexts: Array(repeating: CausalContext(), count: deviceCount))
    var counters = Array(repeating: UInt64(1), count: deviceCount)
    // One clock for all devices: a later edit always has a later stamp, as after an HLC
    // observed the earlier one; concurrent edits get distinct, arbitrary stamps.
    var time: UInt64 = 1
    let pool = (0..<8).map { FieldValue.string("item\($0)") }
    for _ in 0..<Int.random(in: 5...40, using: &random) {
      let device = Int.random(in: 0..<deviceCount, using: &random)
      if Int.random(in: 0..<5, using: &random) == 0 {
        // Sync: the device receives another's whole state as a delta.
        let other = Int.random(in: 0..<deviceCount, using: &random)
        let missing = history.lists[other].delta(since: history.contexts[device])
        history.lists[device].apply(missing)
        history.contexts[device].formUnion(history.contexts[other])
        continue
      }
      let replica = ReplicaID(rawValue: UInt64(device + 1))
      let dot = Dot(replica: replica, counter: counters[device])
      var made = CausalContext()
      made.insert(dot)
      made.insert(Dot(replica: replica, counter: counters[device] + 1))
      counters[device] += 2
      time += UInt64.random(in: 1...3, using: &random)
      let stamp = Timestamp(rawValue: time)
      let count = history.lists[device].count
      let delta: MovableListDelta
      switch Int.random(in: 0..<3, using: &random) {
      case 0:
        delta = history.lists[device].insert(
          pool.randomElement(using: &random) ?? .null,
          at: Int.random(in: 0...count, using: &random), firstDot: dot, timestamp: stamp)
      case 1 where count > 0:
        delta = history.lists[device].move(
          from: Int.random(in: 0..<count, using: &random),
          to: Int.random(in: 0..<count, using: &random), firstDot: dot, timestamp: stamp)
      default:
        guard count > 0 else { continue }
        delta = history.lists[device].remove(
          at: Int.random(in: 0..<count, using: &random), firstDot: dot)
      }
      history.contexts[device].formUnion(made)
      history.edits.append((delta, made))
    }
    return history
  }

  private func checkNoDuplicates(_ list: MovableList) throws {
    let values = list.values
    guard Set(values).count == values.count else {
      throw LawViolation(
        law: "an item shows once", witnesses: [.init(label: "list", state: "\(values)")])
    }
  }

  @Test func mergeIsAJoin() throws {
    try forEachSeed(count: 300, base: 0x4C15_7001) { random in
      let history = randomHistory(using: &random)
      let lists = history.lists + [MovableList()]
      try checkJoinLaws(
        lists[0], lists[1], lists[2], seed: random.seed,
        join: { $0.merging($1) }, equivalent: { $0 == $1 && $0.values == $1.values })
      for list in lists { try checkNoDuplicates(list) }
    }
  }

  @Test func everyDeliveryOrderConverges() throws {
    try forEachSeed(count: 300, base: 0x4C15_7002) { random in
      let history = randomHistory(using: &random)
      var merged = MovableList()
      for list in history.lists { merged.merge(list) }
      try checkNoDuplicates(merged)
      // Every edit's delta, some twice, in a random order.
      var deliveries = history.edits.map(\.delta)
      deliveries += deliveries.filter { _ in Bool.random(using: &random) }
      for _ in 0..<3 {
        deliveries.shuffle(using: &random)
        var replica = MovableList()
        for delta in deliveries { replica.apply(delta) }
        guard replica == merged, replica.values == merged.values else {
          throw LawViolation(
            law: "every delivery order converges",
            witnesses: [
              .init(label: "merged", state: "\(merged.values)"),
              .init(label: "delivered", state: "\(replica.values)"),
            ])
        }
        try checkNoDuplicates(replica)
      }
      // Deltas joined into one group apply as the edits do one by one.
      var grouped = MovableListDelta()
      for delta in deliveries { grouped.merge(delta) }
      var fromGroup = MovableList()
      fromGroup.apply(grouped)
      #expect(fromGroup == merged, "seed \(random.seed)")
    }
  }

  @Test func deltaSinceBringsAPeerUpToDate() throws {
    try forEachSeed(count: 300, base: 0x4C15_7003) { random in
      let history = randomHistory(using: &random)
      for (sender, list) in history.lists.enumerated() {
        for receiver in history.lists.indices where receiver != sender {
          var peer = history.lists[receiver]
          peer.apply(list.delta(since: history.contexts[receiver]))
          guard peer == history.lists[receiver].merging(list) else {
            throw LawViolation(
              law: "delta(since:) equals merging the state",
              witnesses: [.init(label: "peer", state: "\(peer.values)")])
          }
        }
      }
    }
  }
}
