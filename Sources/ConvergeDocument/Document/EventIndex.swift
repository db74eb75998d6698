/// Which entities each replica's events touched, so that ``Document/delta(since:)``
/// visits the entities a peer may lack instead of every entity.
///
/// Per replica, the entities it touched (their positions in the document's
/// ``EntityTable``, four bytes each), sorted by counter: an entity
/// appears with a counter at least its presence's entry for that replica (the larger of
/// `added` and `removed`, see ``Presence/mayHaveEvents(unknownTo:)``). So the entities a
/// peer with gap-free prefix `prefix` may lack are among those listed above `prefix`.
/// An entity may be listed more than once, with older counters too: harmless, since its
/// newest entry is the larger. Typing in one entity updates its entry in place; the
/// lists are rebuilt from the entities when stale entries outnumber them.
///
/// Derived from the entities: not encoded, not compared.
package struct EventIndex: Sendable {
  /// One replica's entries, sorted by counter (two arrays, so the search reads only
  /// counters).
  struct Log: Sendable {
    var counters: [UInt64] = []
    /// The entities' positions in the document's table.
    var entities: [UInt32] = []

    /// Notes that the entity at `position` has an event of this replica at `counter`.
    mutating func note(_ position: Int, counter: UInt64) -> Int {
      let entity = UInt32(truncatingIfNeeded: position)
      guard let last = counters.last else {
        counters.append(counter)
        entities.append(entity)
        return 1
      }
      if entities.last == entity {
        // Typing in one entity: its entry moves up in place, and stays the last.
        if counter > last { counters[counters.count - 1] = counter }
        return 0
      }
      if counter >= last {
        counters.append(counter)
        entities.append(entity)
      } else {
        // An older event arriving late (deltas out of order): rare, and O(n).
        let index = counters.partitioningIndex { $0 > counter }
        counters.insert(counter, at: index)
        entities.insert(entity, at: index)
      }
      return 1
    }
  }

  private(set) var logs: [ReplicaID: Log] = [:]
  /// Entries in all logs.
  private(set) var entryCount = 0

  init() {}

  /// The index of `entities`, one entry per entity and replica.
  package init(_ entities: EntityTable) {
    var entries: [ReplicaID: [(counter: UInt64, entity: UInt32)]] = [:]
    for position in entities.values.indices {
      entities.values[position].presence.forEachLatest { replica, counter in
        entries[replica, default: []].append((counter, UInt32(truncatingIfNeeded: position)))
      }
    }
    for (replica, list) in entries {
      let sorted = list.sorted { $0.counter < $1.counter }
      logs[replica] = Log(counters: sorted.map(\.counter), entities: sorted.map(\.entity))
      entryCount += sorted.count
    }
  }

  /// Notes that the presence of the entity at `position` now has `counter` for
  /// `replica`.
  mutating func note(_ position: Int, replica: ReplicaID, counter: UInt64) {
    entryCount += logs[replica, default: Log()].note(position, counter: counter)
  }

  /// Notes every entry of `presence` for the entity at `position`.
  mutating func note(_ position: Int, presence: Presence) {
    presence.forEachLatest { replica, counter in
      note(position, replica: replica, counter: counter)
    }
  }

  /// Whether stale entries outnumber the entities' own, so a rebuild pays for itself.
  func needsRebuild(entityCount: Int) -> Bool {
    entryCount > 4 * entityCount + 64
  }

  /// The positions of entities with an event of some replica above `prefix`, sorted and
  /// each once, or `nil` if that would list more than `limit` entries (scanning every
  /// entity is then cheaper).
  ///
  /// - Complexity: O(r log n + k log k) for r replicas and k entries listed.
  func entities(withEventsAbove prefix: VersionVector, limit: Int) -> [Int]? {
    var found: [Int] = []
    for (replica, log) in logs {
      let floor = prefix[replica]
      let start = log.counters.partitioningIndex { $0 > floor }
      guard found.count + log.counters.count - start <= limit else { return nil }
      found.append(contentsOf: log.entities[start...].lazy.map { Int($0) })
    }
    found.sort()
    // Sorted, an entity listed twice (typed in, then touched by another replica) is
    // next to itself.
    var kept = 0
    for index in found.indices where index == 0 || found[index] != found[index - 1] {
      found[kept] = found[index]
      kept += 1
    }
    found.removeLast(found.count - kept)
    return found
  }

  /// Traps unless every entity's presence entries are covered: for each entity and
  /// replica, an entry with a counter at least the presence's.
  func checkCovers(_ entities: EntityTable) {
    var highest: [ReplicaID: [UInt32: UInt64]] = [:]
    for (replica, log) in logs {
      precondition(zip(log.counters, log.counters.dropFirst()).allSatisfy { $0 <= $1 })
      precondition(log.counters.count == log.entities.count, "\(replica): a log out of step")
      for (counter, entity) in zip(log.counters, log.entities) {
        precondition(Int(entity) < entities.count, "\(replica): no entity at \(entity)")
        highest[replica, default: [:]][entity] = Swift.max(
          highest[replica]?[entity] ?? 0, counter)
      }
    }
    for position in entities.values.indices {
      let entity = UInt32(truncatingIfNeeded: position)
      entities.values[position].presence.forEachLatest { replica, counter in
        precondition(
          (highest[replica]?[entity] ?? 0) >= counter,
          "\(entities.key(at: position)): the event index lacks \(replica):\(counter)")
      }
    }
  }
}
