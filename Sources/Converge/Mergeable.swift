/// A state-based CRDT: a value whose `merge` is a join.
///
/// Every replicated type in Converge conforms: ``LWWRegister``, ``ORSet``, and the types
/// built on them. `merge` must be commutative, associative and idempotent, so replicas
/// may exchange states and deltas in any order, any number of times, and still agree.
/// The law checkers in `ConvergeTestSupport` verify that on random states.
public protocol Mergeable: Sendable {
  /// Joins `other` into this value: afterwards it holds everything either one knew.
  mutating func merge(_ other: Self)
}

extension Mergeable {
  /// The join of this value and `other`.
  public func merging(_ other: Self) -> Self {
    var result = self
    result.merge(other)
    return result
  }
}
