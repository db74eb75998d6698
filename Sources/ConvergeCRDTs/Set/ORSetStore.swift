import ConvergeCore

/// The elements of an add-wins set, every one ever added with its ``Presence``: one array
/// of entries sorted by the elements' hash values. The one store of add-wins sets: an
/// ``ORSet`` pairs it with a causal context of its own, and a document's set field
/// (`SetElements`, of `FieldValue` elements) sits under the document's single context.
/// Its `merge` is the one join of add-wins sets, its `filter` by
/// ``Presence/mayHaveEvents(unknownTo:)`` their one delta, ``_checkInvariants()`` their
/// one invariant check.
///
/// A set usually holds a few elements (a note's tags). A hash table for them took a few
/// hundred bytes of buckets and header (two tags: about 500 bytes of a 2,500-byte note at
/// 50,000 notes); an array of entries takes their size and one header.
///
/// Removed elements stay as entries (their presence records the remove), so a late add
/// cannot resurrect them. Elements are equal as `Element`'s `==` says, which for strings
/// is canonical equivalence: two spellings of "é" are one element, as they were one key
/// of the hash table. Equal elements have equal hash values, so the array is sorted by
/// hash value and an element is found by binary search, then `==` among the few entries
/// sharing its hash value. (No order of the values themselves would do: `String`'s `<`
/// ranks "e\u{301}" and "\u{E9}a" neither way although they differ, and byte order
/// splits equal spellings.) Hash values are seeded per process, so the order is not part
/// of the state: equality ignores it, and the wire writes elements in their own order.
///
/// Inlinable: the document, in the module above, merges and reads its set fields through
/// it, specialized for its elements.
///
/// - Complexity: lookup O(log k) for k elements ever added; adding an element O(k) (it
///   moves the entries after it); joining two sets O(k + m), or O(m log k) plus the moves
///   when one has a few elements.
@usableFromInline
package struct ORSetStore<Element: Hashable & Sendable>: Sendable, Sequence {
  @usableFromInline
  package struct Entry: Sendable, Equatable {
    @usableFromInline package var element: Element
    /// The low 32 bits of `element.hashValue`, kept so that the entries are never hashed
    /// again. Declared here, it sits in the element's padding: an entry of a document's
    /// set takes 48 bytes, not the 56 a whole `Int` after the presence took. Equal
    /// elements still have equal values, and elements that merely share them are told
    /// apart by `==`.
    @usableFromInline var hash: UInt32
    @usableFromInline package var presence: Presence

    @inlinable
    package init(element: Element, presence: Presence) {
      self.element = element
      self.presence = presence
      hash = Self.hash(of: element)
    }

    @inlinable
    static func hash(of element: Element) -> UInt32 {
      UInt32(truncatingIfNeeded: element.hashValue)
    }
  }

  /// Sorted by hash value, no two elements equal.
  @usableFromInline package internal(set) var entries: [Entry] = []

  @inlinable package init() {}

  /// The number of elements ever added, present or removed.
  @inlinable package var count: Int { entries.count }
  @inlinable package var isEmpty: Bool { entries.isEmpty }

  /// The entries' storage: the same for two sets only if they hold one array (a
  /// document's `SetReadCache` keeps values by it, holding that array so that no one
  /// changes it in place). Found without reading the storage: its count, read there,
  /// was a cache miss a row of a list view's walk (BENCHMARKS.md, typed reads, seventh
  /// pass).
  @inlinable
  package var entriesAddress: UnsafeRawPointer? {
    entries.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
  }

  /// Every element's presence.
  @inlinable
  package var presences: LazyMapSequence<[Entry], Presence> { entries.lazy.map(\.presence) }

  /// Where the element with `hash` equal to `element` is, or where it would go (after the
  /// entries of its hash value).
  @inlinable
  func position(of element: Element, hash: UInt32) -> (index: Int, found: Bool) {
    var index = entries.partitioningIndex { $0.hash >= hash }
    while index < entries.count, entries[index].hash == hash {
      if entries[index].element == element { return (index, true) }
      index += 1
    }
    return (index, false)
  }

  @inlinable
  package subscript(element: Element) -> Presence? {
    let (index, found) = position(of: element, hash: Entry.hash(of: element))
    return found ? entries[index].presence : nil
  }

  /// Joins `entry`'s presence into its element's; returns whether the element's
  /// visibility changed.
  @inlinable @discardableResult
  mutating func merge(_ entry: Entry) -> Bool {
    let (index, found) = position(of: entry.element, hash: entry.hash)
    guard found else {
      entries.insert(entry, at: index)
      return entry.presence.isPresent
    }
    let before = entries[index].presence.isPresent
    entries[index].presence.merge(entry.presence)
    return entries[index].presence.isPresent != before
  }

  /// Joins `presence` into the element's; returns whether the element's visibility
  /// changed.
  @inlinable @discardableResult
  package mutating func merge(_ presence: Presence, for element: Element) -> Bool {
    merge(Entry(element: element, presence: presence))
  }

  /// Joins every element of `other`; returns whether some element's visibility changed.
  /// The join of add-wins sets: each element's presences joined.
  @inlinable @discardableResult
  package mutating func merge(_ other: ORSetStore) -> Bool {
    if entries.isEmpty {
      entries = other.entries
      return other.entries.contains { $0.presence.isPresent }
    }
    var changed = false
    // A transaction's or a small delta's few elements: each found by binary search.
    guard other.count > 4 else {
      for entry in other.entries where merge(entry) { changed = true }
      return changed
    }
    var joined: [Entry] = []
    joined.reserveCapacity(entries.count + other.entries.count)
    var mine = entries[...]
    var theirs = other.entries[...]
    while let next = theirs.first {
      while let entry = mine.first, entry.hash < next.hash {
        joined.append(entry)
        mine = mine.dropFirst()
      }
      // The entries of one hash value on both sides, matched by `==`.
      let groupStart = joined.count
      while let entry = mine.first, entry.hash == next.hash {
        joined.append(entry)
        mine = mine.dropFirst()
      }
      while let entry = theirs.first, entry.hash == next.hash {
        theirs = theirs.dropFirst()
        if let slot = joined[groupStart...].firstIndex(where: { $0.element == entry.element }) {
          let before = joined[slot].presence.isPresent
          joined[slot].presence.merge(entry.presence)
          if joined[slot].presence.isPresent != before { changed = true }
        } else {
          joined.append(entry)
          if entry.presence.isPresent { changed = true }
        }
      }
    }
    joined.append(contentsOf: mine)
    entries = joined
    return changed
  }

  @inlinable
  package func merging(_ other: ORSetStore) -> ORSetStore {
    var result = self
    result.merge(other)
    return result
  }

  /// The elements whose presence satisfies `isIncluded`.
  @inlinable
  package func filter(_ isIncluded: (Presence) -> Bool) -> ORSetStore {
    var result = ORSetStore()
    result.entries = entries.filter { isIncluded($0.presence) }
    return result
  }

  /// What a peer whose gap-free prefix of events is `prefix` may lack: the elements whose
  /// presence may hold an event above it (``Presence/mayHaveEvents(unknownTo:)``), whole.
  /// Every add and every remove is an event with a dot of its own, so the delta grows
  /// with the changes since `prefix`, not with the removals ever made.
  ///
  /// - Complexity: O(k r) for k elements ever added and r replicas.
  @inlinable
  package func delta(since prefix: VersionVector) -> ORSetStore {
    filter { $0.mayHaveEvents(unknownTo: prefix) }
  }

  /// The elements and their presences, as `(key, value)` pairs like a dictionary's.
  @usableFromInline
  package struct Iterator: IteratorProtocol {
    @usableFromInline var base: IndexingIterator<[Entry]>

    @inlinable init(base: IndexingIterator<[Entry]>) { self.base = base }

    @inlinable
    package mutating func next() -> (key: Element, value: Presence)? {
      base.next().map { (key: $0.element, value: $0.presence) }
    }
  }

  @inlinable
  package func makeIterator() -> Iterator {
    Iterator(base: entries.makeIterator())
  }
}

