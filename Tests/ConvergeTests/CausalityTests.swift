import Converge
import ConvergeTestSupport
import Testing

@Suite struct CounterRangesTests {
  @Test func matchesASetOracleUnderRandomInsertsUnionsAndDifferences() {
    let start = baseSeed(0xC0FFEE)
    for offset in 0..<UInt64(fuzzIterations(300)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      var ranges = [CounterRanges(), CounterRanges()]
      var oracle: [Set<UInt64>] = [[], []]
      for _ in 0..<40 {
        let side = Int.random(in: 0...1, using: &random)
        let lower = UInt64.random(in: 1...60, using: &random)
        let upper = lower + UInt64.random(in: 0...4, using: &random)
        ranges[side].insert(lower...upper)
        oracle[side].formUnion(lower...upper)
      }
      for side in 0...1 {
        #expect(Set(expand(ranges[side])) == oracle[side], "seed \(seed)")
        #expect(isCanonical(ranges[side]), "seed \(seed): \(ranges[side])")
      }
      let union = ranges[0].union(ranges[1])
      let difference = ranges[0].subtracting(ranges[1])
      #expect(Set(expand(union)) == oracle[0].union(oracle[1]), "seed \(seed)")
      #expect(Set(expand(difference)) == oracle[0].subtracting(oracle[1]), "seed \(seed)")
      #expect(isCanonical(union) && isCanonical(difference), "seed \(seed)")
      #expect(union == CounterRanges(ranges: expand(union).map { $0...$0 }), "seed \(seed)")
      #expect(union.isSuperset(of: ranges[0]) && union.isSuperset(of: ranges[1]))
      for probe in UInt64(0)...70 {
        #expect(ranges[0].contains(probe) == oracle[0].contains(probe), "seed \(seed)")
      }
      let prefix = (0...70).prefix { $0 == 0 || oracle[0].contains(UInt64($0)) }.last ?? 0
      #expect(ranges[0].contiguousPrefix == UInt64(prefix), "seed \(seed)")
    }
  }

  @Test func extremeCountersNeverTrap() {
    var ranges = CounterRanges(UInt64.max - 1...UInt64.max)
    ranges.insert(1...UInt64.max - 2)
    #expect(ranges.ranges == [1...UInt64.max])
    #expect(ranges.count == UInt64.max)
    #expect(CounterRanges(0...UInt64.max).count == UInt64.max)
    #expect(ranges.subtracting(CounterRanges(5...5)).ranges == [1...4, 6...UInt64.max])
  }

  private func expand(_ ranges: CounterRanges) -> [UInt64] {
    ranges.ranges.flatMap { Array($0) }
  }

  private func isCanonical(_ ranges: CounterRanges) -> Bool {
    zip(ranges.ranges, ranges.ranges.dropFirst()).allSatisfy { $0.upperBound + 1 < $1.lowerBound }
  }
}

@Suite struct CausalContextTests {
  @Test func outOfOrderDotsCompactWhenTheGapCloses() throws {
    let replica = ReplicaID(rawValue: 7)
    var context = CausalContext()
    context.insert(Dot(replica: replica, counter: 1))
    context.insert(Dot(replica: replica, counter: 3))
    #expect(context.versionVector[replica] == 1)
    #expect(context.hasGaps)
    context.insert(Dot(replica: replica, counter: 2))
    #expect(context.versionVector[replica] == 3)
    #expect(!context.hasGaps)
    #expect(context.counters(of: replica).ranges == [1...3])
    #expect(try #require(context.nextDot(for: replica)).counter == 4)
  }

  @Test func differenceIsWhatThePeerLacks() {
    let a = ReplicaID(rawValue: 1)
    let b = ReplicaID(rawValue: 2)
    var mine = CausalContext(VersionVector([a: 10, b: 4]))
    mine.insert(Dot(replica: b, counter: 9))
    let peer = CausalContext(VersionVector([a: 7, b: 4]))
    let missing = mine.subtracting(peer)
    #expect(missing.counters(of: a).ranges == [8...10])
    #expect(missing.counters(of: b).ranges == [9...9])
    #expect(peer.union(missing) == mine)
    #expect(mine.includes(peer) && !peer.includes(mine))
  }

  @Test func exhaustedCounterSpaceGivesNoDot() {
    let replica = ReplicaID(rawValue: 3)
    var context = CausalContext()
    context.insert(Dot(replica: replica, counter: .max))
    #expect(context.nextDot(for: replica) == nil)
  }
}

@Suite struct HybridLogicalClockTests {
  @Test func backwardWallClockNeverRepeatsATimestamp() {
    var clock = HybridLogicalClock(wallClock: .fixed(0))
    var previous = Timestamp.zero
    for wall: UInt64 in [5_000, 4_000, 4_000, 10, 9_000, 8_999, 0] {
      let next = clock.tick(wallMilliseconds: wall)
      #expect(next > previous)
      previous = next
    }
  }

  @Test func aWriteAfterSeeingARemoteOneIsLaterWhateverTheWallClockSays() {
    let hourMilliseconds: UInt64 = 3_600_000
    var behind = HybridLogicalClock(wallClock: .fixed(1_000_000_000))
    let remote = Timestamp(wallMilliseconds: 1_000_000_000 + hourMilliseconds)
    behind.observe(remote)
    #expect(behind.tick() > remote)
  }

  @Test func logicalCounterCarriesAndTheClockSaturatesWithoutTrapping() {
    var clock = HybridLogicalClock(wallClock: .fixed(0))
    clock.observe(Timestamp(wallMilliseconds: 5, logical: .max))
    #expect(clock.tick() == Timestamp(wallMilliseconds: 6, logical: 0))
    clock.observe(.max)
    #expect(clock.tick() == .max)
    #expect(
      Timestamp(wallMilliseconds: .max)
        == Timestamp(wallMilliseconds: Timestamp.maximumWallMilliseconds))
  }
}
