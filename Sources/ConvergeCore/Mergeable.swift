/// A state-based CRDT: a value whose `merge` is a join.
///
/// Every replicated state in Converge conforms: ``LWWRegister``, ``ORSet``, ``RGA`` and
/// ``SharedText`` (text), ``VersionVector`` and ``Document``. `merge` must be
/// commutative, associative and idempotent, so replicas may exchange states and deltas in
/// any order, any number of times, and still agree. The law checkers in
/// `ConvergeTestSupport` (`checkJoinLaws`, `checkDeltaLaws`) verify that on random states
/// of each.
///
/// ``Replica`` does not conform: it is a document with an identity (the replica id that
/// stamps its edits), and its `merge` also reports what changed.
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

extension VersionVector: Mergeable {}
