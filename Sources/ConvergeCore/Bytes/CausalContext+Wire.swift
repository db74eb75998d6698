/// Wire form of a set of counters (see `FORMAT.md`, "Counter ranges"): the number of
/// ranges, then for each range in increasing order its gap and its width, both unsigned
/// LEB128.
///
/// The first range's gap is its lower bound; a later range's gap is
/// `lower - (previous upper + 2)`, the number of missing counters before it minus one.
/// The width is `upper - lower`. Ranges that are empty, unsorted, overlapping or touching
/// therefore cannot be expressed at all: every byte sequence that decodes is the one
/// canonical encoding of its set. Only arithmetic overflow past `UInt64.max` is rejected.
extension CounterRanges {
  /// Writes the ranges.
  ///
  /// - Complexity: O(g) for g ranges.
  package func write(to writer: inout ByteWriter) {
    writer.writeVarUInt(ranges.count)
    var previousUpper: UInt64?
    for range in ranges {
      // The stored ranges are sorted and never touch, so the subtraction cannot underflow.
      let gap = previousUpper.map { range.lowerBound - $0 - 2 } ?? range.lowerBound
      writer.writeVarUInt(gap)
      writer.writeVarUInt(range.upperBound - range.lowerBound)
      previousUpper = range.upperBound
    }
  }

  /// Reads ranges written by ``write(to:)``.
  ///
  /// - Throws: `countTooLarge`, `truncated`, LEB128 errors, or `integerOverflow` if a
  ///   bound would exceed `UInt64.max`.
  package init(from reader: inout ByteReader) throws {
    // A range is at least one gap byte and one width byte.
    let count = try reader.readCount(minimumBytesPerElement: 2)
    var ranges: [ClosedRange<UInt64>] = []
    ranges.reserveCapacity(count)
    var previousUpper: UInt64?
    for _ in 0..<count {
      let start = reader.offset
      let gap = try reader.readVarUInt()
      let lower: UInt64
      if let previousUpper {
        let firstFree = try ByteReader.checkedAdd(previousUpper, 2, at: start)
        lower = try ByteReader.checkedAdd(firstFree, gap, at: start)
      } else {
        lower = gap
      }
      let widthStart = reader.offset
      let width = try reader.readVarUInt()
      let upper = try ByteReader.checkedAdd(lower, width, at: widthStart)
      ranges.append(lower...upper)
      previousUpper = upper
    }
    self.init(ranges: ranges)
  }
}

/// Wire form of a causal context inside a body (see `FORMAT.md`, "Causal context"): the
/// number of replicas, then for each replica sorted by id its replica index (strictly
/// increasing) and its non-empty ``CounterRanges``.
extension CausalContext {
  /// Writes the context; every replica of it must be in `table`.
  ///
  /// - Complexity: O(r log r + g) for r replicas and g ranges.
  @usableFromInline
  package func write(to writer: inout ByteWriter, replicas table: ReplicaTable) {
    table.writeEntries(
      entries, replica: { $0.replica }, to: &writer,
      value: { entry, writer in entry.counters.write(to: &writer) })
  }

  /// Reads a context written by ``write(to:replicas:)``.
  ///
  /// - Throws: `countTooLarge`, `truncated`, LEB128 errors, `unknownReplicaIndex`,
  ///   `integerOverflow`, or `invalidValue` for indexes out of order or a replica with no
  ///   ranges.
  @usableFromInline
  package init(from reader: inout ByteReader, replicas table: inout DecodedReplicaTable) throws {
    // A replica is at least an index byte, a range count byte and one two-byte range.
    let count = try reader.readCount(minimumBytesPerElement: 4)
    var context = CausalContext()
    var previous: Int?
    for _ in 0..<count {
      let (index, replica) = try table.readReplica(from: &reader, after: previous)
      let start = reader.offset
      let counters = try CounterRanges(from: &reader)
      guard !counters.isEmpty else {
        throw ConvergeDecodingError.invalidValue(offset: start, reason: "replica with no counters")
      }
      context.insert(replica: replica, counters: counters)
      previous = index
    }
    self = context
  }

  /// The context as a standalone ``MessageKind/causalContext`` message: a replica table
  /// holding exactly its replicas, then the context.
  ///
  /// Equal contexts give equal bytes.
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

  /// Writes the body of ``encoded()``'s message (a replica table holding exactly the
  /// context's replicas, then the context) into another message's body: the relay's
  /// messages carry contexts this way.
  package func writeMessageBody(to writer: inout ByteWriter) {
    writeStandaloneBody(to: &writer)
  }

  /// Reads a context written by ``writeMessageBody(to:)``.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for anything it could not have written.
  package init(readingMessageBody reader: inout ByteReader) throws {
    self = try Self.readStandaloneBody(&reader)
  }
}
