/// The compact wire form of the commonest delta, a live text edit (see `FORMAT.md`,
/// "Text edit delta"): one replica's inserts and deletes in one text field of one entity,
/// and nothing else.
///
/// Such a delta's causal context is exactly the dots of its runs, and its entity
/// presence exactly the latest of them, so the compact form leaves both out and the
/// decoder derives them:
///
/// ```
/// text-edit := replica-table  type:string  id:string  name:string  text
/// ```
///
/// ``DocumentDelta/encoded()`` writes this form (message kind
/// ``MessageKind/textEditDelta``) whenever it applies and the general form otherwise;
/// the general decoder refuses a delta that has the compact form, so every delta still
/// has exactly one encoding. Either kind decodes with ``DocumentDelta/init(decoding:)``.
extension DocumentDelta {
  /// What a text edit message (or a frame's runs) writes of a delta that has the compact
  /// form.
  package struct TextEditBody {
    package var key: EntityKey
    package var field: String
    package var runs: RGADelta
  }

  /// The delta's parts if it is one replica's edit of one text field: its ``TextEdit``
  /// when it is kept as one, or else tables holding one entity whose presence only adds
  /// the latest dot of the runs, one text field with runs of one replica, and a context
  /// holding exactly the runs' dots (a peer's `delta(since:)`, or joined deltas).
  package var textEditBody: TextEditBody? {
    if let edit = storedTextEdit {
      return TextEditBody(key: edit.key, field: edit.field, runs: edit.runs)
    }
    guard let (contextReplica, contextCounters) = context.onlyEntry else { return nil }
    var entityIterator = entities.makeIterator()
    guard entities.count == 1, let (key, entity) = entityIterator.next(),
      entity.fields.count == 1
    else { return nil }
    var fieldIterator = entity.fields.makeIterator()
    guard let (field, fieldDelta) = fieldIterator.next(),
      case .text(let runs) = fieldDelta,
      let added = entity.presence.onlyAdd
    else { return nil }
    // A local edit is usually one run: its events are one range, found without building
    // a set of ranges.
    if let (replica, range) = Self.singleRunEvents(of: runs) {
      guard replica == contextReplica, added.replica == replica,
        added.counter == range.upperBound, contextCounters.isExactly(range)
      else { return nil }
      return TextEditBody(key: key, field: field, runs: runs)
    }
    guard let (replica, counters) = Self.events(of: runs), replica == contextReplica,
      added.replica == replica, added.counter == counters.maximum, contextCounters == counters
    else { return nil }
    return TextEditBody(key: key, field: field, runs: runs)
  }

  /// Writes the body of a ``MessageKind/textEditDelta`` message.
  static func writeTextEdit(_ edit: TextEditBody, to writer: inout ByteWriter) {
    if writeSingleRunTextEdit(edit, to: &writer) { return }
    writeTextEditInGeneral(edit, to: &writer)
  }

  /// Writes the body of a ``MessageKind/textEditDelta`` message through the general run
  /// encoder (canonical runs, replica table builder).
  static func writeTextEditInGeneral(_ edit: TextEditBody, to writer: inout ByteWriter) {
    var builder = ReplicaTable.Builder()
    edit.runs.collectReplicas(into: &builder)
    let table = builder.build()
    table.write(to: &writer)
    edit.key.write(to: &writer)
    writer.writeString(edit.field)
    edit.runs.write(to: &writer, replicas: table)
  }

