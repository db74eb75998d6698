import Converge
import ConvergeTestSupport
import Testing

@Suite struct LWWRegisterTests {
  typealias Register = LWWRegister<String>
  let alice = ReplicaID(rawValue: 0xA)
  let bob = ReplicaID(rawValue: 0xB)
  let carol = ReplicaID(rawValue: 0xC)

  func stamp(_ timestamp: Timestamp, _ replica: ReplicaID, _ counter: UInt64) -> Register.Stamp {
    .init(timestamp: timestamp, dot: Dot(replica: replica, counter: counter))
  }

  func stamp(_ milliseconds: UInt64, _ replica: ReplicaID, _ counter: UInt64) -> Register.Stamp {
    stamp(Timestamp(wallMilliseconds: milliseconds), replica, counter)
  }

  @Test func neverWrittenRegisterIsEmpty() {
    let register = Register()
    #expect(register.value == nil)
    #expect(register.stamp == nil)
    #expect(register.isEmpty)
    #expect(register.merging(Register()) == register)
  }

  @Test func stampsOrderByTimestampThenReplicaThenCounter() {
    #expect(stamp(1, bob, 9) < stamp(2, alice, 1))
    #expect(stamp(1, alice, 9) < stamp(1, bob, 1))
    #expect(stamp(1, alice, 1) < stamp(1, alice, 2))
    #expect(!(stamp(1, alice, 1) < stamp(1, alice, 1)))
  }

  @Test func concurrentWritesConvergeOnTheGreaterStamp() {
    var onAlice = Register()
    var onBob = Register()
    let fromAlice = onAlice.set("milk", stamp: stamp(1_000, alice, 1))
    let fromBob = onBob.set("oat milk", stamp: stamp(1_005, bob, 1))
    #expect(fromAlice.value == "milk" && fromAlice.stamp == stamp(1_000, alice, 1))
    onAlice.merge(fromBob)
    onBob.merge(fromAlice)
    #expect(onAlice == onBob)
    #expect(onAlice.value == "oat milk")
  }

  @Test func aStaleWriteIsIgnoredAndYieldsAnEmptyDelta() {
    var register = Register()
    register.set("new", stamp: stamp(2_000, alice, 2))
    let delta = register.set("old", stamp: stamp(1_000, bob, 1))
    #expect(delta.isEmpty)
    #expect(register.value == "new")
    // The same stamp again is not greater either.
    #expect(register.set("other", stamp: stamp(2_000, alice, 2)).isEmpty)
    #expect(register.value == "new")
  }

  @Test func timestampTiesPickTheSameWinnerInEveryMergeOrder() {
    let tie = Timestamp(wallMilliseconds: 5_000, logical: 3)
    var writes: [Register] = []
    for (replica, value) in [(bob, "bob"), (carol, "carol"), (alice, "alice")] {
      var register = Register()
      writes.append(register.set(value, stamp: stamp(tie, replica, 1)))
    }
    // Same replica, same timestamp (a saturated clock): the later counter wins.
    var sameReplica = Register()
    writes.append(sameReplica.set("alice again", stamp: stamp(tie, alice, 2)))
    for order in permutations(of: Array(writes.indices)) {
      var register = Register()
      for index in order { register.merge(writes[index]) }
      #expect(register.value == "carol", "order \(order)")
    }
  }

  @Test func aWriterWhoseClockIsAnHourBehindStillWinsAfterSeeingTheNewerValue() {
    let now: UInt64 = 1_763_780_000_000
    var aliceClock = HybridLogicalClock(wallClock: .fixed(now))
    var bobClock = HybridLogicalClock(wallClock: .fixed(now - 3_600_000))
    var onAlice = Register()
    var onBob = Register()
    let fromAlice = onAlice.set("Alice's", stamp: stamp(aliceClock.tick(), alice, 1))
    onBob.merge(fromAlice)
    if let seen = onBob.stamp { bobClock.observe(seen.timestamp) }
    let fromBob = onBob.set("Bob's", stamp: stamp(bobClock.tick(), bob, 1))
    #expect(!fromBob.isEmpty)
    onAlice.merge(fromBob)
    #expect(onAlice.value == "Bob's")
    #expect(onAlice == onBob)
  }

