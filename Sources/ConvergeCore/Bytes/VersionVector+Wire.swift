/// Wire form of a version vector inside a body (see `FORMAT.md`, "Version vector"): the
/// number of entries, then for each entry sorted by replica its replica index and its
/// counter, both unsigned LEB128. Indexes strictly increase; counters are at least 1
/// (a zero entry is the same as no entry, so it is never written).
extension VersionVector {
  /// Writes the vector; every replica of it must be in `table`.
  ///
  /// - Complexity: O(r log r) for r replicas.
  @usableFromInline
  package func write(to writer: inout ByteWriter, replicas table: ReplicaTable) {
    table.writeEntries(
      entries, replica: { $0.replica }, to: &writer,
      value: { entry, writer in writer.writeVarUInt(entry.counter) })
  }

  /// Reads a vector written by ``write(to:replicas:)``.
  ///
  /// - Throws: `countTooLarge`, `truncated`, LEB128 errors, `unknownReplicaIndex`, or
  ///   `invalidValue` for indexes out of order or a zero counter.
  @usableFromInline
  package init(from reader: inout ByteReader, replicas table: inout DecodedReplicaTable) throws {
    var entries: [(replica: ReplicaID, value: UInt64)] = []
    try Self.readEntries(from: &reader, replicas: &table) { count in
      // Most vectors read are a presence's removes: none (reserving none still costs).
      if count > 0 { entries.reserveCapacity(count) }
    } entry: { replica, counter in
      entries.append((replica, counter))
    }
    self.init(sortedEntries: entries)
  }

  /// Reads a vector written by ``write(to:replicas:)`` without building it: `count` gets
  /// the number of entries, then `entry` each entry in replica order.
  package static func readEntries(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    count: (Int) -> Void, entry: (ReplicaID, UInt64) -> Void
  ) throws {
    // An entry is at least one index byte and one counter byte.
    let entries = try reader.readCount(minimumBytesPerElement: 2)
    count(entries)
    // Indexes strictly increase, and the table's replicas do: the entries come sorted.
    var previous: Int?
    for _ in 0..<entries {
      let (index, replica) = try table.readReplica(from: &reader, after: previous)
      let start = reader.offset
      let counter = try reader.readVarUInt()
      guard counter > 0 else {
        throw ConvergeDecodingError.invalidValue(offset: start, reason: "zero counter")
      }
      entry(replica, counter)
      previous = index
    }
  }

  /// The vector as a standalone ``MessageKind/versionVector`` message: a replica table
  /// holding exactly its replicas, then the vector.
  ///
  /// Equal vectors give equal bytes.
  public func encoded() -> [UInt8] { encodedStandalone() }

  /// Decodes a message made by ``encoded()``.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for any input that ``encoded()`` could not
  ///   have produced.
  ///
  /// `bytes` may be an array, a slice of a larger buffer, or a `Data` (any collection of
  /// bytes; one that is not an array or a slice is copied once).
  @inlinable
  public init(decoding bytes: some Collection<UInt8>) throws {
    try self.init(decodingStandalone: bytes)
  }
}