  /// Writes the body of a text edit that is one insert run with content, or one delete
  /// run, byte for byte as ``writeTextEditInGeneral(_:to:)`` would, without building the
  /// canonical runs, the replica table or the content buffer. Returns `false`, having
  /// written nothing, for any other shape.
  ///
  /// A single run is already canonical, the table holds at most two replicas, and a
  /// message without inserts implies only the first delete dot of its replica.
  static func writeSingleRunTextEdit(_ edit: TextEditBody, to writer: inout ByteWriter) -> Bool {
    let runs = edit.runs
    // A right origin of a third replica needs the general table.
    if runs.deletes.isEmpty, runs.inserts.count == 1, let insert = runs.inserts.first,
      !insert.content.isEmpty,
      insert.rightOrigin.map({
        $0.replica == insert.id.replica || $0.replica == insert.origin?.replica
      }) ?? true
    {
      let replica = insert.id.replica
      let table = SmallReplicaTable(replica, insert.origin?.replica ?? replica)
      table.write(to: &writer)
      edit.key.write(to: &writer)
      writer.writeString(edit.field)
      let counter = insert.id.counter
      writer.writeVarUInt(1)  // one group of insert runs
      writer.writeVarUInt(table.index(of: replica))
      writer.writeVarUInt(1)  // one run
      writer.writeVarUInt(counter - 1)
      writer.writeVarUInt(insert.content.count)
      writer.writeVarInt(Int64(bitPattern: insert.lamport &- counter))
      switch insert.origin {
      case nil:
        writer.writeVarUInt(TextWire.headOrigin)
      case let origin? where origin.replica == replica && origin.counter < counter:
        writer.writeVarUInt(TextWire.firstOwnOrigin + (counter - 1 - origin.counter))
      case let origin?:
        writer.writeVarUInt(TextWire.explicitOrigin)
        writer.writeVarUInt(table.index(of: origin.replica))
        writer.writeVarUInt(origin.counter)
      }
      if let code = TextWire.rightOriginCode(
        insert.rightOrigin, of: insert.id, origin: insert.origin)
      {
        writer.writeVarUInt(code)
      } else if let right = insert.rightOrigin {
        writer.writeVarUInt(TextWire.explicitOrigin)
        writer.writeVarUInt(table.index(of: right.replica))
        writer.writeVarUInt(right.counter)
      }
      writer.writeTextContent(insert.content)
      writer.writeVarUInt(0)  // no delete groups
      return true
    }
    if runs.inserts.isEmpty, runs.deletes.count == 1, let delete = runs.deletes.first,
      delete.count > 0, delete.count <= TextWire.maximumDeleteRun
    {
      let replica = delete.dot.replica
      let table = SmallReplicaTable(replica, delete.target.replica)
      table.write(to: &writer)
      edit.key.write(to: &writer)
      writer.writeString(edit.field)
      writer.writeVarUInt(0)  // no insert groups
      writer.writeVarUInt(0)  // no content
      writer.writeVarUInt(1)  // one group of delete runs
      writer.writeVarUInt(table.index(of: replica))
      writer.writeVarUInt(1)  // one run
      let impliedDot = delete.dot.counter == 1
      let explicit = delete.target.replica != replica
      writer.writeVarUInt(
        delete.count << 3 | (impliedDot ? 4 : 0) | (delete.isDescending ? 2 : 0)
          | (explicit ? 1 : 0))
      if !impliedDot { writer.writeVarUInt(delete.dot.counter - 1) }
      if explicit { writer.writeVarUInt(table.index(of: delete.target.replica)) }
      writer.writeVarInt(Int64(bitPattern: delete.target.counter))
      return true
    }
    return false
  }

  /// Reads the body of a ``MessageKind/textEditDelta`` message and derives the context
  /// and presence it leaves out.
  static func readTextEditBody(_ reader: inout ByteReader) throws -> DocumentDelta {
    var table = try DecodedReplicaTable(from: &reader)
    let key = try EntityKey(from: &reader)
    let field = try reader.readString()
    let runsStart = reader.offset
    let runs = try RGADelta(fromDelta: &reader, replicas: &table)
    try table.checkAllReferenced(offset: reader.offset)
    guard let delta = textEdit(runs, field: field, of: key) else {
      throw ConvergeDecodingError.invalidValue(
        offset: runsStart, reason: "text edit without runs, or with runs of several replicas")
    }
    return delta
  }
}

/// The replica table of a message that mentions one or two replicas.
private struct SmallReplicaTable {
  var first: ReplicaID
  var second: ReplicaID?

  init(_ one: ReplicaID, _ other: ReplicaID) {
    if one == other {
      first = one
    } else {
      first = Swift.min(one, other)
      second = Swift.max(one, other)
    }
  }

  /// The index of `replica`, one of the two the table was made of.
  func index(of replica: ReplicaID) -> Int { replica == first ? 0 : 1 }

  /// Writes the table as ``ReplicaTable/write(to:)`` does.
  func write(to writer: inout ByteWriter) {
    writer.writeVarUInt(second == nil ? 1 : 2)
    writer.writeUInt64(first.rawValue)
    if let second { writer.writeUInt64(second.rawValue) }
  }
}
