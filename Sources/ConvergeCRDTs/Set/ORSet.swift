import ConvergeCore

/// An add-wins observed-remove set: a remove takes away only the adds it has seen, so an
/// add made concurrently with a remove survives it.
///
/// Every add and every remove is an event with a fresh ``Dot``. The set keeps each
/// element ever added with its `Presence` (the latest add of each replica, and what
/// the latest removes had observed of each), plus a ``CausalContext`` of every event it
/// has seen; the element is present while some add is newer than every remove that
/// observed its replica. Merging joins the presences element by element, so:
/// - an add wins over a concurrent remove (the remove did not observe the add);
/// - a remove removes only the adds it observed;
/// - a remove that arrives before the add it observed still removes it: the add is not
///   newer than what the remove recorded;
/// - a late or duplicated old add never brings a removed element back;
/// - an element removed and added again is present: the new add is newer.
///
/// This is the very store (`ORSetStore`) a document's set fields keep under the
/// document's one causal context: one join, one delta and one invariant check for every
/// add-wins set. Removed elements stay as entries, so memory grows with the elements
/// ever added (a document's tags), not with the removes.
///
/// Two replicas edit a note's tags while offline:
///
/// ```swift
/// let phone = ReplicaID(rawValue: 1)
/// let laptop = ReplicaID(rawValue: 2)
/// var onPhone = ORSet<String>()
/// let added = onPhone.insert("work", replica: phone) ?? ORSet()
/// var onLaptop = onPhone            // both devices start with {"work"}
///
/// let removal = onPhone.remove("work", replica: phone) ?? ORSet()  // phone: {}
/// let readd = onLaptop.insert("work", replica: laptop) ?? ORSet()  // laptop re-tags
/// let urgent = onLaptop.insert("urgent", replica: laptop) ?? ORSet()
///
/// onPhone.merge(readd.merging(urgent))
/// onLaptop.merge(removal)
/// // Both hold {"work", "urgent"}: the remove saw only the first "work" add, so the
/// // laptop's concurrent add wins.
/// ```
///
/// Mutators return the delta to send; ``delta(since:)`` answers a peer's causal context
/// with what the peer lacks, removals included.
///
/// - Complexity: k is the number of elements ever added, r the number of replicas that
///   touched an element, g the number of gaps in a causal context (usually 0), d the size
///   of a delta. Lookups are O(log k + r); adds and removes O(k + r) (the entries after
///   a new element move); merging a delta of d elements O(d (log k + r) + g), or
///   O((k + d) r + g) when it has more than a few; merging whole states O((k + m) r + g).
public struct ORSet<Element: Hashable & Sendable>: Sendable, Equatable {
  /// Every element ever added, with its presence.
  var store: ORSetStore<Element>

  /// Every add event this set has seen, present or removed since.
  public internal(set) var context: CausalContext

  /// The empty set, which has seen nothing.
  public init() {
    store = ORSetStore()
    context = CausalContext()
  }

  init(store: ORSetStore<Element>, context: CausalContext) {
    self.store = store
    self.context = context
  }

  /// Whether `element` is present.
  ///
  /// - Complexity: O(log k + r).
  public func contains(_ element: Element) -> Bool {
    store[element]?.isPresent ?? false
  }

  /// The number of present elements.
  ///
  /// - Complexity: O(k r).
  public var count: Int { store.presences.reduce(0) { $1.isPresent ? $0 + 1 : $0 } }

  /// Whether no element is present. A set with no element may still carry removals (a
  /// non-empty context, removed elements): use ``context`` to tell an empty delta from
  /// a removal.
  ///
  /// - Complexity: O(k r).
  public var isEmpty: Bool { !store.presences.contains(where: \.isPresent) }

  /// The present elements.
  ///
  /// - Complexity: O(k r).
  public var elements: Set<Element> { Set(self) }

  /// The dots of the adds that keep `element` present: each replica's latest add that no
  /// remove observed (empty if it is absent).
  ///
  /// - Complexity: O(log k + r).
  public func dots(of element: Element) -> Set<Dot> {
    guard let presence = store[element] else { return [] }
    var dots: Set<Dot> = []
    presence.added.forEachEntry { replica, counter in
      if counter > presence.removedCounter(of: replica) {
        dots.insert(Dot(replica: replica, counter: counter))
      }
    }
    return dots
  }
}

extension ORSet: Sequence {
  /// Iterates over the present elements in an unspecified order.
  public struct Iterator: IteratorProtocol {
    fileprivate var base: ORSetStore<Element>.Iterator

    /// The next present element, or `nil` after the last.
    public mutating func next() -> Element? {
      while let (element, presence) = base.next() {
        if presence.isPresent { return element }
      }
      return nil
    }
  }

  /// An iterator over the present elements.
  public func makeIterator() -> Iterator {
    Iterator(base: store.makeIterator())
  }
}

extension ORSet: CustomStringConvertible {
  /// The elements ever added with their presences (adds, then what the removes
  /// observed), sorted, and the context, for debugging.
  public var description: String {
    let shown = store.map { "\($0.key): +\($0.value.added) -\($0.value.removed)" }.sorted()
    return "ORSet([" + shown.joined(separator: ", ") + "], context: \(context))"
  }
}
