import ConvergeCore

/// An add-wins observed-remove set: a remove takes away only the adds it has seen, so an
/// add made concurrently with a remove survives it.
///
/// This is the optimized add-wins set (AWORSet) of Almeida, Shoker and Baquero, "Delta
/// State Replicated Data Types" (2018). Every add is an event with a fresh ``Dot``; the
/// set keeps, for each present element, the dots of the adds that put it there, plus a
/// ``CausalContext`` of every dot it has ever seen. A dot in the context but not in the
/// store was removed. Merging keeps a dot when both sides hold it, or when one side holds
/// it and the other has never seen it; a dot one side has seen and dropped stays dropped.
/// So:
/// - an add wins over a concurrent remove (the remove never saw the add's dot);
/// - a remove removes only the dots it observed, and its delta carries only those dots;
/// - a remove that arrives before the add it observed still removes it: the add arrives
///   into a context that already holds its dot;
/// - a late or duplicated old add never brings a removed element back;
/// - an element removed and added again is present: the new add has a new dot.
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
/// let removal = onPhone.remove("work")                        // phone: {}
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
/// with exactly what the peer lacks, removals included.
///
/// - Complexity: n is the number of present elements, r the number of replicas, g the
///   number of gaps in a causal context (usually 0), d the size of a delta. Lookups are
///   O(1); adds and removes O(1) plus the dots superseded; merging a delta is
///   O(d log g + r); merging whole states O((n + m) log g + r).
public struct ORSet<Element: Hashable & Sendable>: Sendable, Equatable {
  /// The live adds of every present element.
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
  /// - Complexity: O(1).
  public func contains(_ element: Element) -> Bool {
    store.entries[element] != nil
  }

  /// The number of present elements.
  ///
  /// - Complexity: O(1).
  public var count: Int { store.entries.count }

  /// Whether no element is present. A set with no element may still carry removals (a
  /// non-empty context): use ``context`` to tell an empty delta from a removal.
  ///
  /// - Complexity: O(1).
  public var isEmpty: Bool { store.isEmpty }

  /// The present elements.
  ///
  /// - Complexity: O(n).
  public var elements: Set<Element> { Set(store.entries.keys) }

  /// The dots of the adds that keep `element` present (empty if it is absent).
  ///
  /// - Complexity: O(1).
  public func dots(of element: Element) -> Set<Dot> {
    store.entries[element] ?? []
  }
}

extension ORSet: Sequence {
  /// Iterates over the present elements in an unspecified order.
  public struct Iterator: IteratorProtocol {
    fileprivate var base: Dictionary<Element, Set<Dot>>.Keys.Iterator

    /// The next present element, or `nil` after the last.
    public mutating func next() -> Element? { base.next() }
  }

  /// An iterator over the present elements.
  public func makeIterator() -> Iterator {
    Iterator(base: store.entries.keys.makeIterator())
  }

  /// The number of present elements.
  public var underestimatedCount: Int { count }
}

extension ORSet: CustomStringConvertible {
  /// The elements with their dots, sorted, and the context, for debugging.
  public var description: String {
    let shown = store.entries.map { "\($0.key): \($0.value.sorted())" }.sorted()
    return "ORSet([" + shown.joined(separator: ", ") + "], context: \(context))"
  }
}
