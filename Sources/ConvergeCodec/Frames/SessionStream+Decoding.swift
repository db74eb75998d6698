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
    let tag = try reader.readUInt8()
    if tag == RecordType.embedded.rawValue {
      let message = try reader.readLengthPrefixedBytes()
      try reader.expectEnd()
      return try DocumentDelta(decoding: message)
    }
    let records = try self.records.readRecords(tag, from: &reader)
    // In the order written, which is the sender's: the frame reproduces its delta exactly.
    var runs = RGADelta()
    runs.inserts = records.inserts
    runs.deletes = records.deletes
    guard !runs.hasRunsSharingCounters else {
      throw ConvergeDecodingError.invalidValue(
        offset: reader.offset, reason: "runs that share a counter")
    }
    if let listItem = records.listItem {
      let edit = DocumentDelta.ListEdit(
        key: records.key, field: records.field, runs: runs, value: listItem.value,
        timestamp: listItem.timestamp)
      // One insert run, so the runs have one author and at least one dot.
      guard let delta = DocumentDelta.listEdit(edit) else {
        throw ConvergeDecodingError.invalidValue(offset: reader.offset, reason: "list edit")
      }
      return delta
    }
    // The same form of a text edit as the transaction and the text edit decoder make.
    guard let delta = DocumentDelta.textEdit(runs, field: records.field, of: records.key)
    else {
      throw ConvergeDecodingError.invalidValue(offset: reader.offset, reason: "frame without runs")
    }
    return delta
  }
}
