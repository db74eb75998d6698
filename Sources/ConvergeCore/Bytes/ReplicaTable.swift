/// The encoder's side of a message's replica table: every ``ReplicaID`` the message
/// mentions, written once, sorted, so that the body can name a replica by its small index.
///
/// A 64-bit id costs 8 bytes; its index in the table costs one LEB128 byte for the first
/// 128 replicas. Sorting the ids (rather than numbering them in order of appearance)
/// makes equal states encode to equal bytes whatever order their maps iterate in.
///
/// ```swift
/// var builder = ReplicaTable.Builder()
/// builder.insert(contentsOf: vector.replicas)
/// let table = builder.build()
/// var writer = ByteWriter()
/// table.write(to: &writer)
/// for (replica, counter) in vector.entries {
///   table.writeIndex(of: replica, to: &writer)
///   writer.writeVarUInt(counter)
/// }
/// ```
///
/// Wire form: the number of ids (unsigned LEB128), then each id as 8 bytes little-endian,
/// strictly increasing.
///
/// - Complexity: building is O(m log m) for m mentions; looking up an index is O(log r)
///   for r replicas.
@usableFromInline
package struct ReplicaTable: Sendable {
  /// Collects the replicas a message will mention, in any order and with repeats.
  public struct Builder: Sendable {
    /// The replicas collected so far; sorted and deduplicated when it grows and on build.
    private var replicas: [ReplicaID] = []
    /// The size of `replicas` after its last compaction.
    private var compacted = 0

    public init() {}

    /// Adds `replica` to the table.
    public mutating func insert(_ replica: ReplicaID) {
      // Runs and entries often name the same replica in a row.
      if replicas.last == replica { return }
      replicas.append(replica)
      if replicas.count > 2 * compacted + 32 { compact() }
    }

    /// Adds every replica of `sequence` to the table.
    public mutating func insert<S: Sequence>(contentsOf sequence: S) where S.Element == ReplicaID {
      for replica in sequence { insert(replica) }
    }

    /// Sorts and deduplicates the collected replicas, so memory stays proportional to
    /// the distinct replicas rather than to the mentions.
    private mutating func compact() {
      replicas = Self.sortedUnique(replicas)
      compacted = replicas.count
    }

    static func sortedUnique(_ replicas: [ReplicaID]) -> [ReplicaID] {
      guard replicas.count > 1 else { return replicas }
      var unique = replicas
      unique.sort()
      // Deduplicate in place: `kept` replicas at the front are distinct.
      var kept = 1
      for index in 1..<unique.count where unique[index] != unique[kept - 1] {
        unique[kept] = unique[index]
        kept += 1
      }
      unique.removeLast(unique.count - kept)
      return unique
    }

    /// The table: the collected replicas sorted by id.
    public func build() -> ReplicaTable {
      ReplicaTable(sortedUnique: Self.sortedUnique(replicas))
    }
  }

  /// The replicas, sorted by id; a replica's index is its position here.
  public let replicas: [ReplicaID]

  /// The table of the replicas in `sequence` (in any order, repeats ignored).
  public init<S: Sequence>(_ sequence: S) where S.Element == ReplicaID {
    self.init(sortedUnique: Builder.sortedUnique(Array(sequence)))
  }

  private init(sortedUnique: [ReplicaID]) {
    replicas = sortedUnique
  }

  /// The number of replicas in the table.
  public var count: Int { replicas.count }

  /// The index of `replica`, or `nil` if the table does not hold it.
  ///
  /// - Complexity: O(log r) for r replicas (a binary search of the sorted ids).
  public func index(of replica: ReplicaID) -> Int? {
    let index = replicas.partitioningIndex { $0 >= replica }
    return index < replicas.count && replicas[index] == replica ? index : nil
  }

  /// Writes the table: its count, then each id as 8 bytes little-endian.
  public func write(to writer: inout ByteWriter) {
    writer.writeVarUInt(replicas.count)
    for replica in replicas { writer.writeUInt64(replica.rawValue) }
  }

  /// Writes the index of `replica` as unsigned LEB128.
  ///
  /// - Precondition: `replica` is in the table. Encoders build the table from the very
  ///   value they encode, so a missing replica is a bug in the encoder, never bad input.
  public func writeIndex(of replica: ReplicaID, to writer: inout ByteWriter) {
    guard let index = index(of: replica) else {
      preconditionFailure("replica \(replica) is missing from the replica table")
    }
    writer.writeVarUInt(index)
  }
}

/// The texts of a load that defers them: the codec's `DeferredTexts`, which the table
/// carries for every text of the load without this module naming the codec.
package protocol DeferredContent: AnyObject, Sendable {}

/// How a document state's text content is read with its content code.
package enum ContentReading: Sendable {
  /// Decoded and counted for the canonical check of the code.
  case counted
  /// Left coded, in a load that defers its texts to `texts` (and skips that check).
  case deferred(any DeferredContent)
  /// Decoded without counting: a deferred text's, decoded on its own after the load.
  case uncounted

  /// The texts of a load that defers them, if this is one.
  package var deferral: (any DeferredContent)? {
    if case .deferred(let texts) = self { texts } else { nil }
  }
}

