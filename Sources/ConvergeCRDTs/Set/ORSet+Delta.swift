import ConvergeCore

extension ORSet: Mergeable {
  /// Adds `element` with the fresh event `dot` and returns the delta to send: the element
  /// with that add, and a context of the one dot.
  ///
  /// `dot` must be new to every replica, normally `context.nextDot(for: replica)` (see
  /// ``insert(_:replica:)``). A dot this set has already seen would be a reused dot; the
  /// add is then ignored and the returned delta is empty.
  ///
  /// - Complexity: O(k + r) for k elements ever added and r replicas of its presence.
  @discardableResult
  public mutating func insert(_ element: Element, dot: Dot) -> ORSet {
    guard !context.contains(dot) else { return ORSet() }
    return apply(.add(dot), to: element, dot: dot)
  }

  /// Adds `element` as an event of `replica`, using the next dot of that replica, and
  /// returns the delta to send; `nil` (and no change) if the replica's counter space is
  /// exhausted, in which case the replica must continue under a fresh id.
  ///
  /// - Complexity: O(k + r) for k elements ever added and r replicas of its presence.
  @discardableResult
  public mutating func insert(_ element: Element, replica: ReplicaID) -> ORSet? {
    guard let dot = context.nextDot(for: replica) else { return nil }
    return insert(element, dot: dot)
  }

  /// Removes `element` with the fresh event `dot` and returns the delta to send: the
  /// element with a presence recording the adds this remove observed, and only those,
  /// and a context of the one dot.
  ///
  /// Only the observed adds: a remove that recorded the remover's whole version vector
  /// would also cancel adds that are concurrent with it but not yet received here, and
  /// they would vanish on arrival (the bug Akka's ORSet shipped).
  ///
  /// Removing an absent element, or with a dot this set has seen, changes nothing and
  /// returns an empty delta.
  ///
  /// - Complexity: O(log k + r) for k elements ever added and r replicas of its presence.
  @discardableResult
  public mutating func remove(_ element: Element, dot: Dot) -> ORSet {
    guard !context.contains(dot), let observed = store[element], observed.isPresent else {
      return ORSet()
    }
    return apply(.remove(observing: observed, dot: dot), to: element, dot: dot)
  }

  /// Removes `element` as an event of `replica`, using the next dot of that replica, and
  /// returns the delta to send (empty if the element is absent); `nil` (and no change) if
  /// the replica's counter space is exhausted.
  ///
  /// - Complexity: O(log k + r) for k elements ever added and r replicas of its presence.
  @discardableResult
  public mutating func remove(_ element: Element, replica: ReplicaID) -> ORSet? {
    guard contains(element) else { return ORSet() }
    guard let dot = context.nextDot(for: replica) else { return nil }
    return remove(element, dot: dot)
  }

  /// Removes every present element as one event of `replica` and returns the delta: each
  /// element with a presence recording the adds the remove observed; `nil` (and no
  /// change) if the replica's counter space is exhausted.
  ///
  /// - Complexity: O(k r) for k elements ever added.
  @discardableResult
  public mutating func removeAll(replica: ReplicaID) -> ORSet? {
    let present = store.filter(\.isPresent)
    guard !present.isEmpty else { return ORSet() }
    guard let dot = context.nextDot(for: replica) else { return nil }
    var removals = ORSetStore<Element>()
    for (element, observed) in present {
      removals.merge(.remove(observing: observed, dot: dot), for: element)
    }
    store.merge(removals)
    context.insert(dot)
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return ORSet(store: removals, context: CausalContext(dots: [dot]))
  }

  /// Joins the change `presence` of `element`, made locally as the event `dot`, and
  /// returns it as a delta.
  private mutating func apply(_ presence: Presence, to element: Element, dot: Dot) -> ORSet {
    store.merge(presence, for: element)
    context.insert(dot)
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return ORSet(store: [element: presence], context: CausalContext(dots: [dot]))
  }

  /// Joins `other`, a whole state or a delta, into this set: each element's presences
  /// joined (by `ORSetStore`, as a document's set fields are), and the contexts.
  ///
  /// - Complexity: O((k + m) r + g) for k and m elements ever added, r replicas and g
  ///   gaps in the contexts; O(m (log k + r) + g) when `other` has a few elements.
  public mutating func merge(_ other: ORSet) {
    store.merge(other.store)
    context.formUnion(other.context)
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
  }

  /// What a peer whose causal context is `peerContext` lacks, so that
  /// `peer.merging(delta(since: peer.context)) == peer.merging(self)`.
  ///
  /// The delta holds, whole, every element whose presence may name an event above the
  /// peer's gap-free prefix (`ORSetStore.delta(since:)`, a document's delta alike), and
  /// the context difference. Every add and every remove is an event, so its size grows
  /// with the changes the peer lacks, not with the removals ever made.
  ///
  /// `peerContext` may understate what the peer knows (a version vector is fine: the
  /// delta is then larger, never wrong), but must not overstate it.
  ///
  /// - Complexity: O(k r + g) for k elements ever added.
  public func delta(since peerContext: CausalContext) -> ORSet {
    ORSet(
      store: store.delta(since: peerContext.versionVector),
      context: context.subtracting(peerContext))
  }
}
