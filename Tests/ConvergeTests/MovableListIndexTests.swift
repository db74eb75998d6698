import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The list's maintained slot-to-item map and index mapping (O(log s) a lookup) against a
/// naive model that reads the whole list: seeded random histories of three devices that
/// insert, move and remove items and deliver each other's deltas late, out of order and
/// twice, so that concurrent moves of one item leave orphaned slots and deltas wait for
/// missing slots. After every step the list must read as the naive model reads it, local
/// edits must do to it what they do to an array, and the changes ``MovableList`` reports
/// for a delta must turn the items before it into the items after it.
@Suite struct MovableListIndexTests {
  /// The items as the list read them before it kept a map: every visible slot in order
  /// that is the current slot of a present item (two items naming one slot: the smaller).
  private func naiveValues(_ list: MovableList) -> [FieldValue] {
    var current: [Dot: FieldValue] = [:]
    for (value, item) in list.items where item.presence.isPresent {
      guard let slot = item.position.value else { continue }
      if let other = current[slot], other < value { continue }
      current[slot] = value
    }
    var values: [FieldValue] = []
    list.slots.forEachVisibleItem { slot, _ in
      if let value = current[slot] { values.append(value) }
    }
    return values
  }

  /// Checks every read of `list` against the naive model.
  private func checkReads(_ list: MovableList, pool: [FieldValue], seed: UInt64) {
    let expected = naiveValues(list)
    #expect(list.values == expected, "seed \(seed)")
    #expect(list.count == expected.count, "seed \(seed)")
    #expect(list.isEmpty == expected.isEmpty, "seed \(seed)")
    for value in pool {
      #expect(list.index(of: value) == expected.firstIndex(of: value), "seed \(seed)")
      #expect(list.contains(value) == expected.contains(value), "seed \(seed)")
    }
  }

  @Test func indicesAndChangesMatchANaiveModel() throws {
    // How often the hard cases came up: a list with orphaned slots, one with slots
    // waiting for missing ones.
    var withOrphans = 0
    var withPending = 0
    try forEachSeed(count: 120, base: 0x4C15_7D00) { random in
      let seed = random.seed
      let pool = (0..<10).map { FieldValue.string("card\($0)") }
      var lists = Array(repeating: MovableList(), count: 3)
      var counters = Array(repeating: UInt64(1), count: 3)
      // Each device's deltas not delivered yet, per receiving device.
      var inbox: [[MovableListDelta]] = Array(repeating: [], count: 3)
      var time: UInt64 = 1
      for _ in 0..<Int.random(in: 20...80, using: &random) {
        let device = Int.random(in: 0..<3, using: &random)
        if Int.random(in: 0..<3, using: &random) == 0, !inbox[device].isEmpty {
          // Deliver a random waiting delta (out of order); sometimes keep it to deliver
          // again later.
          let index = Int.random(in: 0..<inbox[device].count, using: &random)
          let delta =
            Bool.random(using: &random)
            ? inbox[device].remove(at: index) : inbox[device][index]
          let before = lists[device].values
          let (changed, changes) = lists[device].applyReportingChanges(delta)
          let after = lists[device].values
          #expect(changed || before == after, "seed \(seed)")
          #expect(
            ListChange.difference(changes).flatMap { before.applying($0) } == after, "seed \(seed)")
          checkReads(lists[device], pool: pool, seed: seed)
          if !lists[device].orphans.isEmpty { withOrphans += 1 }
          if lists[device].hasPending { withPending += 1 }
          continue
        }
        let dot = Dot(replica: ReplicaID(rawValue: UInt64(device + 1)), counter: counters[device])
        counters[device] += 2
        time += UInt64.random(in: 1...3, using: &random)
        let stamp = Timestamp(rawValue: time)
        var model = lists[device].values
        let count = model.count
        let delta: MovableListDelta
        switch Int.random(in: 0..<4, using: &random) {
        case 0, 1:
          let value = pool.randomElement(using: &random) ?? .null
          let index = Int.random(in: -1...count + 1, using: &random)
          delta = lists[device].insert(value, at: index, firstDot: dot, timestamp: stamp)
          if let from = model.firstIndex(of: value) {
            model.remove(at: from)
            model.insert(value, at: Swift.max(0, Swift.min(index, count - 1)))
          } else {
            model.insert(value, at: Swift.max(0, Swift.min(index, count)))
          }
        case 2:
          let from = Int.random(in: -1...count, using: &random)
          let to = Int.random(in: -1...count + 1, using: &random)
          delta = lists[device].move(from: from, to: to, firstDot: dot, timestamp: stamp)
          if model.indices.contains(from) {
            let value = model.remove(at: from)
            model.insert(value, at: Swift.max(0, Swift.min(to, count - 1)))
          }
        default:
          let index = Int.random(in: -1...count, using: &random)
          delta = lists[device].remove(at: index, firstDot: dot)
          if model.indices.contains(index) { model.remove(at: index) }
        }
        #expect(lists[device].values == model, "seed \(seed)")
        checkReads(lists[device], pool: pool, seed: seed)
        for other in 0..<3 where other != device && !delta.isEmpty {
          inbox[other].append(delta)
        }
      }
      // Everything delivered: the devices agree.
      for device in 0..<3 {
        for delta in inbox[device] { lists[device].apply(delta) }
        checkReads(lists[device], pool: pool, seed: seed)
      }
      #expect(lists[0].values == lists[1].values, "seed \(seed)")
      #expect(lists[1].values == lists[2].values, "seed \(seed)")
    }
    #expect(withOrphans > 100 && withPending > 100, "\(withOrphans), \(withPending)")
  }
}
