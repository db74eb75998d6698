import ConvergeCore

/// The dot store of an add-wins set: for every present element, the dots of the adds
/// that put it there and were not removed since.
///
/// The store carries no causal context of its own: an ``ORSet`` pairs one store with one
/// context and calls the causal ``join`` and ``delta(since:)`` here with it. (The
/// document layer does not use this store: its set fields keep each element's presence
/// as a pair of version vectors under the document's single causal context.)
///
/// Canonical form: no element maps to an empty dot set, so equal knowledge gives equal
/// stores.
struct ORSetStore<Element: Hashable & Sendable>: Sendable, Equatable {
  /// The live add events of every present element.
  package var entries: [Element: Set<Dot>]

  init() {
    entries = [:]
  }

  init(entries: [Element: Set<Dot>]) {
    self.entries = entries
  }

  package var isEmpty: Bool { entries.isEmpty }

  /// Every live dot, unordered.
  var dots: some Sequence<Dot> { entries.values.joined() }

  /// Records an add of `element` with `dot`, which supersedes the element's earlier
  /// adds, and returns those earlier dots: the delta's context must hold them so that a
  /// peer drops them too.
  package mutating func insert(_ element: Element, dot: Dot) -> Set<Dot> {
    let superseded = entries.updateValue([dot], forKey: element) ?? []
    return superseded
  }

  /// Removes `element` and returns the dots it had: exactly the adds the remove observed.
  mutating func remove(_ element: Element) -> Set<Dot> {
    entries.removeValue(forKey: element) ?? []
  }

  /// The causal join of two dot maps (Almeida et al., section 5): a dot survives if both
  /// sides hold it, or if one side holds it and the other side has never seen it. A dot
  /// that one side has seen (it is in that side's context) but no longer holds was
  /// removed there, and stays removed.
  ///
  /// - Complexity: O((n + m) log g) for n and m live dots and g gaps in the contexts.
  mutating func join(
    _ other: ORSetStore, ownContext: CausalContext, otherContext: CausalContext
  ) {
    var joined: [Element: Set<Dot>] = [:]
    joined.reserveCapacity(Swift.max(entries.count, other.entries.count))
    for (element, dots) in entries {
      let theirs = other.entries[element]
      let kept = dots.filter { dot in
        theirs?.contains(dot) ?? false || !otherContext.contains(dot)
      }
      if !kept.isEmpty { joined[element] = kept }
    }
    for (element, dots) in other.entries {
      let fresh = dots.filter { !ownContext.contains($0) }
      if !fresh.isEmpty { joined[element, default: []].formUnion(fresh) }
    }
    entries = joined
  }

  /// The entries restricted to the dots `context` lacks; elements left with no dot are
  /// dropped.
  ///
  /// - Complexity: O(n log g) for n live dots.
  func delta(since context: CausalContext) -> ORSetStore {
    var result: [Element: Set<Dot>] = [:]
    for (element, dots) in entries {
      let unseen = dots.filter { !context.contains($0) }
      if !unseen.isEmpty { result[element] = unseen }
    }
    return ORSetStore(entries: result)
  }

  /// The live dots that `context` already holds, which a delta for a peer with that
  /// context does not carry. The delta's context must leave them out, or the peer would
  /// read their absence from the delta's store as a removal.
  func dotsKnown(to context: CausalContext) -> CausalContext {
    CausalContext(dots: dots.filter { context.contains($0) })
  }
}
