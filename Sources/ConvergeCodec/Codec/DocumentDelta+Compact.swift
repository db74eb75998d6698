/// The self-contained message of the commonest delta, a live text edit (see `FORMAT.md`,
/// "Text edit delta"): one replica's inserts and deletes in one text field of one entity,
/// and nothing else.
///
/// Such a delta's causal context is exactly the dots of its runs, and its entity
/// presence exactly the latest of them, so the message leaves both out and the decoder
/// derives them. Its body is the records a session frame writes (`RunCoder`), from an
/// empty context: the target (key and field) and the author in full, then the runs,
/// each stating only what the records before it in the message do not predict:
///
/// ```
/// text-edit := target-record  author-record  run-record…
/// ```
///
/// ``DocumentDelta/encoded()`` writes this form (message kind
/// ``MessageKind/textEditDelta``) whenever the records can carry the delta and the
/// general form otherwise; the general decoder refuses a delta that has this form, so
/// every delta still has exactly one encoding. Either kind, and the earlier form of a
/// text edit (``MessageKind/legacyTextEditDelta``, read, never written), decodes with
/// ``DocumentDelta/init(decoding:)``.
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

  /// The delta's parts if it is a text edit the message of ``MessageKind/textEditDelta``
  /// carries: its ``textEditBody``, with the runs as that message writes them
  /// (``messageRuns(of:)``).
  var textEditMessage: TextEditBody? {
    guard var edit = textEditBody else { return nil }
    // A keystroke's runs as they are: no second body to build and destroy.
    if Self.isMessageKeystroke(edit.runs) { return edit }
    guard let runs = Self.messageRunsInGeneral(of: edit.runs) else { return nil }
    edit.runs = runs
    return edit
  }

  /// `runs` in the canonical shape (``RGADelta/canonicalRuns()``: in counter order,
  /// joined into maximal runs), as the records of a text edit message carry them, or
  /// `nil` when they cannot: an insert run the same runs delete (whose content a
  /// message leaves out, which records cannot), or an insert and a delete sharing a
  /// counter. Scalars whose content was dropped (tombstones a peer already deleted)
  /// travel as U+FFFD, as they do in a state.
  ///
  /// The choice depends on the runs' ids alone, never on their content, so a delta and
  /// its decoded copy take the same form.
  ///
  /// - Complexity: O(1) for one run; O(d log d) for d runs.
  static func messageRuns(of runs: RGADelta) -> RGADelta? {
    isMessageKeystroke(runs) ? runs : messageRunsInGeneral(of: runs)
  }

  /// Whether `runs` are a keystroke's, canonical as they are: one insert run with its
  /// content, or one delete run.
  @inline(__always)
  static func isMessageKeystroke(_ runs: RGADelta) -> Bool {
    if runs.deletes.isEmpty, runs.inserts.count == 1 {
      return !runs.inserts[0].content.isEmpty
    }
    return runs.inserts.isEmpty && runs.deletes.count == 1 && runs.deletes[0].count > 0
      && runs.deletes[0].count <= TextWire.maximumDeleteRun
  }

  /// ``messageRuns(of:)`` without its shortcut for a keystroke's runs (its tests compare
  /// the two).
  static func messageRunsInGeneral(of runs: RGADelta) -> RGADelta? {
    let (insertRuns, deletes) = runs.canonicalRuns()
    var inserts: [RGADelta.Insert] = []
    inserts.reserveCapacity(insertRuns.count)
    for run in insertRuns {
      var scalars: [Unicode.Scalar] = []
      scalars.reserveCapacity(run.length)
      for part in run.parts {
        if part.isContentDropped {
          scalars.append(contentsOf: repeatElement(TextWire.placeholder, count: part.length))
        } else {
          scalars.append(contentsOf: part.content)
        }
      }
      let header = run.header
      inserts.append(
        RGADelta.Insert(
          id: header.id, lamport: header.lamport, origin: header.origin,
          rightOrigin: header.rightOrigin, scalars: scalars))
    }
    guard !inserts.isEmpty || !deletes.isEmpty, !deletesOwnInsert(inserts, deletes) else {
      return nil
    }
    // The records go in counter order; a counter both kinds of run use is refused there.
    var end: UInt64 = 0
    let ordered = RGADelta.inCounterOrder(inserts, deletes) { start, length in
      guard start >= end else { return false }
      end = start + length
      return true
    }
    guard ordered else { return nil }
    var canonical = RGADelta()
    canonical.inserts = inserts
    canonical.deletes = deletes
    return canonical
  }

  /// Whether one of `deletes` removes a scalar of `inserts`: one replica's insert runs,
  /// in counter order, none overlapping.
  ///
  /// - Complexity: O(d log i) for d delete runs and i insert runs.
  static func deletesOwnInsert(_ inserts: [RGADelta.Insert], _ deletes: [RGADelta.Delete])
    -> Bool
  {
    guard let author = inserts.first?.id.replica else { return false }
    for delete in deletes where delete.target.replica == author {
      let targets = delete.targetRange
      // The first insert run that ends after the first target.
      var low = 0
      var high = inserts.count
      while low < high {
        let middle = (low + high) / 2
        let insert = inserts[middle]
        if insert.id.counter + UInt64(insert.length) <= targets.lower {
          low = middle + 1
        } else {
          high = middle
        }
      }
      if low < inserts.count, inserts[low].id.counter < targets.upper { return true }
    }
    return false
  }

  /// Writes the body of a ``MessageKind/textEditDelta`` message: `edit`'s records, from
  /// an empty context (`edit` as ``textEditMessage`` gives it).
  static func writeTextEdit(_ edit: TextEditBody, to writer: inout ByteWriter) {
    var records = RunCoder<MessageNames>()
    records.writeRuns(edit.runs, of: edit.key, edit.field, to: &writer)
  }

  /// Reads the body of a ``MessageKind/textEditDelta`` message and derives the context
  /// and presence it leaves out.
  ///
  /// The records are checked as a frame's are (the Lamport limit, well-formed deletes,
  /// counters, lengths, UTF-8), and as canonical besides: exactly what
  /// ``writeTextEdit(_:to:)`` writes for the delta they decode to.
  static func readTextEditBody(_ reader: inout ByteReader) throws -> DocumentDelta {
    let start = reader.offset
    var records = RunCoder<MessageNames>()
    let read = try records.readRecords(reader.readUInt8(), from: &reader)
    guard !deletesOwnInsert(read.inserts, read.deletes) else {
      throw ConvergeDecodingError.invalidValue(
        offset: start, reason: "text edit that deletes a scalar it inserts")
    }
    let runs = RGADelta(inserts: read.inserts, deletes: read.deletes)
    guard let delta = textEdit(runs, field: read.field, of: read.key) else {
      throw ConvergeDecodingError.invalidValue(offset: start, reason: "text edit without runs")
    }
    return delta
  }

  // MARK: The earlier form, read and never written

  /// The delta as a ``MessageKind/legacyTextEditDelta`` message when it is one replica's
  /// edit of one text field (``textEditBody``), as earlier builds wrote it; its
  /// ``encoded()`` message otherwise. For tests of the legacy decoder.
  package func legacyEncoded() -> [UInt8] {
    guard let edit = textEditBody else { return encoded() }
    return Envelope.seal(kind: .legacyTextEditDelta) { writer in
      var builder = ReplicaTable.Builder()
      edit.runs.collectReplicas(into: &builder)
      let table = builder.build()
      table.write(to: &writer)
      edit.key.write(to: &writer)
      writer.writeString(edit.field)
      edit.runs.write(to: &writer, replicas: table)
    }
  }

  /// Reads the body of a ``MessageKind/legacyTextEditDelta`` message (a replica table,
  /// the key, the field name and the runs in the form of a state's text) and derives the
  /// context and presence it leaves out.
  static func readLegacyTextEditBody(_ reader: inout ByteReader) throws -> DocumentDelta {
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

extension RGADelta {
  /// Visits one replica's insert and delete runs merged by their first counter, a delete
  /// first at a tie (the order a text edit message and a frame write their records in),
  /// calling `insert` or `delete` with each run's index; `visit` is told each run's first
  /// counter and length first, and stops the walk by returning `false`.
  ///
  /// - Returns: whether the walk reached the end.
  @inline(__always)
  static func inCounterOrder(
    _ inserts: [Insert], _ deletes: [Delete],
    visit: (_ start: UInt64, _ length: UInt64) -> Bool = { _, _ in true },
    insert: (Int) -> Void = { _ in }, delete: (Int) -> Void = { _ in }
  ) -> Bool {
    var nextInsert = 0
    var nextDelete = 0
    while nextInsert < inserts.count || nextDelete < deletes.count {
      if nextDelete == deletes.count
        || (nextInsert < inserts.count
          && inserts[nextInsert].id.counter < deletes[nextDelete].dot.counter)
      {
        guard visit(inserts[nextInsert].id.counter, UInt64(inserts[nextInsert].length)) else {
          return false
        }
        insert(nextInsert)
        nextInsert += 1
      } else {
        guard visit(deletes[nextDelete].dot.counter, deletes[nextDelete].count) else {
          return false
        }
        delete(nextDelete)
        nextDelete += 1
      }
    }
    return true
  }
}
