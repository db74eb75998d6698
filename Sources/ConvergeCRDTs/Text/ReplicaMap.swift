import ConvergeCore

/// A small map keyed by replica: texts have a handful of replicas and edit through one of
/// them at a time, so keys and values sit in parallel arrays and a lookup is a short
/// linear scan, without hashing. Past eight replicas a dictionary of slots takes over.
package struct ReplicaMap<Value: Sendable>: Sendable, Sequence {
  private(set) var keys: [ReplicaID] = []
  /// Values by slot; mutated in place through ``slotCreating(_:default:)``.
  package var values: [Value] = []
  private var slots: [ReplicaID: Int] = [:]

  private static var linearLimit: Int { 8 }

  package var isEmpty: Bool { keys.isEmpty }

  package init() {}

  package func slot(of replica: ReplicaID) -> Int? {
    if keys.count <= Self.linearLimit {
      for position in keys.indices where keys[position] == replica { return position }
      return nil
    }
    return slots[replica]
  }

  /// The slot of `replica`, adding it with `initial` when absent.
  package mutating func slotCreating(
    _ replica: ReplicaID, default initial: @autoclosure () -> Value
  )
    -> Int
  {
    if let existing = slot(of: replica) { return existing }
    keys.append(replica)
    values.append(initial())
    if keys.count > Self.linearLimit {
      if slots.isEmpty {
        for (position, key) in keys.enumerated() { slots[key] = position }
      } else {
        slots[replica] = keys.count - 1
      }
    }
    return keys.count - 1
  }

  package subscript(replica: ReplicaID) -> Value? {
    slot(of: replica).map { values[$0] }
  }

  package func makeIterator() -> Zip2Sequence<[ReplicaID], [Value]>.Iterator {
    zip(keys, values).makeIterator()
  }
}
