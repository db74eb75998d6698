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
  /// of one text field that the text edit records carry (see
  /// `DocumentDelta+Compact.swift`), a ``MessageKind/documentDelta`` otherwise.
  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 64)
    encode(appendingTo: &writer)
    return writer.bytes
  }

  /// Appends the message ``encoded()`` returns to `writer`.
  package func encode(appendingTo writer: inout ByteWriter) {
    if let edit = textEditBody {
      // A keystroke's runs are written as they are; other runs in their canonical shape,
      // if records carry them. `textEditMessage` decides the same, but the body returned
      // through its optional cost a keystroke's transaction and `encoded()` 2.55% more
      // instructions (BENCHMARKS.md, the nineteenth session's review).
      if Self.isMessageKeystroke(edit.runs) {
        Envelope.seal(kind: .textEditDelta, appendingTo: &writer) {
          Self.writeTextEdit(edit, to: &$0)
        }
        return
      }
      if let runs = Self.messageRunsInGeneral(of: edit.runs) {
        Envelope.seal(kind: .textEditDelta, appendingTo: &writer) {
          Self.writeTextEdit(TextEditBody(key: edit.key, field: edit.field, runs: runs), to: &$0)
        }
        return
      }
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

  /// Decodes either delta kind, or the earlier form of a text edit; any other kind is
  /// `unexpectedMessageKind` (expecting ``MessageKind/documentDelta``).
  @usableFromInline
  static func decode(_ bytes: ArraySlice<UInt8>) throws -> DocumentDelta {
    try Envelope.decode(bytes, as: [.documentDelta, .textEditDelta, .legacyTextEditDelta]) {
      kind, reader in
      switch kind {
      case .textEditDelta: try readTextEditBody(&reader)
      case .legacyTextEditDelta: try readLegacyTextEditBody(&reader)
      default: try readBody(&reader)
      }
    }
  }

  static func readBody(_ reader: inout ByteReader) throws -> DocumentDelta {
    var delta = DocumentDelta()
    (delta.context, delta.entities) = try EntityDelta.readBody(from: &reader)
    // A delta that has the text edit form has no other encoding.
    guard delta.textEditMessage == nil else {
      throw ConvergeDecodingError.invalidValue(
        offset: reader.offset, reason: "delta written in the general form has the text edit form")
    }
    return delta
  }
}

extension EntityDelta: WireEntity {
  package func collectReplicas(into builder: inout ReplicaTable.Builder) {
    Self.collectReplicas(of: presence, fields, into: &builder)
  }

  static func heldRuns(of field: FieldDelta) -> RGADelta? { field.runs }

  func write(to writer: inout ByteWriter, replicas table: ReplicaTable) {
    Self.write(presence, fields, to: &writer, replicas: table) { _, runs, writer in
      runs.write(to: &writer, replicas: table)
    }
  }

  static func readText(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    checks: inout FieldChecks
  ) throws -> RGADelta {
    try RGADelta(fromDelta: &reader, replicas: &table) { checks.checkRuns($0, $1, of: .text) }
  }
}

extension RGADelta {
  /// Reads the runs of a delta: as ``init(from:replicas:inspecting:)`` (showing `inspect`
  /// their headers and deletes), and refusing runs that share a counter
  /// (``hasRunsSharingCounters``), which a state may hold from separate messages but no
  /// single delta does.
  @inline(__always)
  init(
    fromDelta reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    inspecting inspect: ([TextWire.RunHeader], [RGADelta.Delete]) -> Void = { _, _ in }
  ) throws {
    let start = reader.offset
    try self.init(from: &reader, replicas: &table, inspecting: inspect)
    guard !hasRunsSharingCounters else {
      throw ConvergeDecodingError.invalidValue(offset: start, reason: "runs that share a counter")
    }
  }
}
