extension RGA {
  /// Consecutive item ids: `count` items of one replica from `first`.
  struct ItemSpan: Sendable, Equatable {
    var first: Dot
    var count: Int
  }

  /// The visible scalars in `range` (clamped to the text) and the ids of their items, in
  /// document order. Items join one span only when their ids are consecutive and nothing
  /// stands between them, not even a tombstone, so that each span stays one place.
  ///
  /// - Complexity: O(log n + k + r) for k scalars in r runs.
  func visibleItems(in range: Range<Int>) -> (scalars: [Unicode.Scalar], spans: [ItemSpan]) {
    let lower = Swift.max(0, Swift.min(range.lowerBound, count))
    var remaining = Swift.max(lower, Swift.min(range.upperBound, count)) - lower
    guard remaining > 0 else { return ([], []) }
    var scalars: [Unicode.Scalar] = []
    scalars.reserveCapacity(remaining)
    var spans: [ItemSpan] = []
    let start = locateVisible(lower)
    var previous = item(before: start)
    var leaf: Int? = start.leaf
    var runIndex = start.run
    var offset = start.offset
    while remaining > 0, let current = leaf {
      let runs = leaves[current].runs
      while runIndex < runs.count, remaining > 0 {
        let run = runs[runIndex]
        runIndex += 1
        guard !run.deleted else {
          previous = run.lastID
          offset = 0
          continue
        }
        let taken = Swift.min(run.length - offset, remaining)
        let first = Dot(replica: run.replica, counter: run.counter + UInt64(offset))
        scalars.append(
          contentsOf: content[run.contentStart + offset..<run.contentStart + offset + taken])
        if let last = spans.last, last.first.replica == first.replica,
          last.first.counter + UInt64(last.count) == first.counter,
          previous?.replica == first.replica, previous?.counter == first.counter &- 1
        {
          spans[spans.count - 1].count += taken
        } else {
          spans.append(ItemSpan(first: first, count: taken))
        }
        previous = Dot(replica: first.replica, counter: first.counter + UInt64(taken - 1))
        remaining -= taken
        offset = 0
      }
      leaf = leafOrder.leaf(after: current)
      runIndex = 0
    }
    return (scalars, spans)
  }

  /// The item just before `location` in document order, tombstones included; `nil` at
  /// the start of the text.
  func item(before location: ItemLocation) -> Dot? {
    let runs = leaves[location.leaf].runs
    if location.offset > 0 {
      let run = runs[location.run]
      return Dot(replica: run.replica, counter: run.counter + UInt64(location.offset - 1))
    }
    if location.run > 0 { return runs[location.run - 1].lastID }
    var leaf = leafOrder.leaf(before: location.leaf)
    while let current = leaf {
      if let last = leaves[current].runs.last { return last.lastID }
      leaf = leafOrder.leaf(before: current)
    }
    return nil
  }

  /// The visible scalar ranges that the items `span` covers hold now, in ascending
  /// order: empty for items deleted since, or not integrated here.
  ///
  /// - Complexity: O(p (log n + r)) for p pieces the span is split into and r runs in a
  ///   leaf.
  func visibleRanges(of span: ItemSpan) -> [Range<Int>] {
    var ranges: [Range<Int>] = []
    var counter = span.first.counter
    let (end, overflow) = counter.addingReportingOverflow(UInt64(Swift.max(0, span.count)))
    guard !overflow else { return [] }
    while counter < end {
      guard let found = locate(Dot(replica: span.first.replica, counter: counter)) else {
        counter += 1
        continue
      }
      let run = leaves[found.leaf].runs[found.run]
      let taken = Swift.min(UInt64(run.length - found.offset), end - counter)
      counter += taken
      guard !run.deleted else { continue }
      let start = leafOrder.prefix(of: found.leaf).visible + found.scalarsBefore + found.offset
      let piece = start..<start + Int(taken)
      if let last = ranges.last, last.upperBound == piece.lowerBound {
        ranges[ranges.count - 1] = last.lowerBound..<piece.upperBound
      } else {
        ranges.append(piece)
      }
    }
    return ranges.sorted { $0.lowerBound < $1.lowerBound }
  }

  /// Whether the item `item` is integrated here, visible or deleted.
  func contains(_ item: Dot) -> Bool { locate(item) != nil }

  /// Inserts `scalars` right after the item `item`, visible or deleted (at the start for
  /// `nil`), with ids from `firstDot`: where deleted text stood, so that text deleted in
  /// pieces comes back in its order. Returns the delta and the visible position of the
  /// first inserted scalar; `nil`, changing nothing, if `item` is not here or the insert is
  /// refused as ``insert(_:at:firstDot:)`` refuses one.
  ///
  /// - Complexity: O(log n + k) for k scalars.
  mutating func insert<S: Collection>(
    _ scalars: S, after item: Dot?, firstDot: Dot
  ) -> (delta: RGADelta, position: Int)? where S.Element == Unicode.Scalar {
    let length = scalars.count
    guard length > 0, let lamport = nextLamport(for: length), isFresh(firstDot, length: length)
    else { return nil }
    var leaf = leafOrder.first
    var slot = 0
    var position = 0
    if let item {
      guard let found = locate(item) else { return nil }
      let run = leaves[found.leaf].runs[found.run]
      position =
        leafOrder.prefix(of: found.leaf).visible + found.scalarsBefore
        + (run.deleted ? 0 : found.offset + 1)
      if found.offset + 1 < run.length {
        splitRun(leaf: found.leaf, run: found.run, at: found.offset + 1)
      }
      leaf = found.leaf
      slot = found.run + 1
    }
    let start = content.count
    content.append(contentsOf: scalars)
    let rightOrigin = placeLocalRun(
      firstDot: firstDot, lamport: lamport, contentStart: start, length: length, origin: item,
      leaf: leaf, slot: slot)
    var delta = RGADelta()
    delta.inserts = [
      RGADelta.Insert(
        id: firstDot, lamport: lamport, origin: item, rightOrigin: rightOrigin,
        scalars: Array(content[start..<start + length]))
    ]
    return (delta, position)
  }
}
