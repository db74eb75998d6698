/// Values keyed by replica, stored as an array sorted by replica: the storage of
/// ``VersionVector`` and ``CausalContext``.
///
/// A document is touched by a handful of replicas, so a sorted array beats a hash table
/// here: building a one-entry vector for a delta costs one small allocation instead of a
/// seeded hash table, lookups compare 64-bit ids instead of hashing them, and the entries
/// come out already sorted for canonical encodings. Equal contents have equal storage.
///
/// - Complexity: lookup O(log r) for r replicas; adding a replica O(r).
@usableFromInline struct ReplicaEntries<Value: Hashable & Sendable>: Hashable, Sendable {
  /// Sorted by replica, one entry per replica.
  @usableFromInline private(set) var storage: [(replica: ReplicaID, value: Value)] = []

  init() {}

  /// The entries of `pairs`, which must name each replica once.
  init<S: Sequence>(uniquePairs pairs: S) where S.Element == (ReplicaID, Value) {
    storage = pairs.map { (replica: $0.0, value: $0.1) }
    storage.sort { $0.replica < $1.replica }
  }

  /// The entries of `sorted`: ascending by replica, each replica once (what a decoder
  /// reads from a replica table's strictly increasing indexes).
  init(sorted: [(replica: ReplicaID, value: Value)]) {
    assert(zip(sorted, sorted.dropFirst()).allSatisfy { $0.replica < $1.replica })
    storage = sorted
  }

  package var count: Int { storage.count }
  package var isEmpty: Bool { storage.isEmpty }

  /// The position of `replica`, or where it would be inserted.
  @inlinable func position(of replica: ReplicaID) -> (index: Int, found: Bool) {
    let index = storage.partitioningIndex { $0.replica >= replica }
    return (index, index < storage.count && storage[index].replica == replica)
  }

  subscript(replica: ReplicaID) -> Value? {
    get {
      let (index, found) = position(of: replica)
      return found ? storage[index].value : nil
    }
    set {
      let (index, found) = position(of: replica)
      switch (found, newValue) {
      case (true, let value?): storage[index].value = value
      case (true, nil): storage.remove(at: index)
      case (false, let value?): storage.insert((replica, value), at: index)
      case (false, nil): break
      }
    }
  }

  /// Changes the value of `replica` in place, adding `initial` first if it has none.
  package mutating func update<Result>(
    _ replica: ReplicaID, default initial: @autoclosure () -> Value,
    _ body: (inout Value) -> Result
  ) -> Result {
    let (index, found) = position(of: replica)
    if !found { storage.insert((replica, initial()), at: index) }
    return body(&storage[index].value)
  }

  /// Adds the entries of `other`, combining the two values of a replica both hold.
  ///
  /// - Complexity: O(r + s) for r and s entries, O(s log r) when `other` is tiny.
  mutating func merge(_ other: Self, combine: (Value, Value) -> Value) {
    if other.storage.count <= 2 {
      for entry in other.storage {
        let (index, found) = position(of: entry.replica)
        if found {
          storage[index].value = combine(storage[index].value, entry.value)
        } else {
          storage.insert(entry, at: index)
        }
      }
      return
    }
    if storage.isEmpty {
      storage = other.storage
      return
    }
    var merged: [(replica: ReplicaID, value: Value)] = []
    merged.reserveCapacity(storage.count + other.storage.count)
    var left = 0
    var right = 0
    while left < storage.count || right < other.storage.count {
      if right == other.storage.count
        || (left < storage.count && storage[left].replica < other.storage[right].replica)
      {
        merged.append(storage[left])
        left += 1
      } else if left == storage.count || other.storage[right].replica < storage[left].replica {
        merged.append(other.storage[right])
        right += 1
      } else {
        merged.append(
          (storage[left].replica, combine(storage[left].value, other.storage[right].value)))
        left += 1
        right += 1
      }
    }
    storage = merged
  }

  @usableFromInline static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.storage.elementsEqual(rhs.storage) { $0.replica == $1.replica && $0.value == $1.value }
  }

  @usableFromInline func hash(into hasher: inout Hasher) {
    hasher.combine(storage.count)
    for entry in storage {
      hasher.combine(entry.replica)
      hasher.combine(entry.value)
    }
  }
}
