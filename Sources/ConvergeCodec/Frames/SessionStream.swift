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
/// A self-contained text edit message (``MessageKind/textEditDelta``) is the same
/// records under an empty state: the target and the author in full, then the runs, with
/// the predictions carried from record to record inside the message (see
/// `DocumentDelta+Compact.swift`). One coder, `RunCoder`, writes and reads both: a
/// stream holds one over its dictionaries, a message makes one on the stack.
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
  /// The records' context: the target, the author, the predictions and the
  /// dictionaries, carried from frame to frame.
  var records = RunCoder<StreamNames>()

  /// A stream named `streamID`; a sending session picks a random one for every stream.
  package init(streamID: UInt64 = 0) {
    self.streamID = streamID
  }

  package static func == (lhs: SessionStream, rhs: SessionStream) -> Bool {
    lhs.streamID == rhs.streamID && lhs.sequence == rhs.sequence && lhs.records == rhs.records
  }

  /// Whether the next frame starts the stream.
  var isAtStart: Bool { sequence == 0 }
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
      records.writeRuns(edit.runs, of: edit.key, edit.field, to: &writer)
    } else if let edit = delta.listEdit, Self.isStreamable(edit.runs) {
      records.writeRuns(edit.runs, of: edit.key, edit.field, to: &writer)
      writer.writeUInt8(RecordType.listItem.rawValue)
      edit.value.write(to: &writer)
      writer.writeVarInt(
        Int64(truncatingIfNeeded: edit.timestamp.rawValue &- records.lastTimestamp))
      records.lastTimestamp = edit.timestamp.rawValue
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

  /// CRC-32C of the stream id and the sequence number (8 bytes each, little-endian)
  /// followed by the frame's bytes before the checksum.
  static func checksum<C: Collection>(_ frame: C, stream: UInt64, sequence: UInt64) -> UInt32
  where C.Element == UInt8 {
    CRC32C.checksum(prefixedBy: stream, sequence, frame)
  }
}
