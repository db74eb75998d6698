/// A set of event counters stored as sorted, disjoint, non-adjacent closed ranges.
///
/// One replica's dots are contiguous when they arrive in order, so the common case is a
/// single range `1...n`, and the set costs one pair of integers however many events it
/// holds. Out-of-order arrivals leave gaps; filling a gap joins its neighbours, so the set
/// is always in its compact form and two equal sets have equal storage.
///
/// - Complexity: `contains` is O(log g) for g gaps; inserting at the end (the common
///   case) is O(1); other inserts and set operations are O(g).
public struct CounterRanges: Hashable, Sendable {
  /// Sorted by lower bound; no two ranges overlap or touch.
  public private(set) var ranges: [ClosedRange<UInt64>]

  /// The empty set.
  public init() {
    ranges = []
  }

  /// The set holding every counter in `range`.
  public init(_ range: ClosedRange<UInt64>) {
    ranges = [range]
  }

  /// Builds the set from ranges in any order, overlapping or not.
  public init<S: Sequence>(ranges: S) where S.Element == ClosedRange<UInt64> {
    self.ranges = []
    for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
      insert(range)
    }
  }

  /// Whether the set holds no counter.
  public var isEmpty: Bool { ranges.isEmpty }

  /// The largest counter in the set, or 0 when it is empty.
  public var maximum: UInt64 { ranges.last?.upperBound ?? 0 }

  /// The largest `n` such that every counter in `1...n` is in the set (0 if none is).
  public var contiguousPrefix: UInt64 {
    guard let first = ranges.first, first.lowerBound <= 1 else { return 0 }
    return first.upperBound
  }

  /// How many counters the set holds, saturating at `UInt64.max`.
  public var count: UInt64 {
    var total: UInt64 = 0
    for range in ranges {
      let (width, overflow) = (range.upperBound - range.lowerBound).addingReportingOverflow(1)
      if overflow { return .max }
      let (sum, sumOverflow) = total.addingReportingOverflow(width)
      if sumOverflow { return .max }
      total = sum
    }
    return total
  }

  /// Whether `counter` is in the set.
  @inlinable public func contains(_ counter: UInt64) -> Bool {
    guard let index = indexOfRange(atOrBefore: counter) else { return false }
    return ranges[index].upperBound >= counter
  }

  /// Whether the set holds exactly the counters of `range`.
  package func isExactly(_ range: ClosedRange<UInt64>) -> Bool {
    ranges.count == 1 && ranges[0] == range
  }

  /// Whether every counter in `range` is in the set.
  public func contains(_ range: ClosedRange<UInt64>) -> Bool {
    guard let index = indexOfRange(atOrBefore: range.lowerBound) else { return false }
    return ranges[index].upperBound >= range.upperBound
  }

  /// Whether every counter of `other` is in this set.
  public func isSuperset(of other: CounterRanges) -> Bool {
    other.ranges.allSatisfy { contains($0) }
  }

  /// Adds one counter.
  public mutating func insert(_ counter: UInt64) {
    insert(counter...counter)
  }

  /// Adds every counter in `range`, joining it with the ranges it overlaps or touches.
  public mutating func insert(_ range: ClosedRange<UInt64>) {
    // Fast path: events arriving in order extend the last range.
    if let last = ranges.last {
      if range.lowerBound > last.upperBound {
        if last.upperBound < .max, last.upperBound + 1 == range.lowerBound {
          ranges[ranges.count - 1] = last.lowerBound...range.upperBound
        } else {
          ranges.append(range)
        }
        return
      }
    } else {
      ranges.append(range)
      return
    }
    // General case: find the first range that ends at or after `range.lowerBound - 1`
    // and the last one that starts at or before `range.upperBound + 1`.
    var lower = range.lowerBound
    var upper = range.upperBound
    let start = lower
    let first = ranges.partitioningIndex {
      $0.upperBound >= start || $0.upperBound + 1 == start
    }
    var end = first
    while end < ranges.count {
      let candidate = ranges[end]
      let touches = upper == .max || candidate.lowerBound <= upper + 1
      guard touches else { break }
      lower = Swift.min(lower, candidate.lowerBound)
      upper = Swift.max(upper, candidate.upperBound)
      end += 1
    }
    ranges.replaceSubrange(first..<end, with: CollectionOfOne(lower...upper))
  }

  /// Adds every counter of `other`.
  public mutating func formUnion(_ other: CounterRanges) {
    if other.ranges.isEmpty { return }
    if ranges.isEmpty {
      ranges = other.ranges
      return
    }
    var merged: [ClosedRange<UInt64>] = []
    merged.reserveCapacity(ranges.count + other.ranges.count)
    var left = ranges.makeIterator()
    var right = other.ranges.makeIterator()
    var nextLeft = left.next()
    var nextRight = right.next()
    while true {
      let next: ClosedRange<UInt64>
      switch (nextLeft, nextRight) {
      case (let l?, let r?):
        if l.lowerBound <= r.lowerBound {
          next = l
          nextLeft = left.next()
        } else {
          next = r
          nextRight = right.next()
        }
      case (let l?, nil):
        next = l
        nextLeft = left.next()
      case (nil, let r?):
        next = r
        nextRight = right.next()
      case (nil, nil):
        ranges = merged
        return
      }
      if let last = merged.last, last.upperBound == .max || next.lowerBound <= last.upperBound + 1 {
        merged[merged.count - 1] = last.lowerBound...Swift.max(last.upperBound, next.upperBound)
      } else {
        merged.append(next)
      }
    }
  }

  /// The union of the two sets.
  public func union(_ other: CounterRanges) -> CounterRanges {
    var result = self
    result.formUnion(other)
    return result
  }

  /// The counters of this set that are not in `other`.
  public func subtracting(_ other: CounterRanges) -> CounterRanges {
    if other.ranges.isEmpty || ranges.isEmpty { return self }
    var result = CounterRanges()
    var cut = 0
    for range in ranges {
      var lower = range.lowerBound
      let upper = range.upperBound
      var exhausted = false
      // Skip the ranges of `other` that end before this one starts.
      while cut < other.ranges.count, other.ranges[cut].upperBound < lower { cut += 1 }
      var scan = cut
      while scan < other.ranges.count, other.ranges[scan].lowerBound <= upper {
        let hole = other.ranges[scan]
        if hole.lowerBound > lower { result.ranges.append(lower...(hole.lowerBound - 1)) }
        if hole.upperBound >= upper {
          exhausted = true
          break
        }
        lower = hole.upperBound + 1
        scan += 1
      }
      if !exhausted { result.ranges.append(lower...upper) }
    }
    return result
  }

  /// The counters in both sets.
  public func intersection(_ other: CounterRanges) -> CounterRanges {
    subtracting(subtracting(other))
  }

  /// The index of the last range whose lower bound is at most `counter`.
  @inlinable func indexOfRange(atOrBefore counter: UInt64) -> Int? {
    let after = ranges.partitioningIndex { $0.lowerBound > counter }
    return after == 0 ? nil : after - 1
  }
}

extension CounterRanges: CustomStringConvertible {
  /// The ranges for debugging, e.g. `[1-5,8,10-12]`.
  public var description: String {
    "["
      + ranges.map {
        $0.lowerBound == $0.upperBound ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)"
      }
      .joined(separator: ",") + "]"
  }
}
