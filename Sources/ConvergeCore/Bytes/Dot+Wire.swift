/// Wire form of a dot inside a body (see `FORMAT.md`, "Dot"): its replica index and its
/// counter, both unsigned LEB128. Counters start at 1, so a zero counter is refused.
extension Dot {
  /// Writes the dot; its replica must be in `table`.
  package func write(to writer: inout ByteWriter, replicas table: ReplicaTable) {
    table.writeIndex(of: replica, to: &writer)
    writer.writeVarUInt(counter)
  }

  /// Reads a dot written by ``write(to:replicas:)``.
  ///
  /// - Throws: `truncated`, LEB128 errors, `unknownReplicaIndex`, or `invalidValue` for a
  ///   zero counter.
  @inlinable
  package init(from reader: inout ByteReader, replicas table: inout DecodedReplicaTable) throws {
    let replica = try table.readReplica(from: &reader)
    let start = reader.offset
    let counter = try reader.readVarUInt()
    guard counter > 0 else {
      throw ConvergeDecodingError.invalidValue(offset: start, reason: "zero dot counter")
    }
    self.init(replica: replica, counter: counter)
  }
}

/// Wire form of a timestamp (see `FORMAT.md`, "Timestamp"): its packed 64-bit value as 8
/// bytes little-endian. Current wall times fill 57 bits, so LEB128 would take 9 bytes.
extension Timestamp {
  /// Writes the timestamp.
  package func write(to writer: inout ByteWriter) {
    writer.writeUInt64(rawValue)
  }

  /// Reads a timestamp written by ``write(to:)``. Every 64-bit value is a timestamp.
  ///
  /// - Throws: `truncated` if fewer than 8 bytes remain.
  @inlinable package init(from reader: inout ByteReader) throws {
    self.init(rawValue: try reader.readUInt64())
  }
}
