/// One direction of a `SyncSession`'s live pushes: a stream of frames whose sender and
/// receiver share a small state, so a typed character costs a few bytes instead of a
/// self-contained message (see `FORMAT.md`, "Session frames").
///
/// A self-contained delta must name its replica (8 bytes), its entity and field (their
/// names), its counters and Lamport numbers in full, and carry an 11-byte envelope: about
/// 50 bytes for one keystroke. Inside a session the two sides already agree on all of that
/// from the previous frames, so a frame only states what differs from the prediction:
///
/// - a dictionary of the replicas, entity keys and field names the stream has named, each
///   sent once in full and then referred to by index;
/// - the current author and text field, stated only when they change;
/// - predictions for the next insert (the author's next counter, the next Lamport number,
///   an origin right after the previous insert) and the next delete (its target right
///   before the previous one, as a run of backspaces does), each a flag when it holds.
///
/// A list edit that places one item (an insert or a move) travels as its slot's runs and
/// one item record: the item's value and its move's timestamp, as a difference from the
/// previous one's. Deltas that are neither one replica's edit of one text field nor such
/// a list edit travel embedded, as their complete message.
///
/// The shared state is only sound while both sides have seen the same frames in the same
/// order. Every frame's checksum covers its sequence number, which is not on the wire, so
/// a lost, duplicated, reordered or damaged frame fails to decode, with a typed error and
/// no change; the session then answers with a handshake, and the sender restarts its
/// stream (see `SyncSession`).
///
/// - Complexity: encoding and decoding a frame are O(r + s) for r runs and s scalars,
///   plus one hash lookup when the frame names a new entity or field.
package struct SessionStream: Sendable, Equatable {
  /// The first byte of every frame; it differs from the `C` that starts every
  /// self-contained message.
  static let magic: UInt8 = 0xCF
  /// The frame format version, the low four bits of the second byte.
  static let version: UInt8 = 2
  /// The flag of the second byte that starts a stream (sequence 0, empty state).
  static let startFlag: UInt8 = 0x10
  /// Entries each dictionary keeps; further names travel in full every time.
  static let dictionaryLimit = 1024
  /// Longest name a dictionary keeps, in UTF-8 bytes.
  static let storedNameLimit = 256

  enum RecordType: UInt8 {
    case insert = 0
    case delete = 1
    case target = 2
    case author = 3
    case embedded = 4
    /// An insert whose right origin is not the predicted one: a code follows its origin.
    case insertWithRightOrigin = 5
    /// The item a list edit's runs place: its value and its move's timestamp; the last
    /// record of its frame.
    case listItem = 6
  }

  /// Names this stream among all the streams its sender ever starts (a random number):
  /// every checksum covers it, so a late frame of an earlier stream never decodes as
  /// part of a later one.
  var streamID: UInt64
  /// The sequence number of the next frame.
  var sequence: UInt64 = 0
  /// On the receiving side, whether a start frame has arrived.
  var isStarted = false
  /// On the receiving side, frames that arrived ahead of their turn, by sequence number.
  var heldFrames: [UInt64: [UInt8]] = [:]
  /// How far ahead of its turn a frame may arrive and wait.
  static let lookahead: UInt64 = 16
  /// How many frames may wait for an earlier one; one more means that one was lost.
  package static let holdLimit = 8
  /// How far back a repeated frame is recognised as such.
  static let replayWindow: UInt64 = 16
  var replicas: [ReplicaID] = []
  var keys: [EntityKey] = []
  var fields: [String] = []
  /// Encoder-side lookups into the dictionaries (the decoder leaves them empty).
  var replicaIndex: [ReplicaID: Int] = [:]
  var keyIndex: [EntityKey: Int] = [:]
  var fieldIndex: [String: Int] = [:]
  /// The text field the next runs edit, as dictionary indices or literal names.
  var target: (key: EntityKey, field: String)?
  /// The replica whose edits the next runs are.
  var author: ReplicaID?
  /// The author's next unused counter, if known.
  var nextCounter: UInt64?
  /// The Lamport number the next insert is predicted to take.
  var nextLamport: UInt64 = 1
  /// The last scalar the stream inserted: the predicted origin of the next insert.
  var lastInserted: Dot?
  /// The right origin of the last insert: the predicted right origin of the next one
  /// (typing forward keeps it).
  var lastRightOrigin: Dot?
  /// The predicted target of the next delete.
  var predictedDeleteTarget: Dot?
  /// The timestamp of the last list item record (0 at the start): the next one is
  /// written as a difference from it.
  var lastTimestamp: UInt64 = 0

  /// A stream named `streamID`; a sending session picks a random one for every stream.
  package init(streamID: UInt64 = 0) {
    self.streamID = streamID
  }

  package static func == (lhs: SessionStream, rhs: SessionStream) -> Bool {
    lhs.streamID == rhs.streamID && lhs.sequence == rhs.sequence && lhs.replicas == rhs.replicas
      && lhs.keys == rhs.keys
      && lhs.fields == rhs.fields && lhs.target?.key == rhs.target?.key
      && lhs.target?.field == rhs.target?.field && lhs.author == rhs.author
      && lhs.nextCounter == rhs.nextCounter && lhs.nextLamport == rhs.nextLamport
      && lhs.lastInserted == rhs.lastInserted && lhs.lastRightOrigin == rhs.lastRightOrigin
      && lhs.predictedDeleteTarget == rhs.predictedDeleteTarget
      && lhs.lastTimestamp == rhs.lastTimestamp
  }

  /// Whether the next frame starts the stream.
  var isAtStart: Bool { sequence == 0 }

  // MARK: Prediction updates, identical on both sides

  mutating func noteInsert(id: Dot, lamport: UInt64, rightOrigin: Dot?, length: Int) {
    lastRightOrigin = rightOrigin
    let step = UInt64(length)
    nextCounter = id.counter + step
    nextLamport = lamport + step
    let last = Dot(replica: id.replica, counter: id.counter + step - 1)
    lastInserted = last
    predictedDeleteTarget = last
  }

  mutating func noteDelete(_ delete: RGADelta.Delete) {
    nextCounter = delete.dot.counter + delete.count
    let last = delete.target(at: delete.count - 1)
    let next: UInt64? =
      delete.count > 1 && !delete.isDescending
      ? (last < .max ? last + 1 : nil) : (last > 1 ? last - 1 : nil)
    predictedDeleteTarget = next.map { Dot(replica: delete.target.replica, counter: $0) }
  }

  mutating func noteAuthor(_ replica: ReplicaID) {
    author = replica
    nextCounter = nil
  }
}

