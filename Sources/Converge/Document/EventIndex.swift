/// Which entities each replica's events touched, so that ``Document/delta(since:)``
/// visits the entities a peer may lack instead of every entity.
///
/// Per replica, the keys of the entities it touched, sorted by counter: an entity
/// appears with a counter at least its presence's entry for that replica (the larger of
/// `added` and `removed`, see ``Presence/mayHaveEvents(unknownTo:)``). So the entities a
/// peer with gap-free prefix `prefix` may lack are among those listed above `prefix`.
/// An entity may be listed more than once, with older counters too: harmless, since its
/// newest entry is the larger. Typing in one entity updates its entry in place; the
/// lists are rebuilt from the entities when stale entries outnumber them.
///
/// Derived from the entities: not encoded, not compared.
struct EventIndex: Sendable {
  /// One replica's entries, sorted by counter (two arrays, so the search reads only
  /// counters).
  struct Log: Sendable {
    var counters: [UInt64] = []
    var keys: [EntityKey] = []

    /// Notes that `key` has an event of this replica at `counter`.
    mutating func note(_ key: EntityKey, counter: UInt64) -> Int {
      guard let last = counters.last else {
        counters.append(counter)
        keys.append(key)
        return 1
      }
      if keys.last == key {
        // Typing in one entity: its entry moves up in place, and stays the last.
        if counter > last { counters[counters.count - 1] = counter }
        return 0
      }
      if counter >= last {
        counters.append(counter)
        keys.append(key)
      } else {
        // An older event arriving late (deltas out of order): rare, and O(n).
        let index = counters.partitioningIndex { $0 > counter }
        counters.insert(counter, at: index)
        keys.insert(key, at: index)
      }
      return 1
    }
  }

  private(set) var logs: [ReplicaID: Log] = [:]
  /// Entries in all logs.
  private(set) var entryCount = 0

  init() {}

  /// The index of `entities`, one entry per entity and replica.
  init(_ entities: EntityTable) {
    var entries: [ReplicaID: [(counter: UInt64, key: EntityKey)]] = [:]
    for (key, record) in entities {
      record.presence.forEachLatest { replica, counter in
        entries[replica, default: []].append((counter, key))
      }
    }
    for (replica, list) in entries {
      let sorted = list.sorted { $0.counter < $1.counter }
      logs[replica] = Log(counters: sorted.map(\.counter), keys: sorted.map(\.key))
      entryCount += sorted.count
    }
  }

  /// Notes that `key`'s presence now has `counter` for `replica`.
  mutating func note(_ key: EntityKey, replica: ReplicaID, counter: UInt64) {
    entryCount += logs[replica, default: Log()].note(key, counter: counter)
  }

  /// Notes every entry of `presence` for `key`.
  mutating func note(_ key: EntityKey, presence: Presence) {
    presence.forEachLatest { replica, counter in
      note(key, replica: replica, counter: counter)
    }
  }

  /// Whether stale entries outnumber the entities' own, so a rebuild pays for itself.
  func needsRebuild(entityCount: Int) -> Bool {
    entryCount > 4 * entityCount + 64
  }

  /// The keys of entities with an event of some replica above `prefix`, or `nil` if
  /// that would list more than `limit` entries (scanning every entity is then cheaper).
  ///
  /// - Complexity: O(r log n + k) for r replicas and k entries listed.
  func keys(withEventsAbove prefix: VersionVector, limit: Int) -> Set<EntityKey>? {
    var found = Set<EntityKey>()
    var listed = 0
    for (replica, log) in logs {
      let floor = prefix[replica]
      let start = log.counters.partitioningIndex { $0 > floor }
      listed += log.counters.count - start
      if listed > limit { return nil }
      found.formUnion(log.keys[start...])
    }
    return found
  }

  /// Traps unless every entity's presence entries are covered: for each entity and
  /// replica, an entry with a counter at least the presence's.
  func checkCovers(_ entities: EntityTable) {
    var highest: [ReplicaID: [EntityKey: UInt64]] = [:]
    for (replica, log) in logs {
      precondition(zip(log.counters, log.counters.dropFirst()).allSatisfy { $0 <= $1 })
      for (counter, key) in zip(log.counters, log.keys) {
        highest[replica, default: [:]][key] = Swift.max(highest[replica]?[key] ?? 0, counter)
      }
    }
    for (key, record) in entities {
      record.presence.forEachLatest { replica, counter in
        precondition(
          (highest[replica]?[key] ?? 0) >= counter,
          "\(key): the event index lacks \(replica):\(counter)")
      }
    }
  }
}
