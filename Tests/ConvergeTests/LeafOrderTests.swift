import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCRDTs
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The two-level leaf order against a plain array of (leaf, visible, UTF-16) in document
/// order, on seeded random leaf insertions and count changes: enough insertions that
/// blocks split many times.
@Suite struct LeafOrderTests {
  /// The model: leaf ids and their counts in document order.
  struct Model {
    var leaves: [(id: Int, visible: Int, utf16: Int)] = [(0, 0, 0)]

    func position(of leaf: Int) -> Int { leaves.firstIndex { $0.id == leaf } ?? -1 }

    func prefix(of leaf: Int) -> (Int, Int) {
      leaves[..<position(of: leaf)].reduce((0, 0)) { ($0.0 + $1.visible, $0.1 + $1.utf16) }
    }

    /// The first leaf whose span holds `offset`, skipping empty leaves.
    func leaf(containing offset: Int, utf16: Bool) -> (Int, Int) {
      var rest = offset
      for leaf in leaves {
        let count = utf16 ? leaf.utf16 : leaf.visible
        if rest < count { return (leaf.id, rest) }
        rest -= count
      }
      return (-1, rest)
    }
  }

  static func check(_ order: LeafOrder, against model: Model) throws {
    order._checkInvariants { leaf in
      let entry = model.leaves[model.position(of: leaf)]
      return (entry.visible, entry.utf16)
    }
    try ensure(Array(order.documentOrder) == model.leaves.map(\.id), "document order")
    try ensure(order.first == model.leaves[0].id, "first leaf")
    for (position, leaf) in model.leaves.enumerated() {
      let next = position + 1 < model.leaves.count ? model.leaves[position + 1].id : nil
      try ensure(order.leaf(after: leaf.id) == next, "leaf after \(leaf.id)")
      try ensure(order.prefix(of: leaf.id) == model.prefix(of: leaf.id), "prefix of \(leaf.id)")
    }
    let totalVisible = model.leaves.reduce(0) { $0 + $1.visible }
    let totalUTF16 = model.leaves.reduce(0) { $0 + $1.utf16 }
    for offset in stride(from: 0, to: totalVisible, by: Swift.max(1, totalVisible / 50)) {
      let found = order.leaf(containingVisible: offset)
      try ensure(
        found == model.leaf(containing: offset, utf16: false), "leaf at visible \(offset)")
    }
    for offset in stride(from: 0, to: totalUTF16, by: Swift.max(1, totalUTF16 / 50)) {
      let found = order.leaf(containingUTF16: offset)
      try ensure(found == model.leaf(containing: offset, utf16: true), "leaf at UTF-16 \(offset)")
    }
  }

  @Test func matchesAPlainArrayThroughManyBlockSplits() throws {
    try forEachSeed(count: 12, base: 0x1EAF) { random in
      var order = LeafOrder()
      var model = Model()
      // The leaf of the latest seek, which local edits then change.
      var sought: Int?
      for step in 0..<700 {
        let total = model.leaves.reduce(0) { $0 + $1.visible }
        if total > 0, Int.random(in: 0..<4, using: &random) == 0 {
          // A local edit's seek: the leaf at an offset becomes the cursor.
          let offset = Int.random(in: 0..<total, using: &random)
          let found = order.seek(visible: offset)
          try ensure(found == model.leaf(containing: offset, utf16: false), "seek \(offset)")
          sought = found.leaf
          continue
        }
        // Half the changes go to the sought leaf, as typing there does.
        let leaf =
          sought.flatMap { Bool.random(using: &random) ? $0 : nil }
          ?? model.leaves.randomElement(using: &random)?.id ?? 0
        let position = model.position(of: leaf)
        if Bool.random(using: &random) {
          // Sometimes many insertions in one place, as typing at one spot does.
          let visible = Int.random(in: 0...5, using: &random)
          let utf16 = visible + Int.random(in: 0...2, using: &random)
          let id = order.insertLeaf(after: leaf, visible: visible, utf16: utf16)
          try ensure(id == model.leaves.count, "fresh leaf id")
          model.leaves.insert((id, visible, utf16), at: position + 1)
        } else {
          let visible = Int.random(in: -model.leaves[position].visible...3, using: &random)
          let utf16 = Int.random(in: -model.leaves[position].utf16...3, using: &random)
          order.add(visible: visible, utf16: utf16, to: leaf)
          model.leaves[position].visible += visible
          model.leaves[position].utf16 += utf16
        }
        if step % 97 == 0 { try Self.check(order, against: model) }
      }
      try Self.check(order, against: model)
    }
  }

