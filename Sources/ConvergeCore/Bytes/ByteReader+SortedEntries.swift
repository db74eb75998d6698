/// Reading the wire's sorted maps (entities, fields, set elements, record keys): a count,
/// then each key followed by its value, keys strictly increasing, so that every map has
/// exactly one encoding.
extension ByteReader {
  /// What a map's keys are called in its errors: "`plural` not strictly increasing" and
  /// "duplicate `singular`".
  @usableFromInline
  package struct KeyNames {
    @usableFromInline let plural: String
    @usableFromInline let singular: String

    @inlinable package init(plural: String, singular: String) {
      self.plural = plural
      self.singular = singular
    }
  }

  /// Reads `count` entries: a key with `readKey`, refused unless `precedes` puts the
  /// previous key before it, then its value with `readValue`, which stores it and returns
  /// `false` for a key equal to an earlier one (strings can be equal, as canonically
  /// equivalent, without being next to each other in scalar order), which is refused.
  /// `readValue` also gets the offset where the entry starts, for its own errors.
  ///
  /// Inlined so that the closures of each map are too: these loops decode every delta.
  /// Inlinable, for the same reason, into the codec in another module: `@inline(__always)`
  /// alone does not cross a module boundary, and there each entry went through closure
  /// contexts and the runtime's generic metadata (#46).
  @inlinable @inline(__always)
  package mutating func readSortedEntries<Key>(
    count: Int, keys names: KeyNames, readKey: (inout ByteReader) throws -> Key,
    precedes: (Key, Key) -> Bool, readValue: (inout ByteReader, Key, _ start: Int) throws -> Bool
  ) throws {
    var previous: Key?
    for _ in 0..<count {
      let start = offset
      let key = try readKey(&self)
      if let previous, !precedes(previous, key) {
        throw ConvergeDecodingError.invalidValue(
          offset: start, reason: "\(names.plural) not strictly increasing")
      }
      guard try readValue(&self, key, start) else {
        throw ConvergeDecodingError.invalidValue(
          offset: start, reason: "duplicate \(names.singular)")
      }
      previous = key
    }
  }

  /// Reads a count of entries, each at least `minimumBytesPerEntry` bytes, and the
  /// entries as ``readSortedEntries(count:keys:readKey:precedes:readValue:)`` does, into
  /// a dictionary.
  @inlinable @inline(__always)
  package mutating func readSortedMap<Key: Hashable, Value>(
    minimumBytesPerEntry: Int, keys names: KeyNames, readKey: (inout ByteReader) throws -> Key,
    precedes: (Key, Key) -> Bool, readValue: (inout ByteReader, _ start: Int) throws -> Value
  ) throws -> [Key: Value] {
    let count = try readCount(minimumBytesPerElement: minimumBytesPerEntry)
    var map: [Key: Value] = [:]
    map.reserveCapacity(count)
    try readSortedEntries(count: count, keys: names, readKey: readKey, precedes: precedes) {
      reader, key, start in
      map.updateValue(try readValue(&reader, start), forKey: key) == nil
    }
    return map
  }
}
