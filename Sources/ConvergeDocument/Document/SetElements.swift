/// The elements of a set field, every one ever added with its ``Presence``: one array of
/// entries sorted by the elements' hash values.
///
/// A set field usually holds a few tags. A hash table for them took a few hundred bytes
/// of buckets and header (two tags: about 500 bytes of a 2,500-byte note at 50,000
/// notes); an array of entries takes their size and one header.
///
/// Elements are equal as ``FieldValue``s are, which for strings is canonical equivalence:
/// two spellings of "é" are one element, as they were one key of the hash table. Equal
/// elements have equal hash values, so the array is sorted by hash value and an element
/// is found by binary search, then `==` among the few entries sharing its hash value.
/// (No order of the values themselves would do: `String`'s `<` ranks "e\u{301}" and
/// "\u{E9}a" neither way although they differ, and byte order splits equal spellings.)
/// Hash values are seeded per process, so the order is not part of the state: equality
/// ignores it, and the wire writes elements in ``FieldValue``'s order.
///
/// - Complexity: lookup O(log n); adding an element O(n) (it moves the entries after it);
///   joining two sets O(n + m), or O(m log n) plus the moves when one has a few elements.
package struct SetElements: Sendable, Sequence {
  package struct Entry: Sendable, Equatable {
    package var element: FieldValue
    /// The low 32 bits of `element.hashValue`, kept so that the entries are never hashed
    /// again. Declared here, it sits in the element's padding: an entry takes 48 bytes,
    /// not the 56 a whole `Int` after the presence took. Equal elements still have equal
    /// values, and elements that merely share them are told apart by `==`.
    var hash: UInt32
    package var presence: Presence

    package init(element: FieldValue, presence: Presence) {
      self.element = element
      self.presence = presence
      hash = Self.hash(of: element)
    }

    static func hash(of element: FieldValue) -> UInt32 {
      UInt32(truncatingIfNeeded: element.hashValue)
    }
  }

  /// Sorted by hash value, no two elements equal.
  private(set) var entries: [Entry] = []

  init() {}

  package var count: Int { entries.count }
  var isEmpty: Bool { entries.isEmpty }

  /// The entries' storage and count: the same for two sets only if they hold one array
  /// (``SetReadCache`` keeps values by it).
  var entriesIdentity: (address: UnsafeRawPointer?, count: Int) {
    entries.withUnsafeBufferPointer { (UnsafeRawPointer($0.baseAddress), $0.count) }
  }

  /// Every element's presence.
  package var presences: LazyMapSequence<[Entry], Presence> { entries.lazy.map(\.presence) }

  /// Where the element with `hash` equal to `element` is, or where it would go (after the
  /// entries of its hash value).
  private func position(of element: FieldValue, hash: UInt32) -> (index: Int, found: Bool) {
    var index = entries.partitioningIndex { $0.hash >= hash }
    while index < entries.count, entries[index].hash == hash {
      if entries[index].element == element { return (index, true) }
      index += 1
    }
    return (index, false)
  }

  subscript(element: FieldValue) -> Presence? {
    let (index, found) = position(of: element, hash: Entry.hash(of: element))
    return found ? entries[index].presence : nil
  }

  /// Joins `entry`'s presence into its element's; returns whether the element's
  /// visibility changed.
  @discardableResult
  private mutating func merge(_ entry: Entry) -> Bool {
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
  @discardableResult
  mutating func merge(_ presence: Presence, for element: FieldValue) -> Bool {
    merge(Entry(element: element, presence: presence))
  }

  /// Joins every element of `other`; returns whether some element's visibility changed.
  @discardableResult
  mutating func merge(_ other: SetElements) -> Bool {
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

  func merging(_ other: SetElements) -> SetElements {
    var result = self
    result.merge(other)
    return result
  }

  /// The elements whose presence satisfies `isIncluded`.
  func filter(_ isIncluded: (Presence) -> Bool) -> SetElements {
    var result = SetElements()
    result.entries = entries.filter { isIncluded($0.presence) }
    return result
  }

  /// The elements in ``FieldValue``'s order, the order the wire writes them in.
  package var inWireOrder: [Entry] {
    entries.sorted { $0.element < $1.element }
  }

  /// The set of `entries`, read from the wire in this order; or the position in
  /// `entries` of the first one that equals an earlier one (where a reader in order meets
  /// the second of the pair), and an empty set.
  package static func reading(_ entries: consuming [Entry]) -> (SetElements, duplicate: Int?) {
    var result = SetElements()
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

  /// The elements and their presences, as `(key, value)` pairs like a dictionary's.
  package struct Iterator: IteratorProtocol {
    fileprivate var base: IndexingIterator<[Entry]>

    package mutating func next() -> (key: FieldValue, value: Presence)? {
      base.next().map { (key: $0.element, value: $0.presence) }
    }
  }

  package func makeIterator() -> Iterator {
    Iterator(base: entries.makeIterator())
  }
}

extension SetElements: Equatable {
  /// The same elements with the same presences, whatever order equal hash values left
  /// them in.
  package static func == (lhs: SetElements, rhs: SetElements) -> Bool {
    lhs.count == rhs.count
      && lhs.entries.allSatisfy { entry in
        let (index, found) = rhs.position(of: entry.element, hash: entry.hash)
        return found && rhs.entries[index].presence == entry.presence
      }
  }
}

extension SetElements: ExpressibleByDictionaryLiteral {
  /// The set of the literal's elements, which must be distinct.
  package init(dictionaryLiteral elements: (FieldValue, Presence)...) {
    self.init()
    for (element, presence) in elements { merge(presence, for: element) }
  }
}