// MARK: - Encoding

extension SessionStream {
  /// The frame that carries `delta` as the stream's next one.
  package mutating func encode(_ delta: DocumentDelta) -> [UInt8] {
    var writer = ByteWriter(capacity: 32)
    writer.writeUInt8(Self.magic)
    writer.writeUInt8(Self.version | (isAtStart ? Self.startFlag : 0))
    if isAtStart { writer.writeUInt64(streamID) }
    let lengthOffset = writer.count
    writer.writeUInt8(0)
    if let edit = delta.textEditBody, Self.isStreamable(edit.runs) {
      writeRuns(edit.runs, of: edit.key, edit.field, to: &writer)
    } else if let edit = delta.listEdit, Self.isStreamable(edit.runs) {
      writeRuns(edit.runs, of: edit.key, edit.field, to: &writer)
      writer.writeUInt8(RecordType.listItem.rawValue)
      edit.value.write(to: &writer)
      writer.writeVarInt(Int64(truncatingIfNeeded: edit.timestamp.rawValue &- lastTimestamp))
      lastTimestamp = edit.timestamp.rawValue
    } else {
      writer.writeUInt8(RecordType.embedded.rawValue)
      writer.writeLengthPrefixedBytes(delta.encoded())
    }
    writer.patchLength(at: lengthOffset)
    // The checksum covers the stream id and the sequence number, which do not travel.
    writer.writeUInt32(Self.checksum(writer.bytes, stream: streamID, sequence: sequence))
    sequence += 1
    return writer.bytes
  }

  /// Whether frames can carry the runs as records: every insert with its content, none
  /// of it deleted by the same delta (such a delta travels embedded, as the
  /// self-contained form drops that content).
  static func isStreamable(_ runs: RGADelta) -> Bool {
    for insert in runs.inserts where insert.isContentDropped || insert.content.isEmpty {
      return false
    }
    // The decoder refuses runs that share a counter; the general form joins them.
    if runs.hasRunsSharingCounters { return false }
    for delete in runs.deletes where delete.count == 0 { return false }
    guard !runs.deletes.isEmpty, !runs.inserts.isEmpty else { return true }
    for delete in runs.deletes {
      let targets = delete.targetRange
      for insert in runs.inserts where insert.id.replica == targets.replica {
        let lower = insert.id.counter
        if lower < targets.upper && targets.lower < lower + UInt64(insert.length) { return false }
      }
    }
    return true
  }

  /// Writes one replica's runs of the field `field` of `key` (a text's, or a list's
  /// slots), with the target and author records they need first.
  private mutating func writeRuns(
    _ runs: RGADelta, of key: EntityKey, _ field: String, to body: inout ByteWriter
  ) {
    if target?.key != key || target?.field != field {
      body.writeUInt8(RecordType.target.rawValue)
      writeReference(key, in: &keys, index: &keyIndex, to: &body) { key, writer in
        writer.writeString(key.type)
        writer.writeString(key.id)
      }
      writeReference(field, in: &fields, index: &fieldIndex, to: &body) { field, writer in
        writer.writeString(field)
      }
      target = (key, field)
    }
    // `textEditBody` and `listEdit` guarantee one replica made every run.
    let runAuthor = runs.inserts.first?.id.replica ?? runs.deletes.first?.dot.replica
    if let runAuthor, runAuthor != author {
      body.writeUInt8(RecordType.author.rawValue)
      writeReplica(runAuthor, to: &body)
      noteAuthor(runAuthor)
    }
    // In counter order, so that each run's first counter is the predicted one.
    let inserts = runs.inserts
    let deletes = runs.deletes
    var nextInsert = 0
    var nextDelete = 0
    while nextInsert < inserts.count || nextDelete < deletes.count {
      if nextDelete == deletes.count
        || (nextInsert < inserts.count
          && inserts[nextInsert].id.counter < deletes[nextDelete].dot.counter)
      {
        writeInsert(inserts[nextInsert], to: &body)
        nextInsert += 1
      } else {
        writeDelete(deletes[nextDelete], to: &body)
        nextDelete += 1
      }
    }
  }

