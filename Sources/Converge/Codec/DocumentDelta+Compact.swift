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
  /// The parts of a delta that has the compact form.
  struct TextEdit {
    var key: EntityKey
    var field: String
    var runs: RGADelta
  }

  /// The delta's parts if it is one replica's edit of one text field: one entity whose
  /// presence only adds the latest dot of the runs, one text field with runs of one
  /// replica, and a context holding exactly the runs' dots.
  var textEdit: TextEdit? {
    guard entities.count == 1, let (key, entity) = entities.first, entity.fields.count == 1,
      let (field, fieldDelta) = entity.fields.first, case .text(let runs) = fieldDelta,
      entity.presence.removed.isEmpty, entity.presence.added.count == 1,
      context.replicaCount == 1, let (replica, counters) = Self.events(of: runs),
      entity.presence.added[replica] == counters.maximum,
      context.counters(of: replica) == counters
    else { return nil }
    return TextEdit(key: key, field: field, runs: runs)
  }

  /// The replica that made every run of `runs` and the counters of their dots, or `nil`
  /// if the runs are empty, name several replicas, or run past the counter space.
  static func events(of runs: RGADelta) -> (replica: ReplicaID, counters: CounterRanges)? {
    var replica: ReplicaID?
    var counters = CounterRanges()
    func add(_ first: Dot, _ count: UInt64) -> Bool {
      guard count > 0 else { return true }
      let (last, overflow) = first.counter.addingReportingOverflow(count - 1)
      guard !overflow, first.counter > 0, replica == nil || replica == first.replica else {
        return false
      }
      replica = first.replica
      counters.insert(first.counter...last)
      return true
    }
    for insert in runs.inserts where !add(insert.id, UInt64(insert.scalars.count)) {
      return nil
    }
    for delete in runs.deletes where !add(delete.dot, delete.count) { return nil }
    guard let replica else { return nil }
    return (replica, counters)
  }

  /// Writes the body of a ``MessageKind/textEditDelta`` message.
  static func writeTextEdit(_ edit: TextEdit, to writer: inout ByteWriter) {
    var builder = ReplicaTable.Builder()
    edit.runs.collectReplicas(into: &builder)
    let table = builder.build()
    table.write(to: &writer)
    edit.key.write(to: &writer)
    writer.writeString(edit.field)
    edit.runs.write(to: &writer, replicas: table)
  }

  /// Reads the body of a ``MessageKind/textEditDelta`` message and derives the context
  /// and presence it leaves out.
  static func readTextEditBody(_ reader: inout ByteReader) throws -> DocumentDelta {
    var table = try DecodedReplicaTable(from: &reader)
    let key = try EntityKey(from: &reader)
    let field = try reader.readString()
    let runsStart = reader.offset
    let runs = try RGADelta(from: &reader, replicas: &table)
    try table.checkAllReferenced(offset: reader.offset)
    guard let (replica, counters) = events(of: runs) else {
      throw ConvergeDecodingError.invalidValue(
        offset: runsStart, reason: "text edit without runs, or with runs of several replicas")
    }
    let last = Dot(replica: replica, counter: counters.maximum)
    var delta = DocumentDelta()
    delta.context.insert(replica: replica, counters: counters)
    delta.entities[key] = EntityDelta(presence: .add(last), fields: [field: .text(runs)])
    return delta
  }
}
