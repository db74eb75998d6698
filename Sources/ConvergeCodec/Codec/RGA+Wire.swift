/// Wire form of RGA text and of its deltas (see `FORMAT.md`, "RGA text").
///
/// Text travels through its public delta form: the state of an ``RGA`` is
/// `rga.delta(since: CausalContext())` (every insert, delete and buffered item), and
/// decoding applies that delta to a fresh `RGA()`. The encoder first brings the runs into
/// one canonical shape, whatever the storage split them into:
///
/// - insert runs sorted by id (replica, counter), overlaps dropped, and joined into
///   maximal runs (a run continues the previous one when its ids, Lamport numbers and
///   origin all follow on);
/// - delete runs sorted by delete dot, overlaps dropped, and joined greedily one delete
///   dot at a time (ascending or descending targets).
///
/// A run is one record however many scalars it holds, so a typed word costs a few bytes
/// plus its UTF-8. The scalars of all insert runs follow as one UTF-8 blob, without the
/// scalars the message's own delete runs remove (tombstones travel without content),
/// coded when that is shorter (``ContentCoding``). A
/// delete run's first dot is not written when it is the next counter of its replica
/// that no insert run uses.
extension RGADelta {
  /// The runs in canonical order and shape.
  ///
  /// - Complexity: O(d log d) for d runs, plus the scalars copied.
  package func canonicalRuns() -> (inserts: [TextWire.InsertRun], deletes: [Delete]) {
    var inserts: [TextWire.InsertRun] = []
    inserts.reserveCapacity(self.inserts.count)
    for insert in self.inserts.sorted(by: { $0.id < $1.id }) where insert.length > 0 {
      guard let last = inserts.last?.header, last.id.replica == insert.id.replica else {
        inserts.append(TextWire.InsertRun(insert))
        continue
      }
      let lastEnd = last.id.counter + UInt64(last.length)
      var piece = insert
      if insert.id.counter < lastEnd {
        // The same ids are the same events: keep only what `last` does not hold.
        let overlap = lastEnd - insert.id.counter
        guard overlap < UInt64(insert.length) else { continue }
        piece = insert.slice(from: Int(overlap), length: insert.length - Int(overlap))
      }
      if TextWire.continues(last, with: TextWire.RunHeader(piece)) {
        inserts[inserts.count - 1].parts.append(piece)
        inserts[inserts.count - 1].header.length += piece.length
      } else {
        inserts.append(TextWire.InsertRun(piece))
      }
    }
    var deletes: [Delete] = []
    deletes.reserveCapacity(self.deletes.count)
    for delete in self.deletes.sorted(by: { ($0.dot, $0.target) < ($1.dot, $1.target) })
    where delete.count > 0 {
      guard let last = deletes.last, last.dot.replica == delete.dot.replica else {
        deletes.append(delete)
        continue
      }
      let lastEnd = last.dot.counter + last.count
      var piece = delete
      if delete.dot.counter < lastEnd {
        let overlap = lastEnd - delete.dot.counter
        guard overlap < delete.count else { continue }
        piece = delete.part(from: overlap, count: delete.count - overlap)
      }
      if TextWire.canExtend(last, with: piece) {
        let joined = TextWire.extend(last, with: piece)
        deletes[deletes.count - 1] = joined.run
        if let rest = joined.rest { deletes.append(rest) }
      } else {
        deletes.append(piece)
      }
    }
    if deletes.contains(where: { $0.count > TextWire.maximumDeleteRun }) {
      deletes = deletes.flatMap(TextWire.split)
    }
    return (inserts, deletes)
  }

  /// Adds every replica the runs mention to `builder`.
  package func collectReplicas(into builder: inout ReplicaTable.Builder) {
    for insert in inserts {
      builder.insert(insert.id.replica)
      if let origin = insert.origin { builder.insert(origin.replica) }
      if let right = insert.rightOrigin { builder.insert(right.replica) }
    }
    for delete in deletes {
      builder.insert(delete.dot.replica)
      builder.insert(delete.target.replica)
    }
  }