  private mutating func writeInsert(_ insert: RGADelta.Insert, to body: inout ByteWriter) {
    let rightPredicted = insert.rightOrigin == lastRightOrigin
    var tag = (rightPredicted ? RecordType.insert : RecordType.insertWithRightOrigin).rawValue
    let counterPredicted = insert.id.counter == nextCounter
    let lamportPredicted = insert.lamport == nextLamport
    let single = insert.content.count == 1
    let originMode: UInt8
    if let origin = insert.origin {
      if origin == lastInserted {
        originMode = 0
      } else if origin.replica == insert.id.replica && origin.counter < insert.id.counter {
        originMode = 2
      } else {
        originMode = 3
      }
    } else {
      originMode = 1
    }
    if counterPredicted { tag |= 0x08 }
    if lamportPredicted { tag |= 0x10 }
    tag |= originMode << 5
    if single { tag |= 0x80 }
    body.writeUInt8(tag)
    if !counterPredicted { body.writeVarUInt(insert.id.counter) }
    if !single { body.writeVarUInt(insert.content.count) }
    if !lamportPredicted {
      body.writeVarInt(Int64(truncatingIfNeeded: insert.lamport &- nextLamport))
    }
    if let origin = insert.origin {
      switch originMode {
      case 2: body.writeVarUInt(insert.id.counter - 1 - origin.counter)
      case 3:
        writeReplica(origin.replica, to: &body)
        body.writeVarUInt(origin.counter)
      default: break
      }
    }
    if !rightPredicted {
      // `TextWire`'s right origin codes, an explicit dot through the dictionary.
      if let code = TextWire.rightOriginCode(
        insert.rightOrigin, of: insert.id, origin: insert.origin)
      {
        body.writeVarUInt(code)
      } else if let right = insert.rightOrigin {
        body.writeVarUInt(TextWire.explicitOrigin)
        writeReplica(right.replica, to: &body)
        body.writeVarUInt(right.counter)
      }
    }
    for scalar in insert.content { UTF8.encode(scalar) { body.writeUInt8($0) } }
    noteInsert(
      id: insert.id, lamport: insert.lamport, rightOrigin: insert.rightOrigin,
      length: insert.content.count)
  }

  private mutating func writeDelete(_ delete: RGADelta.Delete, to body: inout ByteWriter) {
    var tag = RecordType.delete.rawValue
    let dotPredicted = delete.dot.counter == nextCounter
    let targetMode: UInt8
    if let predicted = predictedDeleteTarget {
      targetMode =
        delete.target == predicted ? 0 : delete.target.replica == predicted.replica ? 1 : 2
    } else {
      targetMode = 2
    }
    if dotPredicted { tag |= 0x08 }
    tag |= targetMode << 4
    if delete.count == 1 { tag |= 0x40 }
    if delete.isDescending { tag |= 0x80 }
    body.writeUInt8(tag)
    if !dotPredicted { body.writeVarUInt(delete.dot.counter) }
    if delete.count != 1 { body.writeVarUInt(delete.count) }
    switch targetMode {
    case 1:
      let base = predictedDeleteTarget?.counter ?? 0
      body.writeVarInt(Int64(truncatingIfNeeded: delete.target.counter &- base))
    case 2:
      writeReplica(delete.target.replica, to: &body)
      body.writeVarUInt(delete.target.counter)
    default: break
    }
    noteDelete(delete)
  }

  private mutating func writeReplica(_ replica: ReplicaID, to body: inout ByteWriter) {
    writeReference(replica, in: &replicas, index: &replicaIndex, to: &body) { replica, writer in
      writer.writeUInt64(replica.rawValue)
    }
  }

  /// Writes a dictionary reference: `0` and the value in full (kept when there is room),
  /// or the value's position plus one.
  private func writeReference<Value: Hashable>(
    _ value: Value, in table: inout [Value], index: inout [Value: Int],
    to body: inout ByteWriter, literal: (Value, inout ByteWriter) -> Void
  ) {
    if let position = index[value] {
      body.writeVarUInt(position + 1)
      return
    }
    body.writeVarUInt(0)
    let start = body.count
    literal(value, &body)
    if table.count < Self.dictionaryLimit && body.count - start <= Self.storedNameLimit + 8 {
      index[value] = table.count
      table.append(value)
    }
  }

  /// CRC-32C of the stream id and the sequence number (8 bytes each, little-endian)
  /// followed by the frame's bytes before the checksum.
  static func checksum<C: Collection>(_ frame: C, stream: UInt64, sequence: UInt64) -> UInt32
  where C.Element == UInt8 {
    CRC32C.checksum(prefixedBy: stream, sequence, frame)
  }
}
