import ConvergeCore

extension RGA {
  /// Consecutive item ids: `count` items of one replica from `first`.
  package struct ItemSpan: Sendable, Equatable {
    package var first: Dot
    package var count: Int

    package init(first: Dot, count: Int) {
      self.first = first
      self.count = count
    }
  }

  /// The scalars of the items `span`, all deleted and all holding their content; `nil`
  /// if one of them is visible, not here, or arrived without its content.
  ///
  /// - Complexity: O(p (log n + r) + k) for p pieces, r runs in a leaf and k scalars.
  package func deletedScalars(of span: ItemSpan) -> [Unicode.Scalar]? {
    var scalars: [Unicode.Scalar] = []
    scalars.reserveCapacity(Swift.max(0, span.count))
    var counter = span.first.counter
    let (end, overflow) = counter.addingReportingOverflow(UInt64(Swift.max(0, span.count)))
    guard !overflow else { return nil }
    while counter < end {
      guard let found = locate(Dot(replica: span.first.replica, counter: counter)) else {
        return nil
      }
      let run = leaves[found.leaf].runs[found.run]
      guard run.deleted, run.hasContent else { return nil }
      let taken = Swift.min(run.length - found.offset, Int(end - counter))
      scalars += self.scalars(of: run, from: found.offset, count: taken)
      counter += UInt64(taken)
    }
    return scalars
  }

  /// The visible scalar ranges that the items `span` covers hold now, in the order of
  /// their ids (the caller orders them by position): empty for items deleted since, or not
  /// integrated here.
  ///
  /// - Complexity: O(p (log n + r)) for p pieces the span is split into and r runs in a
  ///   leaf.
  package func visibleRanges(of span: ItemSpan) -> [Range<Int>] {
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
    return ranges
  }

  /// Whether each of the `count` items from `first` is integrated here, and deleted
  /// too when `deleted` is set: whether a run or a delete of them would change nothing
  /// (see ``Document/authorshipViolation(in:grantedTo:)``).
  ///
  /// - Complexity: O(p (log n + r)) for p pieces the items are split into and r runs in
  ///   a leaf.
  package func holdsItems(from first: Dot, count: UInt64, deleted mustBeDeleted: Bool) -> Bool {
    var counter = first.counter
    let (end, overflow) = counter.addingReportingOverflow(count)
    guard !overflow, count > 0 else { return false }
    while counter < end {
      guard let found = locate(Dot(replica: first.replica, counter: counter)) else {
        return false
      }
      let run = leaves[found.leaf].runs[found.run]
      if mustBeDeleted, !run.deleted { return false }
      // `found.offset` is below the run's length, so this takes at least one item.
      counter += Swift.min(UInt64(run.length - found.offset), end - counter)
    }
    return true
  }

  /// Whether the item `item` is integrated here, visible or deleted.
  package func contains(_ item: Dot) -> Bool { locate(item) != nil }

  /// Inserts `scalars` right after the item `item`, visible or deleted (at the start for
  /// `nil`), with ids from `firstDot`: where deleted text stood, so that text deleted in
  /// pieces comes back in its order. Returns the delta and the visible position of the
  /// first inserted scalar; `nil`, changing nothing, if `item` is not here or the insert is
  /// refused as ``insert(_:at:firstDot:)`` refuses one.
  ///
  /// - Complexity: O(log n + k) for k scalars.
  package mutating func insert<S: Collection>(
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
    let (start, utf16, utf8) = appendContent(scalars)
    let rightOrigin = placeLocalRun(
      firstDot: firstDot, lamport: lamport, contentStart: start, length: length, utf16: utf16,
      utf8: utf8, origin: item, leaf: leaf, slot: slot)
    var delta = RGADelta()
    delta.inserts = [
      RGADelta.Insert(
        id: firstDot, lamport: lamport, origin: item, rightOrigin: rightOrigin,
        scalars: Array(scalars))
    ]
    return (delta, position)
  }
}