  @Test func aBackwardWallClockNeverIssuesATimestampAtOrBelowOneIssuedOrSeen() throws {
    try forEachSeed(count: 1_000, base: 0xB_0000) { random in
      var clock = HybridLogicalClock(wallClock: .fixed(0))
      var highest = Timestamp.zero
      var wall: UInt64 = 1_000_000
      for _ in 0..<30 {
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<2:
          wall = wall &- UInt64.random(in: 0...3_600_000, using: &random)
          wall = wall > 1_000_000_000 ? 0 : wall  // wrapped below zero
        case 2..<4:
          let remote = Timestamp(
            rawValue: highest.rawValue &+ .random(in: 0...1 << 20, using: &random))
          clock.observe(remote)
          highest = Swift.max(highest, remote)
        default:
          wall += UInt64.random(in: 0...2, using: &random)
        }
        let issued = clock.tick(wallMilliseconds: wall)
        try ensure(issued > highest, "issued \(issued) after \(highest) at wall \(wall)")
        highest = issued
      }
    }
  }

  @Test func farFutureTimestampsAndExtremeCountersNeverTrap() {
    var clock = HybridLogicalClock(wallClock: .fixed(1_000))
    clock.observe(.max)
    #expect(clock.tick() == .max)
    #expect(clock.tick() == .max)
    var onAlice = Register()
    var onBob = Register()
    let first = onAlice.set("first", stamp: stamp(clock.tick(), alice, .max - 1))
    let second = onAlice.set("second", stamp: stamp(clock.tick(), alice, .max))
    let fromBob = onBob.set("bob", stamp: stamp(.max, bob, .max))
    #expect(!first.isEmpty && !second.isEmpty)
    #expect(onAlice.value == "second")
    // Saturated clocks: the dot decides, identically on both sides.
    onAlice.merge(fromBob)
    onBob.merge(second)
    onBob.merge(first)
    #expect(onAlice == onBob)
    #expect(onAlice.value == "bob")
    #expect(onAlice.set("late", stamp: stamp(.max, alice, .max)).isEmpty)
    let context = CausalContext(dots: [Dot(replica: bob, counter: .max)])
    #expect(onAlice.delta(since: context).isEmpty)
  }

  @Test func deltaSinceSendsTheWriteOnlyIfThePeerLacksItsDot() {
    var register = Register()
    register.set("x", stamp: stamp(10, alice, 3))
    let write = register.delta(since: CausalContext())
    #expect(write == register)
    let gapped = CausalContext(dots: [Dot(replica: alice, counter: 2)])
    #expect(register.delta(since: gapped) == register)
    let seen = CausalContext(dots: (1...3).map { Dot(replica: alice, counter: $0) })
    #expect(register.delta(since: seen).isEmpty)
    #expect(Register().delta(since: CausalContext()).isEmpty)
  }

  @Test func optionalValuesCanBeWrittenAndCleared() {
    var register = LWWRegister<Int?>()
    register.set(
      5, stamp: .init(timestamp: Timestamp(rawValue: 1), dot: Dot(replica: alice, counter: 1)))
    register.set(
      nil, stamp: .init(timestamp: Timestamp(rawValue: 2), dot: Dot(replica: alice, counter: 2)))
    #expect(register.value == .some(nil))
    #expect(!register.isEmpty)
  }

  private func permutations(of items: [Int]) -> [[Int]] {
    guard let first = items.first else { return [[]] }
    return permutations(of: Array(items.dropFirst())).flatMap { rest in
      (0...rest.count).map { position in
        var order = rest
        order.insert(first, at: position)
        return order
      }
    }
  }
}