  @Test func bulkBuiltOrderMatchesItsCounts() throws {
    try forEachSeed(count: 8, base: 0xB01C) { random in
      let count = Int.random(in: 1...400, using: &random)
      let visible = (0..<count).map { _ in Int.random(in: 0...9, using: &random) }
      let utf16 = visible.map { $0 + Int.random(in: 0...1, using: &random) }
      var order = LeafOrder(visible: visible, utf16: utf16)
      var model = Model(leaves: (0..<count).map { ($0, visible[$0], utf16[$0]) })
      try Self.check(order, against: model)
      let leaf = Int.random(in: 0..<count, using: &random)
      for _ in 0..<100 {
        let id = order.insertLeaf(after: leaf, visible: 1, utf16: 2)
        model.leaves.insert((id, 1, 2), at: model.position(of: leaf) + 1)
      }
      try Self.check(order, against: model)
    }
  }

  /// The paired Fenwick tree over the blocks against plain sums, on seeded random counts
  /// and updates (zero counts included, which a search must skip).
  @Test func countTreeMatchesPlainSums() throws {
    try forEachSeed(count: 40, base: 0xC0A7) { random in
      let size = Int.random(in: 0..<40, using: &random)
      var visible = (0..<size).map { _ in Int.random(in: 0..<4, using: &random) * 5 }
      var utf16 = visible.map { $0 + Int.random(in: 0..<3, using: &random) }
      var tree = CountTree(visible: visible, utf16: utf16)
      for _ in 0..<20 {
        if size > 0 {
          let rank = Int.random(in: 0..<size, using: &random)
          let addedVisible = Int.random(in: -visible[rank]...10, using: &random)
          let addedUTF16 = Int.random(in: -utf16[rank]...10, using: &random)
          visible[rank] += addedVisible
          utf16[rank] += addedUTF16
          tree.add(visible: addedVisible, utf16: addedUTF16, at: rank)
        }
        try ensure(tree.count == size, "count")
        for rank in 0...size {
          let expected = (visible[..<rank].reduce(0, +), utf16[..<rank].reduce(0, +))
          try ensure(tree.prefix(rank) == expected, "prefix of \(rank)")
        }
        for (counts, isUTF16) in [(visible, false), (utf16, true)] {
          let total = counts.reduce(0, +)
          for offset in 0...total {
            // The last rank whose prefix is at most `offset`.
            var rank = 0
            while rank < size, counts[..<(rank + 1)].reduce(0, +) <= offset { rank += 1 }
            let expected = (rank, offset - counts[..<rank].reduce(0, +))
            try ensure(
              tree.search(offset, utf16: isUTF16) == expected, "search \(offset) \(isUTF16)")
          }
          // The same search counting more at one rank than the tree holds, as the leaf
          // order's cursor asks.
          if size > 0 {
            let rank = Int.random(in: 0..<size, using: &random)
            let extra = Int.random(in: -counts[rank]...7, using: &random)
            var adjusted = counts
            adjusted[rank] += extra
            let offset = Int.random(in: 0...adjusted.reduce(0, +), using: &random)
            var found = 0
            while found < size, adjusted[..<(found + 1)].reduce(0, +) <= offset { found += 1 }
            let expected = (found, offset - adjusted[..<found].reduce(0, +))
            try ensure(
              tree.search(offset, utf16: isUTF16, adding: extra, atRank: rank) == expected,
              "search \(offset) adding \(extra) at \(rank)")
          }
        }
      }
    }
  }
}
