import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCRDTs
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The chunked id index against a plain map from counter to leaf, on seeded random
/// assignments: new ranges appended or placed in gaps, and ranges moved to other leaves
/// the way leaf splits move them, enough to split and empty chunks many times.
@Suite struct ReplicaIndexTests {
  /// The entries the model implies: maximal ranges of consecutive counters in one leaf.
  static func entries(of model: [UInt64: Int]) -> [ReplicaIndex.Entry] {
    var result: [ReplicaIndex.Entry] = []
    for counter in model.keys.sorted() {
      let leaf = model[counter] ?? -1
      if let last = result.last, last.upper == counter, last.leaf == leaf {
        result[result.count - 1].upper = counter + 1
      } else {
        result.append(ReplicaIndex.Entry(lower: counter, upper: counter + 1, leaf: leaf))
      }
    }
    return result
  }

  static func check(_ index: ReplicaIndex, against model: [UInt64: Int], upTo limit: UInt64)
    throws
  {
    index._checkChunks()
    let expected = entries(of: model)
    try ensure(Array(index.entries) == expected, "entries")
    try ensure(index.last == expected.last, "last entry")
    for counter in 1...limit {
      try ensure(index.leaf(containing: counter) == model[counter], "leaf of \(counter)")
    }
    for lower in stride(from: UInt64(1), to: limit, by: 7) {
      let upper = lower + 5
      let missing = index.missing(lower, upper).flatMap { Array($0) }
      try ensure(missing == (lower..<upper).filter { model[$0] == nil }, "missing \(lower)")
      try ensure(
        index.isDisjoint(from: lower, upper) == (missing.count == 5), "disjoint from \(lower)")
    }
  }

  @Test func matchesAPlainMapThroughChunkSplitsAndJoins() throws {
    try forEachSeed(count: 10, base: 0x1DE7) { random in
      var index = ReplicaIndex()
      var model: [UInt64: Int] = [:]
      let limit: UInt64 = 3_000
      for step in 0..<2_500 {
        let lower = UInt64.random(in: 1...limit - 8, using: &random)
        let upper = lower + UInt64.random(in: 1...8, using: &random)
        let leaf = Int.random(in: 0..<4, using: &random)
        let present = (lower..<upper).filter { model[$0] != nil }
        if present.isEmpty {
          // A new range, in a gap or at the end.
          index.assign(lower, upper, to: leaf)
          for counter in lower..<upper { model[counter] = leaf }
        } else if let entry = index.entries.first(where: { $0.lower <= lower && lower < $0.upper })
        {
          // A range inside one entry moves to another leaf, as a leaf split moves a run.
          let end = Swift.min(upper, entry.upper)
          index.assign(lower, end, to: leaf)
          for counter in lower..<end { model[counter] = leaf }
        }
        if step % 250 == 0 { try Self.check(index, against: model, upTo: limit) }
      }
      try Self.check(index, against: model, upTo: limit)
    }
  }

  @Test func entriesGivenAtOnceAreChunked() throws {
    // Pairs of entries in one leaf, with a one-counter gap after each entry.
    let entries = (0..<1_000).map {
      ReplicaIndex.Entry(lower: UInt64($0 * 3 + 1), upper: UInt64($0 * 3 + 3), leaf: $0 / 2 % 5)
    }
    var index = ReplicaIndex(entries: entries)
    index._checkChunks()
    #expect(Array(index.entries) == entries)
    // Filling the gap between two entries of the same leaf joins all three.
    index.assign(3, 4, to: 0)
    index._checkChunks()
    #expect(index.leaf(containing: 3) == 0)
    #expect(Array(index.entries).count == entries.count - 1)
    #expect(index.entries.first { $0.lower == 1 }?.upper == 6)
    // Filling a gap in front of an entry of the same leaf joins the two.
    index.assign(6, 7, to: 1)
    index._checkChunks()
    #expect(Array(index.entries).count == entries.count - 1)
    #expect(index.entries.first { $0.lower == 6 }?.upper == 9)
    // Moving the middle of an entry to another leaf splits it in three.
    index.assign(7, 8, to: 4)
    index._checkChunks()
    #expect(Array(index.entries).count == entries.count + 1)
    #expect(index.leaf(containing: 6) == 1 && index.leaf(containing: 8) == 1)
    #expect(index.leaf(containing: 7) == 4)
  }
}
