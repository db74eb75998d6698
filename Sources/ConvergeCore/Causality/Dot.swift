/// The name of one change event: the replica that made it and that replica's counter.
///
/// Every local change (a register write, a set insertion, a typed character, a
/// deletion) gets a fresh dot from ``CausalContext/nextDot(for:)``. Counters start at 1
/// and grow by one per event, so the dots one replica makes are contiguous and a
/// ``CausalContext`` stores them as ranges.
///
/// Dots are ordered by replica, then counter. That order only makes encodings canonical;
/// it says nothing about causality.
public struct Dot: Hashable, Comparable, Sendable {
  /// The replica that made the event.
  public var replica: ReplicaID
  /// The replica's event counter, starting at 1.
  public var counter: UInt64

  /// The event `counter` of `replica`. Counters start at 1.
  public init(replica: ReplicaID, counter: UInt64) {
    self.replica = replica
    self.counter = counter
  }

  /// Orders by replica, then counter: a canonical order, not a causal one.
  public static func < (lhs: Dot, rhs: Dot) -> Bool {
    (lhs.replica, lhs.counter) < (rhs.replica, rhs.counter)
  }
}

extension Dot: CustomStringConvertible {
  /// `replica@counter`, the replica in hexadecimal.
  public var description: String { "\(replica)@\(counter)" }
}
