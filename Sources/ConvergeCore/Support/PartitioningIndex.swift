extension RandomAccessCollection {
  /// The index of the first element for which `belongsInSecondPartition` is true, in a
  /// collection partitioned so that every such element follows every other (or
  /// `endIndex`): a binary search.
  ///
  /// - Complexity: O(log n) calls of the predicate.
  @inlinable package func partitioningIndex(
    where belongsInSecondPartition: (Element) throws -> Bool
  ) rethrows
    -> Index
  {
    var low = startIndex
    var count = self.count
    while count > 0 {
      let half = count / 2
      let middle = index(low, offsetBy: half)
      if try belongsInSecondPartition(self[middle]) {
        count = half
      } else {
        low = index(after: middle)
        count -= half + 1
      }
    }
    return low
  }
}
