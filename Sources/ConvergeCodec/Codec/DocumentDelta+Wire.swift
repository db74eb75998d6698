#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Wire form of a delta (see `FORMAT.md`, "Delta"): the same layout as a document — one
/// replica table, the delta's causal context, the entities it touches sorted by key,
/// each with its presence and its fields sorted by name — with text fields carrying
/// only the runs the delta holds.
///
/// ```swift
/// let commit = replica.transact { tx in tx.insertText("a", at: 0, in: "body", of: note) }
/// let bytes = commit.delta.encoded()           // a few dozen bytes
/// try peer.apply(encodedDelta: bytes)
/// ```
///
/// Equal deltas encode to equal bytes; decoding accepts exactly those bytes. A decoded
/// delta applies exactly like the one encoded, though its text runs may be split
/// differently (they are joined into maximal runs on the wire).
///
/// - Complexity: O(d log d) for a delta of d bytes, both ways.
extension DocumentDelta {
  /// The delta as a message: a ``MessageKind/textEditDelta`` if it is one replica's edit
  /// of one text field (see `DocumentDelta+Compact.swift`), a
  /// ``MessageKind/documentDelta`` otherwise.
  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 64)
    encode(appendingTo: &writer)
    return writer.bytes
  }

  /// Appends the message ``encoded()`` returns to `writer`.
  package func encode(appendingTo writer: inout ByteWriter) {
    if let edit = textEditBody {
      Envelope.seal(kind: .textEditDelta, appendingTo: &writer) {
        Self.writeTextEdit(edit, to: &$0)
      }
      return
    }
    var builder = ReplicaTable.Builder()
    builder.insert(contentsOf: context.replicas)
    for entity in entities.values { entity.collectReplicas(into: &builder) }
    let table = builder.build()
    Envelope.seal(kind: .documentDelta, appendingTo: &writer) { writer in
      table.write(to: &writer)
      context.write(to: &writer, replicas: table)
      writer.writeVarUInt(entities.count)
      for (key, entity) in entities.sorted(by: { $0.key < $1.key }) {
        key.write(to: &writer)
        entity.write(to: &writer, replicas: table)
      }
    }
  }

  /// Decodes a message made by ``encoded()``.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for any input that ``encoded()`` could not
  ///   have produced.
  ///
  /// `bytes` may be an array, a slice of a larger buffer, or a `Data` (any collection of
  /// bytes; one that is not an array or a slice is copied once).
  @inlinable
  public init(decoding bytes: some Collection<UInt8>) throws {
    self = try Self.decode(Envelope.slice(bytes))
  }

  /// Decodes either delta kind; any other kind is `unexpectedMessageKind` (expecting
  /// ``MessageKind/documentDelta``).
  @usableFromInline
  static func decode(_ bytes: ArraySlice<UInt8>) throws -> DocumentDelta {
    try Envelope.decode(bytes, as: [.documentDelta, .textEditDelta]) { kind, reader in
      kind == .textEditDelta ? try readTextEditBody(&reader) : try readBody(&reader)
    }
  }

  static func readBody(_ reader: inout ByteReader) throws -> DocumentDelta {
    var delta = DocumentDelta()
    (delta.context, delta.entities) = try EntityDelta.readBody(from: &reader)
    // A delta with the compact form has no other encoding.
    guard delta.textEditBody == nil else {
      throw ConvergeDecodingError.invalidValue(
        offset: reader.offset, reason: "delta written in the general form has the text edit form")
    }
    return delta
  }
}

extension EntityDelta: WireEntity {
  typealias Text = RGADelta
  typealias List = MovableListDelta

  package func collectReplicas(into builder: inout ReplicaTable.Builder) {
    presence.collectReplicas(into: &builder)
    for field in fields.values { field.collectReplicas(into: &builder, runs: field.runs) }
  }

  func write(to writer: inout ByteWriter, replicas table: ReplicaTable) {
    presence.write(to: &writer, replicas: table)
    writer.writeVarUInt(fields.count)
    // The two arrays zipped here, not the table's own iterator: generic, declared in
    // another module, it ran unspecialized (runtime metadata at every field).
    for (name, field) in zip(fields.keys, fields.values) {
      writer.writeString(name)
      field.write(to: &writer, replicas: table) { writer in
        (field.runs ?? RGADelta()).write(to: &writer, replicas: table)
      }
    }
  }

  init(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    checks: inout FieldChecks
  ) throws {
    let presence = try Presence(from: &reader, replicas: &table)
    let fields: FieldTable<FieldDelta> = try FieldWire.readFields(
      from: &reader, replicas: &table, presence: presence, checks: &checks
    ) { reader, table in
      try RGADelta(fromDelta: &reader, replicas: &table)
    }
    self.init(presence: presence, fields: fields)
  }
}

extension RGADelta {
  /// Reads the runs of a delta: as ``init(from:replicas:)``, and refusing runs that share
  /// a counter (``hasRunsSharingCounters``), which a state may hold from separate
  /// messages but no single delta does.
  init(fromDelta reader: inout ByteReader, replicas table: inout DecodedReplicaTable) throws {
    let start = reader.offset
    try self.init(from: &reader, replicas: &table)
    guard !hasRunsSharingCounters else {
      throw ConvergeDecodingError.invalidValue(offset: start, reason: "runs that share a counter")
    }
  }
}