/// The decoder's side of a message's replica table: maps the indexes in a body back to
/// replica ids, and tracks which ones the body used.
///
/// Reading checks the canonical form: ids strictly increasing (no duplicates, sorted).
/// ``checkAllReferenced()`` then lets a decoder insist that the table holds nothing the
/// body does not mention, so a message has exactly one valid encoding.
///
/// - Complexity: reading is O(r) for r replicas; resolving an index is O(1).
@usableFromInline
package struct DecodedReplicaTable: Sendable {
  /// The replicas, sorted by id; a replica's index is its position here.
  public let replicas: [ReplicaID]
  @usableFromInline var referenced: [Bool]
  @usableFromInline var unreferencedCount: Int
  /// A document state's content code (`FORMAT.md` §8.4.1), declared like the replicas
  /// before the entities that use it; nil in other messages, whose texts code their own
  /// content (§8.3.1).
  package var documentContent: DocumentContentCode.Reader?
  /// How a document state's text content is read (``ContentReading``).
  package var contentReading = ContentReading.counted
  /// The field names of the entity read last (``FieldWire/readFields(from:replicas:readText:)``),
  /// which the next one most often repeats.
  package var fieldNames: [String] = []

  /// Reads a table written by ``ReplicaTable/write(to:)``.
  ///
  /// - Throws: `countTooLarge` if the count exceeds what the remaining bytes can hold,
  ///   `truncated`, or `invalidValue` if the ids are not strictly increasing.
  public init(from reader: inout ByteReader) throws {
    let count = try reader.readCount(minimumBytesPerElement: 8)
    var replicas: [ReplicaID] = []
    replicas.reserveCapacity(count)
    for _ in 0..<count {
      let start = reader.offset
      let replica = ReplicaID(rawValue: try reader.readUInt64())
      if let previous = replicas.last, previous >= replica {
        throw ConvergeDecodingError.invalidValue(
          offset: start, reason: "replica table not strictly increasing")
      }
      replicas.append(replica)
    }
    self.replicas = replicas
    referenced = Array(repeating: false, count: count)
    unreferencedCount = count
  }

  /// The number of replicas in the table.
  public var count: Int { replicas.count }

  /// Reads a replica index (unsigned LEB128) and returns its replica.
  ///
  /// - Throws: `unknownReplicaIndex` for an index outside the table.
  @inlinable
  public mutating func readReplica(from reader: inout ByteReader) throws -> ReplicaID {
    let start = reader.offset
    let index = try reader.readVarUInt()
    return try replica(atIndex: index, offset: start)
  }

  /// Reads a replica index that must be greater than `previous` (the index of the last
  /// replica read), for lists sorted by replica. Returns the index and the replica.
  ///
  /// - Throws: `invalidValue` if the index is not greater than `previous`,
  ///   `unknownReplicaIndex` if it is outside the table.
  public mutating func readReplica(
    from reader: inout ByteReader, after previous: Int?
  ) throws -> (index: Int, replica: ReplicaID) {
    let start = reader.offset
    let raw = try reader.readVarUInt()
    if let previous, raw <= UInt64(previous) {
      throw ConvergeDecodingError.invalidValue(
        offset: start, reason: "replica indexes not strictly increasing")
    }
    let replica = try replica(atIndex: raw, offset: start)
    return (Int(raw), replica)
  }

  /// The replica at `index`, reported at `offset` if there is none.
  @inlinable
  public mutating func replica(atIndex index: UInt64, offset: Int) throws -> ReplicaID {
    guard index < UInt64(replicas.count) else {
      throw ConvergeDecodingError.unknownReplicaIndex(offset: offset)
    }
    let position = Int(index)
    if !referenced[position] {
      referenced[position] = true
      unreferencedCount -= 1
    }
    return replicas[position]
  }

  /// The UTF-8 of a text's content field: decoded with the document's content code, or
  /// on its own (``ContentCoding/decode(_:offset:)``) in a message without one.
  package mutating func decodeContent(
    _ field: ArraySlice<UInt8>, offset: Int
  ) throws -> ArraySlice<UInt8> {
    guard documentContent != nil else { return try ContentCoding.decode(field, offset: offset) }
    switch contentReading {
    case .counted: return try documentContent?.decode(field, offset: offset) ?? []
    case .deferred: return field
    case .uncounted: return try documentContent?.decodeUncounted(field, offset: offset) ?? []
    }
  }

  /// Throws `invalidValue` at `offset` unless the body used every replica in the table.
  public func checkAllReferenced(offset: Int) throws {
    guard unreferencedCount == 0 else {
      throw ConvergeDecodingError.invalidValue(
        offset: offset, reason: "replica table holds a replica the message never uses")
    }
  }
}
