import ConvergeCore

extension ORSet: Mergeable {
  /// Adds `element` with the fresh event `dot` and returns the delta to send.
  ///
  /// The delta holds the element with the new dot; its context holds the new dot plus the
  /// element's earlier dots, which this add supersedes, so a peer drops those too.
  ///
  /// `dot` must be new to every replica, normally `context.nextDot(for: replica)` (see
  /// ``insert(_:replica:)``). A dot this set has already seen would be a reused dot; the
  /// add is then ignored and the returned delta is empty.
  ///
  /// - Complexity: O(1) plus the number of superseded dots.
  @discardableResult
  public mutating func insert(_ element: Element, dot: Dot) -> ORSet {
    guard !context.contains(dot) else { return ORSet() }
    let superseded = store.insert(element, dot: dot)
    context.insert(dot)
    var deltaContext = CausalContext(dots: superseded)
    deltaContext.insert(dot)
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return ORSet(store: ORSetStore(entries: [element: [dot]]), context: deltaContext)
  }

  /// Adds `element` as an event of `replica`, using the next dot of that replica, and
  /// returns the delta to send; `nil` (and no change) if the replica's counter space is
  /// exhausted, in which case the replica must continue under a fresh id.
  ///
  /// - Complexity: O(1) plus the number of superseded dots.
  @discardableResult
  public mutating func insert(_ element: Element, replica: ReplicaID) -> ORSet? {
    guard let dot = context.nextDot(for: replica) else { return nil }
    return insert(element, dot: dot)
  }

  /// Removes `element` and returns the delta to send: an empty store with a context
  /// holding only the dots this remove observed.
  ///
  /// Only the observed dots: a delta whose context held the whole version vector would
  /// also cancel adds that are concurrent with the remove but not yet received here,
  /// and they would vanish on arrival (the bug Akka's ORSet shipped).
  ///
  /// Removing an absent element changes nothing and returns an empty delta.
  ///
  /// - Complexity: O(k) for the k dots removed.
  @discardableResult
  public mutating func remove(_ element: Element) -> ORSet {
    let observed = store.remove(element)
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return ORSet(store: ORSetStore(), context: CausalContext(dots: observed))
  }

  /// Removes every present element and returns the delta: an empty store with a context
  /// holding every dot observed.
  ///
  /// - Complexity: O(n).
  @discardableResult
  public mutating func removeAll() -> ORSet {
    let observed = CausalContext(dots: store.dots)
    store = ORSetStore()
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return ORSet(store: ORSetStore(), context: observed)
  }

  /// Joins `other`, a whole state or a delta, into this set.
  ///
  /// - Complexity: O((n + m) log g + r) for n and m live dots.
  public mutating func merge(_ other: ORSet) {
    store.join(other.store, ownContext: context, otherContext: other.context)
    context.formUnion(other.context)
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
  }

  /// What a peer whose causal context is `peerContext` lacks, so that
  /// `peer.merging(delta(since: peer.context)) == peer.merging(self)`.
  ///
  /// The delta's store holds the live adds the peer has not seen. Its context is this
  /// set's context minus the live dots the peer already holds, so that it carries the
  /// adds the peer lacks and every removal this set knows of, including removals of
  /// adds the peer still holds (a removal makes no new dot, so the context difference
  /// alone would miss those). Its size is O(r + g + n), independent of how many
  /// elements were ever removed.
  ///
  /// `peerContext` may understate what the peer knows (a version vector is fine: the
  /// delta is then larger, never wrong), but must not overstate it.
  ///
  /// - Complexity: O(n log g + r + g).
  public func delta(since peerContext: CausalContext) -> ORSet {
    ORSet(
      store: store.delta(since: peerContext),
      context: context.subtracting(store.dotsKnown(to: peerContext)))
  }
}
