extension ReplicaTable {
  /// Writes entries sorted by replica, as a version vector and a causal context hold
  /// them: their count, then for each entry its replica's index followed by what
  /// `writeValue` writes of it.
  ///
  /// - Complexity: O(r log r) for r entries, plus what `writeValue` costs.
  @inline(__always)
  func writeEntries<Entry>(
    _ entries: [Entry], replica: (Entry) -> ReplicaID, to writer: inout ByteWriter,
    value writeValue: (Entry, inout ByteWriter) -> Void
  ) {
    writer.writeVarUInt(entries.count)
    for entry in entries {
      writeIndex(of: replica(entry), to: &writer)
      writeValue(entry, &writer)
    }
  }
}