  /// Writes the delta's runs in canonical form, its content coded on its own (§8.3.1);
  /// every replica must be in `table`.
  ///
  /// - Complexity: O(d log d + s) for d runs and s scalars.
  func write(to writer: inout ByteWriter, replicas table: ReplicaTable) {
    TextWire.PreparedRuns(self).write(to: &writer, replicas: table) { content, writer in
      ContentCoding.write(content, to: &writer)
    }
  }

  /// Reads runs written by ``write(to:replicas:)``, checking that they are canonical.
  ///
  /// - Throws: `countTooLarge`, `truncated`, LEB128 errors, `unknownReplicaIndex`,
  ///   `integerOverflow` for id ranges past `UInt64.max`, `invalidUTF8`, or
  ///   `invalidValue` for zero-length runs, runs out of order, overlapping or not
  ///   maximal, Lamport numbers out of range, origins inside their own run, and content
  ///   that does not match the run lengths.
  ///
  /// `inspect` is shown the insert runs' headers and the deletes as read, before content
  /// is attached: a message's checks of their ids (``FieldChecks/checkRuns(_:_:of:)``)
  /// read those plain values, not the runs, which copy a reference each.
  @inline(__always)
  init(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    inspecting inspect: ([TextWire.RunHeader], [RGADelta.Delete]) -> Void = { _, _ in }
  ) throws {
    let (headers, content) = try TextWire.readInsertHeaders(from: &reader, replicas: &table)
    // Built only when there are delete runs to read.
    let deletes = try TextWire.readDeletes(
      from: &reader,
      insertIDs: TextWire.InsertIDs(
        headers.map { ($0.id.replica, $0.id.counter..<$0.id.counter + UInt64($0.length)) }),
      replicas: &table)
    inspect(headers, deletes)
    let inserts = try TextWire.attachContent(
      content, to: headers, deleted: RGADelta.DeletedRanges(deletes))
    self.init(inserts: inserts, deletes: deletes)
  }
}

extension TextWire.RunHeader {
  /// The header of `insert`: its id, Lamport number, origins and length.
  init(_ insert: RGADelta.Insert) {
    self.init(
      id: insert.id, lamport: insert.lamport, origin: insert.origin,
      rightOrigin: insert.rightOrigin, length: insert.length)
  }
}

extension RGADelta.Delete {
  /// `length` delete dots from `offset`.
  fileprivate func part(from offset: UInt64, count length: UInt64) -> RGADelta.Delete {
    let first = isDescending ? target.counter - offset : target.counter + offset
    return RGADelta.Delete(
      dot: Dot(replica: dot.replica, counter: dot.counter + offset),
      target: Dot(replica: target.replica, counter: first), count: length,
      isDescending: isDescending)
  }

  /// The target of the last delete dot.
  fileprivate var lastTarget: UInt64 {
    isDescending ? target.counter - (count - 1) : target.counter + (count - 1)
  }
}

extension RGA {
  /// Reads a text's whole state, written as the runs of `delta(since: CausalContext())`,
  /// and builds the text those runs make at once (``init(loading:deletes:content:at:)``),
  /// exactly as applying them to a fresh text would.
  ///
  /// - Throws: what ``RGADelta/init(from:replicas:inspecting:)`` throws, and
  ///   `invalidValue` if the text cannot hold every run (an insert not younger than its
  ///   origin is ignored by the sequence, so such a state has no encoding).
  init(from reader: inout ByteReader, replicas table: inout DecodedReplicaTable) throws {
    let state = try TextWire.readState(from: &reader, replicas: &table)
    try self.init(state)
  }

  /// The text a state read by ``TextWire/readState(from:replicas:)`` holds, its content
  /// decoded.
  init(_ state: TextWire.State) throws {
    try self.init(
      loading: state.headers, deletes: state.deletes, content: state.content, at: state.start)
  }
}

extension TextWire {
  /// A text state's runs as read, before the text is built: its insert runs, its delete
  /// runs, its content (decoded, or coded in a load that defers texts) and where it
  /// starts in the message.
  struct State {
    var start: Int
    var headers: [RunHeader]
    var deletes: [RGADelta.Delete]
    var content: (bytes: ArraySlice<UInt8>, offset: Int)
  }

