/// A state-based CRDT: a value whose `merge` is a join.
///
/// What it is for: the join is what lets replicas exchange whole states or deltas in any
/// order, any number of times, and still agree, and it is what the law checkers in
/// `ConvergeTestSupport` (`checkJoinLaws`, `checkDeltaLaws`) and its simulated network
/// (`ReplicaNetwork`) are generic over. `merge` must be commutative, associative and
/// idempotent; the checkers verify that on random states.
///
/// Every replicated state conforms: ``LWWRegister``, ``ORSet``, ``RGA`` and ``SharedText``
/// (text), ``MovableList``, ``VersionVector`` and ``Document``.
///
/// The parts these states are built from join too, checked through the states that hold
/// them rather than on their own: a ``CausalContext`` (`formUnion`), and at `package`
/// access an add-wins presence (`Presence`, of an entity, a list item or a set element)
/// and an add-wins set's store (`ORSetStore`, which ``ORSet`` and a document's set
/// fields share).
///
/// Two kinds of value have a `merge` and do not conform. Deltas (``DocumentDelta``,
/// ``RGADelta``, ``MovableListDelta``) are messages, not states: their `merge` combines
/// two into one whose application equals applying both. ``Replica`` is a document with an
/// identity (the replica id that stamps its edits), and its `merge` also reports what
/// changed.
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
