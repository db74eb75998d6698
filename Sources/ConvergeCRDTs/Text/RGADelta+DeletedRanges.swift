import ConvergeCore

extension RGADelta {
  /// The scalars a delta's own delete runs remove: per target replica, sorted and joined
  /// counter ranges. (A message does not write their content, and two deltas that differ
  /// only in it are equal.)
  package struct DeletedRanges {
    private var ranges: [ReplicaID: [Range<UInt64>]] = [:]

    /// Whether the delta deletes nothing.
    package var isEmpty: Bool { ranges.isEmpty }

    /// The removed counters of `replica`, sorted and joined.
    package func ranges(of replica: ReplicaID) -> [Range<UInt64>] { ranges[replica] ?? [] }

    package init(_ deletes: [RGADelta.Delete]) {
      var unsorted: [ReplicaID: [Range<UInt64>]] = [:]
      for delete in deletes where delete.isWellFormed {
        let target = delete.targetRange
        unsorted[target.replica, default: []].append(target.lower..<target.upper)
      }
      for (replica, list) in unsorted {
        var joined: [Range<UInt64>] = []
        for range in list.sorted(by: { $0.lowerBound < $1.lowerBound }) {
          if let last = joined.last, range.lowerBound <= last.upperBound {
            joined[joined.count - 1] =
              last.lowerBound..<Swift.max(last.upperBound, range.upperBound)
          } else {
            joined.append(range)
          }
        }
        ranges[replica] = joined
      }
    }

    /// `lower..<upper` of `replica` cut into pieces, each wholly removed or not, in
    /// order.
    package func pieces(replica: ReplicaID, _ lower: UInt64, _ upper: UInt64)
      -> [(range: Range<UInt64>, deleted: Bool)]
    {
      guard let list = ranges[replica], !list.isEmpty else { return [(lower..<upper, false)] }
      let low = list.partitioningIndex { $0.upperBound > lower }
      var result: [(range: Range<UInt64>, deleted: Bool)] = []
      var cursor = lower
      var position = low
      while cursor < upper {
        guard position < list.count, list[position].lowerBound < upper else {
          result.append((cursor..<upper, false))
          break
        }
        let target = list[position]
        if cursor < target.lowerBound { result.append((cursor..<target.lowerBound, false)) }
        let end = Swift.min(target.upperBound, upper)
        result.append((Swift.max(cursor, target.lowerBound)..<end, true))
        cursor = end
        position += 1
      }
      return result
    }
  }
}