  /// Reads a text's whole state, written as the runs of `delta(since: CausalContext())`.
  static func readState(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable
  ) throws -> State {
    let start = reader.offset
    let (headers, content) = try readInsertHeaders(from: &reader, replicas: &table)
    let deletes = try readDeletes(
      from: &reader, insertIDs: InsertIDs(sortedRuns: headers), replicas: &table)
    return State(start: start, headers: headers, deletes: deletes, content: content)
  }
}

/// The run encodings shared by text states and text deltas.
package enum TextWire {
  /// Origin codes: the head of the text, an explicit dot, or (from 2 on) an earlier id
  /// of the run's own replica, `counter - 1 - (code - 2)`.
  static let headOrigin: UInt64 = 0
  static let explicitOrigin: UInt64 = 1
  static let firstOwnOrigin: UInt64 = 2
  /// Right origin codes: the end of the text, an explicit dot (``explicitOrigin``), the
  /// id after the run's origin in the origin's replica, or (from 3 on) an earlier id of
  /// the run's own replica, `counter - 1 - (code - 3)`.
  static let endRightOrigin: UInt64 = 0
  static let nextOfOriginRightOrigin: UInt64 = 2
  static let firstOwnRightOrigin: UInt64 = 3

  /// The longest delete run one record holds, so that its count and three flags fit in
  /// 64 bits; longer runs (only hostile input makes them) are written as several.
  static let maximumDeleteRun: UInt64 = (1 << 61) - 1

  /// Per replica, the id ranges of a message's insert runs, sorted: a delete run's first
  /// dot is usually the next counter of its replica that no insert run uses, and then
  /// is not written.
  struct InsertIDs {
    var ranges: [ReplicaID: [Range<UInt64>]] = [:]

    init(_ inserts: [(replica: ReplicaID, range: Range<UInt64>)]) {
      for insert in inserts { ranges[insert.replica, default: []].append(insert.range) }
    }

    /// A walk over one replica's ranges for ascending queries.
    struct Cursor {
      let ranges: [Range<UInt64>]
      var position = 0

      /// The first counter at or after `counter` that no range holds.
      mutating func firstFree(from counter: UInt64) -> UInt64 {
        var result = counter
        while position < ranges.count {
          let range = ranges[position]
          if range.upperBound <= result {
            position += 1
          } else if range.lowerBound <= result {
            result = range.upperBound
            position += 1
          } else {
            break
          }
        }
        return result
      }
    }

    func cursor(for replica: ReplicaID) -> Cursor { Cursor(ranges: ranges[replica] ?? []) }
  }

  /// `delete` cut into runs of at most ``maximumDeleteRun`` deletes.
  static func split(_ delete: RGADelta.Delete) -> [RGADelta.Delete] {
    var pieces: [RGADelta.Delete] = []
    var offset: UInt64 = 0
    while offset < delete.count {
      let length = Swift.min(maximumDeleteRun, delete.count - offset)
      pieces.append(delete.part(from: offset, count: length))
      offset += length
    }
    return pieces
  }

  /// An insert run as written: one record, whose parts may differ in whether they
  /// carry content.
  package struct InsertRun {
    /// The run's id, Lamport number, origins and length, as a reader gets them back.
    var header: RunHeader
    var parts: [RGADelta.Insert]

    /// The number of ids the run holds.
    package var length: Int { header.length }

    init(_ insert: RGADelta.Insert) {
      header = RunHeader(insert)
      parts = [insert]
    }
  }

  /// A text's runs in canonical form (``RGADelta/canonicalRuns()``) with the content
  /// they write, taken once: a document state counts every text's content before it
  /// writes any (`DocumentContentCode`).
  struct PreparedRuns {
    let inserts: [InsertRun]
    let deletes: [RGADelta.Delete]
    /// The UTF-8 the runs write (``content(of:deleted:)``).
    let content: [UInt8]

    init(_ delta: RGADelta) {
      (inserts, deletes) = delta.canonicalRuns()
      content = TextWire.content(of: inserts, deleted: RGADelta.DeletedRanges(deletes))
    }

    /// Writes the insert groups, the content through `writeContent`, then the delete
    /// groups; every replica must be in `table`.
    func write(
      to writer: inout ByteWriter, replicas table: ReplicaTable,
      content writeContent: ([UInt8], inout ByteWriter) -> Void
    ) {
      TextWire.writeInsertGroups(inserts, to: &writer, replicas: table)
      writeContent(content, &writer)
      let ids =
        deletes.isEmpty
        ? InsertIDs([])
        : InsertIDs(
          inserts.map { run in
            let id = run.header.id
            return (id.replica, id.counter..<id.counter + UInt64(run.header.length))
          })
      TextWire.writeDeletes(deletes, insertIDs: ids, to: &writer, replicas: table)
    }
  }

  /// Written for scalars a run lacks the content of that the message does not delete
  /// (a tombstone sent to a peer that knows its delete already).
  static let placeholder: Unicode.Scalar = "\u{FFFD}"

  /// Whether `next` continues the run `last` exactly (``InsertRunContinuation``), so the
  /// two are one run.
  static func continues(_ last: RunHeader, with next: RunHeader) -> Bool {
    InsertRunContinuation.continues(
      id: last.id, lamport: last.lamport, length: last.length, rightOrigin: last.rightOrigin,
      by: (next.id, next.lamport, next.origin, next.rightOrigin))
  }

  /// Whether the first delete dot of `next` continues the run `last`: the next dot of
  /// the same replica, removing the neighbour of `last`'s latest target in its direction
  /// (either direction while `last` holds a single delete).
  static func canExtend(_ last: RGADelta.Delete, with next: RGADelta.Delete) -> Bool {
    let (end, overflow) = last.dot.counter.addingReportingOverflow(last.count)
    guard !overflow, last.count < maximumDeleteRun, next.dot.replica == last.dot.replica,
      next.dot.counter == end,
      next.target.replica == last.target.replica
    else { return false }
    let lastTarget = last.lastTarget
    let ascending = lastTarget < .max && next.target.counter == lastTarget + 1
    let descending = lastTarget > 1 && next.target.counter == lastTarget - 1
    if last.count == 1 { return ascending || descending }
    return last.isDescending ? descending : ascending
  }

  /// `last` extended by as much of `next` as continues it (at least its first delete),
  /// and what is left of `next`. Requires ``canExtend(_:with:)``.
  static func extend(
    _ last: RGADelta.Delete, with next: RGADelta.Delete
  ) -> (run: RGADelta.Delete, rest: RGADelta.Delete?) {
    let descending = next.target.counter < last.lastTarget
    let continuing = next.count == 1 || next.isDescending == descending ? next.count : 1
    let taken = Swift.min(continuing, maximumDeleteRun - last.count)
    let run = RGADelta.Delete(
      dot: last.dot, target: last.target, count: last.count + taken, isDescending: descending)
    return (run, taken < next.count ? next.part(from: taken, count: next.count - taken) : nil)
  }

  // MARK: Groups

  /// `runs` cut into groups of consecutive runs of one replica, the unit both kinds of
  /// runs are written in: the replica's index, the run count, then the runs.
  @inline(__always)
  static func groups<Run>(of runs: [Run], replica: (Run) -> ReplicaID) -> [ArraySlice<Run>] {
    var groups: [ArraySlice<Run>] = []
    var groupStart = 0
    for index in runs.indices
    where index + 1 == runs.count || replica(runs[index + 1]) != replica(runs[index]) {
      groups.append(runs[groupStart...index])
      groupStart = index + 1
    }
    return groups
  }

  /// Reads `groupCount` groups written as ``groups(of:replica:)`` cuts them: each its
  /// replica's index (after the previous group's), its number of runs (at least one, each
  /// at least `minimumBytesPerRun` bytes), then its runs, which `readRuns` appends to the
  /// result given the group's replica and run count (the capacity is reserved).
  ///
  /// - Throws: what ``DecodedReplicaTable/readReplica(from:after:)``,
  ///   ``ByteReader/readCount(minimumBytesPerElement:)`` and `readRuns` throw, and
  ///   `invalidValue` for a group without runs.
  @inline(__always)
  static func readGroups<Run>(
    _ groupCount: Int, minimumBytesPerRun: Int, from reader: inout ByteReader,
    replicas table: inout DecodedReplicaTable,
    _ readRuns: (
      _ replica: ReplicaID, _ runCount: Int, inout ByteReader, inout DecodedReplicaTable,
      _ runs: inout [Run]
    ) throws -> Void
  ) throws -> [Run] {
    var runs: [Run] = []
    var previousReplica: Int?
    for _ in 0..<groupCount {
      let (index, replica) = try table.readReplica(from: &reader, after: previousReplica)
      previousReplica = index
      let runsStart = reader.offset
      let runCount = try reader.readCount(minimumBytesPerElement: minimumBytesPerRun)
      guard runCount > 0 else {
        throw ConvergeDecodingError.invalidValue(offset: runsStart, reason: "empty run group")
      }
      // At least doubled: reserving exactly the group's runs copied every earlier run
      // again at each group, quadratic in the groups a message (a hostile one) holds.
      if runs.capacity < runs.count + runCount {
        runs.reserveCapacity(Swift.max(runs.count + runCount, 2 * runs.capacity))
      }
      try readRuns(replica, runCount, &reader, &table, &runs)
    }
    return runs
  }

  /// Appends `run`, read from `offset`, to `runs` as the group's latest, `previous`,
  /// refusing it (`invalidValue` for `reason`) when it continues the previous run of its
  /// group: an encoder joins such runs into one, so every run on the wire is maximal.
  @inline(__always)
  static func appendMaximal<Run>(
    _ run: Run, to runs: inout [Run], previous: inout Run?, at offset: Int, reason: String,
    continues: (_ last: Run, _ next: Run) -> Bool
  ) throws {
    if let last = previous, continues(last, run) {
      throw ConvergeDecodingError.invalidValue(offset: offset, reason: reason)
    }
    runs.append(run)
    previous = run
  }

  // MARK: Inserts

  /// Writes the insert groups (without their content).
  static func writeInsertGroups(
    _ inserts: [InsertRun], to writer: inout ByteWriter, replicas table: ReplicaTable
  ) {
    let groups = groups(of: inserts) { $0.header.id.replica }
    writer.writeVarUInt(groups.count)
    for group in groups {
      guard let first = group.first?.header else { continue }
      table.writeIndex(of: first.id.replica, to: &writer)
      writer.writeVarUInt(group.count)
      var nextFree: UInt64 = 1
      var predictedLamport = first.id.counter
      for run in group {
        let insert = run.header
        let length = UInt64(insert.length)
        writer.writeVarUInt(insert.id.counter - nextFree)
        writer.writeVarUInt(length)
        // A replica's later run usually continues its Lamport numbers where the previous
        // one stopped (more if it saw other replicas' inserts in between).
        writer.writeVarInt(Int64(bitPattern: insert.lamport &- predictedLamport))
        predictedLamport = insert.lamport &+ length
        switch insert.origin {
        case nil:
          writer.writeVarUInt(headOrigin)
        case let origin?
        where origin.replica == insert.id.replica
          && origin.counter < insert.id.counter:
          writer.writeVarUInt(firstOwnOrigin + (insert.id.counter - 1 - origin.counter))
        case let origin?:
          writer.writeVarUInt(explicitOrigin)
          origin.write(to: &writer, replicas: table)
        }
        writeRightOrigin(
          insert.rightOrigin, of: insert.id, origin: insert.origin, to: &writer, replicas: table)
        nextFree = insert.id.counter + length
      }
    }
  }

  /// The UTF-8 of the scalars of `inserts`, in run order, but for those `deleted` removes
  /// (the `content` of §8.3).
  static func content(of inserts: [InsertRun], deleted: RGADelta.DeletedRanges) -> [UInt8] {
    var content: [UInt8] = []
    content.reserveCapacity(inserts.reduce(0) { $0 + $1.length })
    for insert in inserts {
      for part in insert.parts {
        let lower = part.id.counter
        for (range, isDeleted) in deleted.pieces(
          replica: part.id.replica, lower, lower + UInt64(part.length))
        where !isDeleted {
          if part.isContentDropped {
            for _ in range { UTF8.encode(placeholder) { content.append($0) } }
          } else {
            let from = part.content.startIndex + Int(range.lowerBound - lower)
            _ = RGA.appendUTF8(of: part.content[from..<from + range.count], to: &content)
          }
        }
      }
    }
    return content
  }

  /// A decoded insert run before its scalars are attached.
  struct RunHeader {
    var id: Dot
    var lamport: UInt64
    var origin: Dot?
    var rightOrigin: Dot?
    var length: Int

    /// The part of the run from `offset`, `length` ids long (within the run).
    func piece(from offset: UInt64, length: Int) -> RunHeader {
      guard offset > 0 else {
        return RunHeader(
          id: id, lamport: lamport, origin: origin, rightOrigin: rightOrigin, length: length)
      }
      return RunHeader(
        id: Dot(replica: id.replica, counter: id.counter + offset), lamport: lamport + offset,
        origin: Dot(replica: id.replica, counter: id.counter + offset - 1),
        rightOrigin: rightOrigin, length: length)
    }

    /// The run with `content` as its scalars.
    func withContent(_ content: ArraySlice<Unicode.Scalar>) -> RGADelta.Insert {
      RGADelta.Insert(
        id: id, lamport: lamport, origin: origin, rightOrigin: rightOrigin, content: content)
    }

    /// The run without content (its scalars are deleted by the same message).
    var withoutContent: RGADelta.Insert {
      RGADelta.Insert(
        id: id, lamport: lamport, origin: origin, rightOrigin: rightOrigin,
        droppedLength: length)
    }
  }

  /// The insert groups and the content bytes that follow them.
  static func readInsertHeaders(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable
  ) throws -> (headers: [RunHeader], content: (bytes: ArraySlice<UInt8>, offset: Int)) {
    // A group is at least a replica index, a run count and one 5-byte run.
    let groupCount = try reader.readCount(minimumBytesPerElement: 7)
    // A run is at least gap, length, Lamport, origin and right origin: 5 bytes.
    let headers: [RunHeader] = try readGroups(
      groupCount, minimumBytesPerRun: 5, from: &reader, replicas: &table
    ) { replica, runCount, reader, table, headers in
      var nextFree: UInt64 = 1
      var predictedLamport: UInt64?
      var previous: RunHeader?
      for _ in 0..<runCount {
        let start = reader.offset
        let counter = try ByteReader.checkedAdd(nextFree, try reader.readVarUInt(), at: start)
        let lengthStart = reader.offset
        let rawLength = try reader.readVarUInt()
        guard rawLength > 0 else {
          throw ConvergeDecodingError.invalidValue(offset: lengthStart, reason: "empty run")
        }
        // Deleted scalars take no content bytes, so only the Lamport range bounds a length.
        guard rawLength <= RGA.lamportLimit else {
          throw ConvergeDecodingError.invalidValue(
            offset: lengthStart, reason: "Lamport number out of range")
        }
        let length = try ByteReader.checkedInt(rawLength, at: lengthStart)
        let end = try ByteReader.checkedAdd(counter, rawLength, at: lengthStart)
        let lamportStart = reader.offset
        let lamport = (predictedLamport ?? counter) &+ UInt64(bitPattern: try reader.readVarInt())
        let (lamportEnd, lamportOverflow) = lamport.addingReportingOverflow(rawLength)
        guard !lamportOverflow, lamportEnd <= RGA.lamportLimit else {
          throw ConvergeDecodingError.invalidValue(
            offset: lamportStart, reason: "Lamport number out of range")
        }
        let origin = try readOrigin(
          from: &reader, replicas: &table, replica: replica, counter: counter, end: end)
        let rightOrigin = try readRightOrigin(
          from: &reader, origin: origin, replica: replica, counter: counter, end: end
        ) { try Dot(from: &$0, replicas: &table) }
        let header = RunHeader(
          id: Dot(replica: replica, counter: counter), lamport: lamport, origin: origin,
          rightOrigin: rightOrigin, length: length)
        try appendMaximal(
          header, to: &headers, previous: &previous, at: start,
          reason: "insert run continues the previous one", continues: continues)
        predictedLamport = lamportEnd
        nextFree = end
      }
    }
    let contentStart = reader.offset
    let content = try table.decodeContent(reader.readLengthPrefixedBytes(), offset: contentStart)
    return (headers, (content, contentStart))
  }

  /// The insert runs of `headers` with their scalars: those of scalars that `deleted`
  /// removes are not in `content` and travel without content, the others are taken from
  /// `content` in order.
  static func attachContent(
    _ content: (bytes: ArraySlice<UInt8>, offset: Int), to headers: [RunHeader],
    deleted: RGADelta.DeletedRanges
  ) throws -> [RGADelta.Insert] {
    // One buffer for every run's scalars; the runs are slices of it.
    let scalars = try decodeScalars(content.bytes, offset: content.offset).scalars
    let mismatch = ConvergeDecodingError.invalidValue(
      offset: content.offset, reason: "text content does not match its runs")
    var inserts: [RGADelta.Insert] = []
    inserts.reserveCapacity(headers.count)
    var position = 0
    if deleted.isEmpty {
      // Nothing deleted: every run takes its scalars from the content in order.
      for header in headers {
        guard header.length <= scalars.count - position else { throw mismatch }
        let next = position + header.length
        inserts.append(
          RGADelta.Insert(
            id: header.id, lamport: header.lamport, origin: header.origin,
            rightOrigin: header.rightOrigin, content: scalars[position..<next]))
        position = next
      }
      guard position == scalars.count else { throw mismatch }
      return inserts
    }
    // The headers of one replica ascend by counter (each group's gaps are unsigned), so
    // one walk over that replica's deleted ranges cuts them all.
    var replica: ReplicaID?
    var targets: [Range<UInt64>] = []
    var target = 0
    for header in headers {
      if header.id.replica != replica {
        replica = header.id.replica
        targets = deleted.ranges(of: header.id.replica)
        target = 0
      }
      let lower = header.id.counter
      let upper = lower + UInt64(header.length)
      while target < targets.count, targets[target].upperBound <= lower { target += 1 }
      var cursor = lower
      var next = target
      while cursor < upper {
        if next < targets.count, targets[next].lowerBound < upper {
          let removed = targets[next]
          if cursor < removed.lowerBound {
            let piece = header.piece(from: cursor - lower, length: Int(removed.lowerBound - cursor))
            guard piece.length <= scalars.count - position else { throw mismatch }
            inserts.append(piece.withContent(scalars[position..<position + piece.length]))
            position += piece.length
            cursor = removed.lowerBound
          }
          let end = Swift.min(removed.upperBound, upper)
          inserts.append(
            header.piece(from: cursor - lower, length: Int(end - cursor)).withoutContent)
          cursor = end
          next += 1
        } else {
          let piece = header.piece(from: cursor - lower, length: Int(upper - cursor))
          guard piece.length <= scalars.count - position else { throw mismatch }
          inserts.append(piece.withContent(scalars[position..<position + piece.length]))
          position += piece.length
          cursor = upper
        }
      }
    }
    guard position == scalars.count else { throw mismatch }
    return inserts
  }

  // MARK: Deletes

  static func writeDeletes(
    _ deletes: [RGADelta.Delete], insertIDs: InsertIDs, to writer: inout ByteWriter,
    replicas table: ReplicaTable
  ) {
    let groups = groups(of: deletes) { $0.dot.replica }
    writer.writeVarUInt(groups.count)
    for group in groups {
      guard let first = group.first else { continue }
      table.writeIndex(of: first.dot.replica, to: &writer)
      writer.writeVarUInt(group.count)
      var nextFree: UInt64 = 1
      var previousTarget: UInt64 = 0
      var impliedReplica = first.dot.replica
      var free = insertIDs.cursor(for: first.dot.replica)
      for delete in group {
        let impliedDot = free.firstFree(from: nextFree) == delete.dot.counter
        let explicit = delete.target.replica != impliedReplica
        writer.writeVarUInt(
          delete.count << 3 | (impliedDot ? 4 : 0) | (delete.isDescending ? 2 : 0)
            | (explicit ? 1 : 0))
        if !impliedDot { writer.writeVarUInt(delete.dot.counter - nextFree) }
        if explicit { table.writeIndex(of: delete.target.replica, to: &writer) }
        impliedReplica = delete.target.replica
        writer.writeVarInt(Int64(bitPattern: delete.target.counter &- previousTarget))
        previousTarget = delete.lastTarget
        nextFree = delete.dot.counter + delete.count
      }
    }
  }

  static func readDeletes(
    from reader: inout ByteReader, insertIDs makeInsertIDs: @autoclosure () -> InsertIDs,
    replicas table: inout DecodedReplicaTable
  ) throws -> [RGADelta.Delete] {
    // A group is at least a replica index, a run count and one 2-byte run.
    let groupCount = try reader.readCount(minimumBytesPerElement: 4)
    guard groupCount > 0 else { return [] }
    let insertIDs = makeInsertIDs()
    // A run is at least shape and target counter: 2 bytes.
    return try readGroups(
      groupCount, minimumBytesPerRun: 2, from: &reader, replicas: &table
    ) { replica, runCount, reader, table, deletes in
      var nextFree: UInt64 = 1
      var previousTarget: UInt64 = 0
      var impliedReplica = replica
      var previous: RGADelta.Delete?
      var free = insertIDs.cursor(for: replica)
      for _ in 0..<runCount {
        let start = reader.offset
        let countStart = reader.offset
        let packed = try reader.readVarUInt()
        let count = packed >> 3
        let isDescending = packed & 2 != 0
        let firstFree = free.firstFree(from: nextFree)
        let counter: UInt64
        if packed & 4 != 0 {
          counter = firstFree
        } else {
          let gapStart = reader.offset
          counter = try ByteReader.checkedAdd(nextFree, try reader.readVarUInt(), at: gapStart)
          guard counter != firstFree else {
            throw ConvergeDecodingError.invalidValue(
              offset: gapStart, reason: "explicit delete dot that is implied")
          }
        }
        guard counter > 0 else {
          throw ConvergeDecodingError.invalidValue(offset: start, reason: "zero delete dot")
        }
        guard count > 0 else {
          throw ConvergeDecodingError.invalidValue(offset: countStart, reason: "empty run")
        }
        guard count > 1 || !isDescending else {
          throw ConvergeDecodingError.invalidValue(
            offset: countStart, reason: "a single delete marked descending")
        }
        let end = try ByteReader.checkedAdd(counter, count, at: countStart)
        var targetReplica = impliedReplica
        if packed & 1 != 0 {
          let replicaStart = reader.offset
          targetReplica = try table.readReplica(from: &reader)
          guard targetReplica != impliedReplica else {
            throw ConvergeDecodingError.invalidValue(
              offset: replicaStart, reason: "explicit target replica that is implied")
          }
        }
        impliedReplica = targetReplica
        let targetStart = reader.offset
        let target = previousTarget &+ UInt64(bitPattern: try reader.readVarInt())
        guard target > 0 else {
          throw ConvergeDecodingError.invalidValue(offset: targetStart, reason: "zero target")
        }
        let lastTarget: UInt64
        if isDescending {
          guard target >= count, target < .max else {
            throw ConvergeDecodingError.integerOverflow(offset: targetStart)
          }
          lastTarget = target - (count - 1)
        } else {
          lastTarget = try ByteReader.checkedAdd(target, count - 1, at: targetStart)
          guard lastTarget < .max else {
            throw ConvergeDecodingError.integerOverflow(offset: targetStart)
          }
        }
        let delete = RGADelta.Delete(
          dot: Dot(replica: replica, counter: counter),
          target: Dot(replica: targetReplica, counter: target), count: count,
          isDescending: isDescending)
        try appendMaximal(
          delete, to: &deletes, previous: &previous, at: start,
          reason: "delete run continues the previous one", continues: canExtend)
        previousTarget = lastTarget
        nextFree = end
      }
    }
  }
}
