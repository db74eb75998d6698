/// An entity's fields by name: two parallel arrays sorted by name (``fieldNameOrder``).
/// A document's entity holds its fields' states in one (`FieldTable<FieldState>`), a
/// delta's entity its fields' changes (`FieldTable<FieldDelta>`).
///
/// An entity has a handful of fields, so a short scan of inline small strings beats
/// hashing, and two arrays cost a fraction of a hash table's buckets: at 50,000 notes the
/// table was a quarter of the library's memory. Sorted, the fields come out in the order
/// the encoding writes them, and equal tables have equal arrays.
///
/// - Complexity: lookup O(f) for f fields; adding a field O(f).
package struct FieldTable<Value: Sendable & Equatable>: Sendable, Equatable, Sequence {
  /// The field names, sorted.
  package private(set) var keys: [String] = []
  /// The fields, in the order of ``keys``; edited in place at an index from
  /// ``index(forKey:)``.
  package var values: [Value] = []

  package init() {}

  /// The table of `fields`, whatever their order.
  package init<S: Sequence>(_ fields: S) where S.Element == (key: String, value: Value) {
    let sorted = fields.sorted { fieldNameOrder($0.key, $1.key) }
    keys = sorted.map(\.key)
    values = sorted.map(\.value)
  }

  /// The table of `keys`, sorted by ``fieldNameOrder`` and no two equal, and their
  /// `values` (a decoder checks its input's order before it calls this).
  package init(sortedKeys keys: [String], values: [Value]) {
    self.keys = keys
    self.values = values
  }

  /// Adds the field `name`, which must come after every name in the table (a decoder
  /// checks its input's order before it calls this).
  mutating func append(_ name: String, _ field: Value) {
    keys.append(name)
    values.append(field)
  }

  package var count: Int { keys.count }

  /// The storage of the two arrays, taken without retaining them: valid while the table
  /// (or the document holding it) is held unchanged, as a typed walk holds its document.
  var unsafeBuffers: (keys: UnsafeBufferPointer<String>, values: UnsafeBufferPointer<Value>) {
    (keys.withUnsafeBufferPointer { $0 }, values.withUnsafeBufferPointer { $0 })
  }
  var isEmpty: Bool { keys.isEmpty }

  /// Makes room for `capacity` fields, so that adding them one at a time does not grow
  /// both arrays at the first, second and fourth.
  package mutating func reserveCapacity(_ capacity: Int) {
    keys.reserveCapacity(capacity)
    values.reserveCapacity(capacity)
  }

  /// The position of the field `name`, if the entity has it.
  func index(forKey name: String) -> Int? {
    keys.firstIndex(of: name)
  }

  package subscript(name: String) -> Value? {
    get { index(forKey: name).map { values[$0] } }
    set {
      if let position = index(forKey: name) {
        if let newValue {
          values[position] = newValue
        } else {
          keys.remove(at: position)
          values.remove(at: position)
        }
      } else if let newValue {
        let position = insertionPoint(of: name)
        keys.insert(name, at: position)
        values.insert(newValue, at: position)
      }
    }
  }

  /// Sets the field `name` to `value`, as the subscript does, taking the table's new
  /// list of names from `lists` if `name` is new, so that tables with the same names
  /// hold one list.
  mutating func set(_ value: Value, for name: String, sharingNames lists: inout FieldNameLists) {
    if let position = index(forKey: name) {
      values[position] = value
    } else {
      let position = insertionPoint(of: name)
      keys = lists.inserting(name, at: position, into: keys)
      values.insert(value, at: position)
    }
  }

  /// Replaces the table's list of names by an equal one from `lists`, if it holds one.
  mutating func shareNames(with lists: inout FieldNameLists) {
    keys = lists.shared(keys)
  }

  private func insertionPoint(of name: String) -> Int {
    keys.partitioningIndex { !fieldNameOrder($0, name) }
  }

  /// The fields in name order, as `(key, value)` pairs like a dictionary's.
  package struct Iterator: IteratorProtocol {
    fileprivate var base: Zip2Sequence<[String], [Value]>.Iterator

    package mutating func next() -> (key: String, value: Value)? {
      base.next().map { (key: $0.0, value: $0.1) }
    }
  }

  package func makeIterator() -> Iterator {
    Iterator(base: zip(keys, values).makeIterator())
  }
}

extension FieldTable: ExpressibleByDictionaryLiteral {
  /// The table of the literal's fields, whatever their order.
  package init(dictionaryLiteral elements: (String, Value)...) {
    self.init(elements.lazy.map { (key: $0.0, value: $0.1) })
  }
}
