extension RGA {
  /// Consecutive item ids: `count` items of one replica from `first`.
  struct ItemSpan: Sendable, Equatable {
    var first: Dot
    var count: Int
  }

  /// The visible scalars in `range` (clamped to the text) and the ids of their items, in
  /// document order, consecutive ids joined into one span.
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
    var leaf: Int? = start.leaf
    var runIndex = start.run
    var offset = start.offset
    while remaining > 0, let current = leaf {
      let runs = leaves[current].runs
      while runIndex < runs.count, remaining > 0 {
        let run = runs[runIndex]
        runIndex += 1
        guard !run.deleted else { continue }
        let taken = Swift.min(run.length - offset, remaining)
        let first = Dot(replica: run.replica, counter: run.counter + UInt64(offset))
        scalars.append(
          contentsOf: content[run.contentStart + offset..<run.contentStart + offset + taken])
        if let last = spans.last, last.first.replica == first.replica,
          last.first.counter + UInt64(last.count) == first.counter
        {
          spans[spans.count - 1].count += taken
        } else {
          spans.append(ItemSpan(first: first, count: taken))
        }
        remaining -= taken
        offset = 0
      }
      leaf = leafOrder.leaf(after: current)
      runIndex = 0
    }
    return (scalars, spans)
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
}
