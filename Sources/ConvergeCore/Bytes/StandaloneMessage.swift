/// A value that also travels alone as a message of its own kind (a version vector, a
/// causal context): a replica table holding exactly its replicas, then the value written
/// against it. The framing lives here once; each value says only how it writes and reads.
@usableFromInline
protocol StandaloneMessage {
  /// The kind of the value's message.
  static var messageKind: MessageKind { get }
  /// The replicas the value names, in any order, each at least once.
  var replicas: [ReplicaID] { get }
  func write(to writer: inout ByteWriter, replicas table: ReplicaTable)
  init(from reader: inout ByteReader, replicas table: inout DecodedReplicaTable) throws
}

extension StandaloneMessage {
  /// The value as a message of ``messageKind``; equal values give equal bytes.
  func encodedStandalone() -> [UInt8] {
    Envelope.seal(kind: Self.messageKind) { writeStandaloneBody(to: &$0) }
  }

  /// Writes the body of ``encodedStandalone()``'s message: the replica table, then the
  /// value.
  func writeStandaloneBody(to writer: inout ByteWriter) {
    let table = ReplicaTable(replicas)
    table.write(to: &writer)
    write(to: &writer, replicas: table)
  }

  /// Decodes a message made by ``encodedStandalone()``.
  @inlinable
  init(decodingStandalone bytes: some Collection<UInt8>) throws {
    self = try Envelope.decode(bytes, as: Self.messageKind, Self.readStandaloneBody)
  }

  @usableFromInline
  static func readStandaloneBody(_ reader: inout ByteReader) throws -> Self {
    var table = try DecodedReplicaTable(from: &reader)
    let value = try Self(from: &reader, replicas: &table)
    try table.checkAllReferenced(offset: reader.offset)
    return value
  }
}

extension VersionVector: StandaloneMessage {
  @usableFromInline
  static var messageKind: MessageKind { .versionVector }
}

extension CausalContext: StandaloneMessage {
  @usableFromInline
  static var messageKind: MessageKind { .causalContext }
}
