// The receiving side of a ``SessionStream``: frames checked against the stream's
// position and decoded into the deltas they carry, with the same prediction updates
// as the sender's.

// MARK: - Decoding

extension SessionStream {
  /// Whether `bytes` look like a frame rather than a self-contained message.
  package static func isFrame<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
    bytes.first == magic
  }

  /// Checks a frame's header (magic, version, flags, length) without its stream: the
  /// stream a start frame names, and the body length.
  package static func header(of bytes: ArraySlice<UInt8>) throws -> (
    startedStream: UInt64?, bodyLength: Int
  ) {
    guard bytes.count >= 8 else { throw ConvergeDecodingError.truncated(offset: bytes.count) }
    var reader = ByteReader(bytes[..<(bytes.endIndex - 4)])
    guard try reader.readUInt8() == magic else { throw ConvergeDecodingError.badMagic }
    let flags = try reader.readUInt8()
    guard flags & 0x0F == version else {
      throw ConvergeDecodingError.unsupportedVersion(flags & 0x0F)
    }
    guard flags & ~(0x0F | startFlag) == 0 else {
      throw ConvergeDecodingError.invalidValue(offset: 1, reason: "unknown frame flags")
    }
    let stream = flags & startFlag != 0 ? try reader.readUInt64() : nil
    let lengthOffset = reader.offset
    let length = try reader.readVarUInt()
    guard length == UInt64(reader.remainingCount) else {
      throw ConvergeDecodingError.lengthMismatch(offset: lengthOffset)
    }
    return (stream, reader.remainingCount)
  }

  /// Decodes a frame of the stream and returns the delta it carries, joined with the
  /// deltas of any frames that arrived early and waited for it.
  ///
  /// A channel that delivers almost in order is tolerated: a frame up to
  /// ``lookahead`` ahead of its turn waits (at most ``holdLimit`` of them, in memory)
  /// and an already applied frame up to ``replayWindow`` back, or this stream's start
  /// frame again, is recognised and ignored; both return an empty delta. Anything else
  /// out of sequence means a frame was lost or the sender started another stream.
  ///
  /// - Throws: ``ConvergeDecodingError/frameOutOfSequence`` for a frame that does not fit
  ///   the stream; when it is one too many waiting, the waiting frames are dropped and
  ///   every frame is refused until a new stream starts. The errors of a damaged frame
  ///   otherwise, which change nothing.
  /// - Complexity: O(b) for a b-byte frame in order; a frame out of order is checked
  ///   against up to ``lookahead`` + ``replayWindow`` sequence numbers.
  package mutating func decode(_ bytes: ArraySlice<UInt8>) throws -> DocumentDelta {
    let header = try Self.header(of: bytes)
    let checksumStart = bytes.endIndex - 4
    var checksumReader = ByteReader(bytes[checksumStart...])
    let stated = try checksumReader.readUInt32()
    let covered = bytes[..<checksumStart]
    if let stream = header.startedStream {
      guard Self.checksum(covered, stream: stream, sequence: 0) == stated else {
        throw ConvergeDecodingError.checksumMismatch
      }
      // This stream's own start frame, repeated: it was applied already.
      if isStarted && stream == streamID { return DocumentDelta() }
      var state = SessionStream(streamID: stream)
      state.isStarted = true
      let delta = try state.readFrame(bytes, bodyLength: header.bodyLength)
      self = state
      return delta
    }
    guard isStarted else { throw ConvergeDecodingError.frameOutOfSequence }
    let stream = streamID
    func fits(_ sequence: UInt64) -> Bool {
      Self.checksum(covered, stream: stream, sequence: sequence) == stated
    }
    if fits(sequence) {
      var state = self
      var delta = try state.readFrame(bytes, bodyLength: header.bodyLength)
      while let held = state.heldFrames.removeValue(forKey: state.sequence) {
        let heldHeader = try Self.header(of: held[...])
        delta.merge(try state.readFrame(held[...], bodyLength: heldHeader.bodyLength))
      }
      self = state
      return delta
    }
    let (lookaheadEnd, overflow) = sequence.addingReportingOverflow(Self.lookahead)
    if !overflow, let ahead = (sequence + 1...lookaheadEnd).first(where: fits) {
      guard heldFrames[ahead] == nil else { return DocumentDelta() }
      guard heldFrames.count < Self.holdLimit else {
        // The frame they wait for is lost: the stream cannot go on until a new one starts.
        heldFrames = [:]
        isStarted = false
        throw ConvergeDecodingError.frameOutOfSequence
      }
      heldFrames[ahead] = Array(bytes)
      return DocumentDelta()
    }
    let replayStart = sequence > Self.replayWindow ? sequence - Self.replayWindow : 0
    if (replayStart..<sequence).contains(where: fits) { return DocumentDelta() }
    throw ConvergeDecodingError.frameOutOfSequence
  }

  /// Reads the body of a frame whose header and checksum were checked, and counts it.
  private mutating func readFrame(_ bytes: ArraySlice<UInt8>, bodyLength: Int) throws
    -> DocumentDelta
  {
    let checksumStart = bytes.endIndex - 4
    var reader = ByteReader(bytes[..<checksumStart])
    _ = try reader.readBytes(count: checksumStart - bytes.startIndex - bodyLength)
    let delta = try readBody(&reader)
    sequence += 1
    return delta
  }

  /// Reads a frame's records into the delta they carry.
  private mutating func readBody(_ reader: inout ByteReader) throws -> DocumentDelta {
    var tag = try reader.readUInt8()
    if tag == RecordType.embedded.rawValue {
      let message = try reader.readLengthPrefixedBytes()
      try reader.expectEnd()
      return try DocumentDelta(decoding: message)
    }
    var inserts: [RGADelta.Insert] = []
    var deletes: [RGADelta.Delete] = []
    var listItem: (value: FieldValue, timestamp: Timestamp)?
    while true {
      let offset = reader.offset - 1
      switch RecordType(rawValue: tag & 0x07) {
      case .target where inserts.isEmpty && deletes.isEmpty && tag == RecordType.target.rawValue:
        let key = try readReference(in: &keys, from: &reader) { reader in
          EntityKey(type: try reader.readString(), id: try reader.readString())
        }
        let field = try readReference(in: &fields, from: &reader) { try $0.readString() }
        target = (key, field)
      case .author where inserts.isEmpty && deletes.isEmpty && tag == RecordType.author.rawValue:
        noteAuthor(try readReplica(from: &reader))
      case .insert, .insertWithRightOrigin:
        inserts.append(try readInsert(tag, at: offset, from: &reader))
      case .delete:
        deletes.append(try readDelete(tag, at: offset, from: &reader))
      case .listItem where tag == RecordType.listItem.rawValue:
        // After the one slot it places (and the one it frees), and last.
        guard inserts.count == 1, inserts[0].length == 1, deletes.count <= 1,
          deletes.allSatisfy({ $0.count == 1 })
        else {
          throw ConvergeDecodingError.invalidValue(
            offset: offset, reason: "list item record without one slot")
        }
        let value = try FieldValue(from: &reader)
        let timestamp = lastTimestamp &+ UInt64(bitPattern: try reader.readVarInt())
        lastTimestamp = timestamp
        listItem = (value, Timestamp(rawValue: timestamp))
        guard reader.isAtEnd else {
          throw ConvergeDecodingError.invalidValue(
            offset: reader.offset, reason: "records after the list item record")
        }
      default:
        throw ConvergeDecodingError.invalidValue(
          offset: offset, reason: "unknown or misplaced record")
      }
      if reader.isAtEnd { break }
      tag = try reader.readUInt8()
    }
    guard let target else {
      throw ConvergeDecodingError.invalidValue(
        offset: reader.offset, reason: "runs without a text field")
    }
    // In the order written, which is the sender's: the frame reproduces its delta exactly.
    var runs = RGADelta()
    runs.inserts = inserts
    runs.deletes = deletes
    guard !runs.hasRunsSharingCounters else {
      throw ConvergeDecodingError.invalidValue(
        offset: reader.offset, reason: "runs that share a counter")
    }
    if let listItem {
      let edit = DocumentDelta.ListEdit(
        key: target.key, field: target.field, runs: runs, value: listItem.value,
        timestamp: listItem.timestamp)
      // One insert run, so the runs have one author and at least one dot.
      guard let delta = DocumentDelta.listEdit(edit) else {
        throw ConvergeDecodingError.invalidValue(offset: reader.offset, reason: "list edit")
      }
      return delta
    }
    // The same form of a text edit as the transaction and the text edit decoder make.
    guard let delta = DocumentDelta.textEdit(runs, field: target.field, of: target.key) else {
      throw ConvergeDecodingError.invalidValue(offset: reader.offset, reason: "frame without runs")
    }
    return delta
  }

  private mutating func readInsert(_ tag: UInt8, at offset: Int, from reader: inout ByteReader)
    throws -> RGADelta.Insert
  {
    let author = try Self.required(self.author, at: offset, reason: "run before its author")
    let counter = try readCounter(predicted: tag & 0x08 != 0, at: offset, from: &reader)
    var length = 1
    if tag & 0x80 == 0 {
      let lengthOffset = reader.offset
      // Every scalar takes at least one byte of the frame.
      length = try reader.readCount(minimumBytesPerElement: 1)
      guard length > 1 else {
        throw ConvergeDecodingError.invalidValue(offset: lengthOffset, reason: "run length")
      }
    }
    let step = UInt64(length)
    let lamportOffset = reader.offset
    var lamport = nextLamport
    if tag & 0x10 == 0 { lamport = nextLamport &+ UInt64(bitPattern: try reader.readVarInt()) }
    let (lamportEnd, lamportOverflow) = lamport.addingReportingOverflow(step)
    guard !lamportOverflow, lamportEnd <= RGA.lamportLimit else {
      throw ConvergeDecodingError.invalidValue(
        offset: lamportOffset, reason: "Lamport number out of range")
    }
    let end = try ByteReader.checkedAdd(counter, step, at: offset)
    let originOffset = reader.offset
    let origin: Dot?
    switch (tag >> 5) & 0x03 {
    case 0:
      origin = try Self.required(lastInserted, at: offset, reason: "no previous insert")
    case 1:
      origin = nil
    case 2:
      let distance = try reader.readVarUInt()
      guard counter >= 2, distance <= counter - 2 else {
        throw ConvergeDecodingError.invalidValue(offset: originOffset, reason: "origin distance")
      }
      origin = Dot(replica: author, counter: counter - 1 - distance)
    default:
      let replica = try readReplica(from: &reader)
      let originCounter = try reader.readVarUInt()
      guard originCounter > 0 else {
        throw ConvergeDecodingError.invalidValue(offset: originOffset, reason: "counter 0")
      }
      origin = Dot(replica: replica, counter: originCounter)
    }
    if let origin, origin.replica == author, origin.counter >= counter, origin.counter < end {
      throw ConvergeDecodingError.invalidValue(
        offset: originOffset, reason: "origin inside its own run")
    }
    var rightOrigin = lastRightOrigin
    if tag & 0x07 == RecordType.insertWithRightOrigin.rawValue {
      let rightOffset = reader.offset
      rightOrigin = try TextWire.readRightOrigin(
        from: &reader, origin: origin, replica: author, counter: counter, end: end
      ) { reader in
        Dot(replica: try readReplica(from: &reader), counter: try reader.readVarUInt())
      }
      guard rightOrigin != lastRightOrigin else {
        throw ConvergeDecodingError.invalidValue(
          offset: rightOffset, reason: "right origin that is the predicted one")
      }
    } else if let rightOrigin, rightOrigin.replica == author, rightOrigin.counter >= counter,
      rightOrigin.counter < end
    {
      throw ConvergeDecodingError.invalidValue(
        offset: offset, reason: "right origin inside its own run")
    }
    let scalars = try reader.readScalars(count: length)
    let id = Dot(replica: author, counter: counter)
    noteInsert(id: id, lamport: lamport, rightOrigin: rightOrigin, length: length)
    return RGADelta.Insert(
      id: id, lamport: lamport, origin: origin, rightOrigin: rightOrigin, scalars: scalars)
  }

  private mutating func readDelete(_ tag: UInt8, at offset: Int, from reader: inout ByteReader)
    throws -> RGADelta.Delete
  {
    let author = try Self.required(self.author, at: offset, reason: "run before its author")
    let counter = try readCounter(predicted: tag & 0x08 != 0, at: offset, from: &reader)
    var count: UInt64 = 1
    if tag & 0x40 == 0 {
      let countOffset = reader.offset
      count = try reader.readVarUInt()
      guard count > 1 else {
        throw ConvergeDecodingError.invalidValue(offset: countOffset, reason: "run length")
      }
    }
    let descending = tag & 0x80 != 0
    guard !descending || count > 1 else {
      throw ConvergeDecodingError.invalidValue(offset: offset, reason: "descending single delete")
    }
    let targetOffset = reader.offset
    let target: Dot
    switch (tag >> 4) & 0x03 {
    case 0:
      target = try Self.required(predictedDeleteTarget, at: offset, reason: "no predicted target")
    case 1:
      let predicted = try Self.required(
        predictedDeleteTarget, at: offset, reason: "no predicted target")
      let counter = predicted.counter &+ UInt64(bitPattern: try reader.readVarInt())
      target = Dot(replica: predicted.replica, counter: counter)
    case 2:
      let replica = try readReplica(from: &reader)
      target = Dot(replica: replica, counter: try reader.readVarUInt())
    default:
      throw ConvergeDecodingError.invalidValue(offset: offset, reason: "unknown target mode")
    }
    let delete = RGADelta.Delete(
      dot: Dot(replica: author, counter: counter), target: target, count: count,
      isDescending: descending)
    guard delete.isWellFormed else {
      throw ConvergeDecodingError.invalidValue(offset: targetOffset, reason: "delete out of range")
    }
    noteDelete(delete)
    return delete
  }

  private func readCounter(predicted: Bool, at offset: Int, from reader: inout ByteReader)
    throws -> UInt64
  {
    if predicted {
      return try Self.required(nextCounter, at: offset, reason: "no predicted counter")
    }
    let counterOffset = reader.offset
    let counter = try reader.readVarUInt()
    guard counter > 0 else {
      throw ConvergeDecodingError.invalidValue(offset: counterOffset, reason: "counter 0")
    }
    return counter
  }

  /// `value`, which a record at `offset` relies on (the author, a prediction): a frame
  /// whose stream has none is `invalidValue` at `offset` for `reason`.
  @inline(__always)
  private static func required<Value>(_ value: Value?, at offset: Int, reason: String) throws
    -> Value
  {
    guard let value else {
      throw ConvergeDecodingError.invalidValue(offset: offset, reason: reason)
    }
    return value
  }

  private mutating func readReplica(from reader: inout ByteReader) throws -> ReplicaID {
    try readReference(in: &replicas, from: &reader) { ReplicaID(rawValue: try $0.readUInt64()) }
  }

  /// Reads a dictionary reference written by `writeReference`.
  private func readReference<Value>(
    in table: inout [Value], from reader: inout ByteReader,
    literal: (inout ByteReader) throws -> Value
  ) throws -> Value {
    let offset = reader.offset
    let reference = try reader.readVarUInt()
    guard reference == 0 else {
      guard reference <= UInt64(table.count) else {
        throw ConvergeDecodingError.invalidValue(offset: offset, reason: "unknown reference")
      }
      return table[Int(reference - 1)]
    }
    let start = reader.offset
    let value = try literal(&reader)
    if table.count < Self.dictionaryLimit && reader.offset - start <= Self.storedNameLimit + 8 {
      table.append(value)
    }
    return value
  }
}