extension ORSetStore where Element: Comparable {
  /// The elements in their own order, the order the wire writes them in.
  @inlinable
  package var inWireOrder: [Entry] {
    entries.sorted { $0.element < $1.element }
  }
}

extension ORSetStore {
  /// The set of `entries`, read from the wire in this order; or the position in
  /// `entries` of the first one that equals an earlier one (where a reader in order meets
  /// the second of the pair), and an empty set.
  @inlinable
  package static func reading(_ entries: consuming [Entry]) -> (ORSetStore, duplicate: Int?) {
    var result = ORSetStore()
    guard entries.count > 1 else {
      result.entries = entries
      return (result, nil)
    }
    let duplicate = withUnsafeTemporaryAllocation(of: Int.self, capacity: entries.count) {
      buffer in
      var order = buffer
      // The positions by hash value, then position: equal elements sit together, the
      // first one read first.
      for position in entries.indices { order.initializeElement(at: position, to: position) }
      order.sort { (entries[$0].hash, $0) < (entries[$1].hash, $1) }
      var duplicate: Int?
      var groupStart = 0
      for index in order.indices {
        let position = order[index]
        if index > 0, entries[order[index - 1]].hash != entries[position].hash {
          groupStart = index
        }
        for earlier in order[groupStart..<index]
        where entries[earlier].element == entries[position].element {
          duplicate = Swift.min(duplicate ?? position, position)
        }
      }
      return duplicate
    }
    guard duplicate == nil else { return (result, duplicate) }
    // No two elements equal: the order among equal hash values does not matter.
    entries.sort { $0.hash < $1.hash }
    result.entries = entries
    return (result, nil)
  }

  /// Verifies the store's invariants: entries sorted by their elements' hash values, each
  /// hash value the element's, no element twice, and every element added somewhere (a
  /// presence with no add is no element). Called by ``ORSet/_checkInvariants()`` and by
  /// the document's, under `CONVERGE_INTERNAL_CHECKS`.
  ///
  /// - Complexity: O(k) for k elements ever added (O(k²) for elements sharing a hash).
  package func _checkInvariants() {
    for (index, entry) in entries.enumerated() {
      precondition(entry.hash == Entry.hash(of: entry.element), "\(entry.element): stale hash")
      precondition(entry.presence.hasAdds, "\(entry.element) was never added")
      guard index > 0 else { continue }
      precondition(entries[index - 1].hash <= entry.hash, "set entries out of hash order")
      precondition(
        position(of: entry.element, hash: entry.hash).index == index,
        "\(entry.element) is in the set twice")
    }
  }
}

extension ORSetStore: Equatable {
  /// The same elements with the same presences, whatever order equal hash values left
  /// them in.
  @inlinable
  package static func == (lhs: ORSetStore, rhs: ORSetStore) -> Bool {
    lhs.count == rhs.count
      && lhs.entries.allSatisfy { entry in
        let (index, found) = rhs.position(of: entry.element, hash: entry.hash)
        return found && rhs.entries[index].presence == entry.presence
      }
  }
}

extension ORSetStore: ExpressibleByDictionaryLiteral {
  /// The set of the literal's elements, which must be distinct.
  @inlinable
  package init(dictionaryLiteral elements: (Element, Presence)...) {
    self.init()
    for (element, presence) in elements { merge(presence, for: element) }
  }
}
