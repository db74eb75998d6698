// The receiving side of a ``RunCoder``: records read into the runs they carry, with the
// same prediction updates as the sender's, and checked as untrusted input (the Lamport
// limit, well-formed deletes, counters, lengths, UTF-8); a message's also as canonical.

extension RunCoder {
  /// Whether the records are a message's, read as canonical.
  private var canonical: Bool { Names.isCanonical }

  /// What a sequence of records carries: the runs of one field, and a list edit's item.
  struct Records {
    var key: EntityKey
    var field: String
    var inserts: [RGADelta.Insert] = []
    var deletes: [RGADelta.Delete] = []
    var listItem: (value: FieldValue, timestamp: Timestamp)?
  }

  /// Reads the records of a frame's body, or of a text edit message's body (from an
  /// empty context), the first of whose tags, `tag`, is read already, to the end of
  /// `reader`.
  ///
  /// A message (``MessageNames``) is read as canonical, since it has exactly one
  /// encoding: its target record first, its author record second, then at least one run, in counter order, joined
  /// as ``RGADelta/canonicalRuns()`` joins them, with every field the state predicts
  /// left out and every name the state holds referred to, and no list item record.
  /// A frame is only checked for what it means.
  mutating func readRecords(_ tag: UInt8, from reader: inout ByteReader) throws -> Records {
    var tag = tag
    var inserts: [RGADelta.Insert] = []
    var deletes: [RGADelta.Delete] = []
    var listItem: (value: FieldValue, timestamp: Timestamp)?
    var recordIndex = 0
    // In a message: whether the previous record was an insert run (a delete run), which
    // the next one of its kind must not continue.
    var previousIsInsert = false
    while true {
      let offset = reader.offset - 1
      let noRunsYet = inserts.isEmpty && deletes.isEmpty
      switch RecordType(rawValue: tag & 0x07) {
      case .target
      where noRunsYet && tag == RecordType.target.rawValue && (!canonical || recordIndex == 0):
        targetKey = try names.readKey(from: &reader)
        targetField = try names.readField(from: &reader)
      case .author
      where noRunsYet && tag == RecordType.author.rawValue && (!canonical || recordIndex == 1):
        noteAuthor(try names.readReplica(from: &reader))
      case .insert, .insertWithRightOrigin:
        let continuing =
          canonical && previousIsInsert && tag & 0x78 == 0x18
          && tag & 0x07 == RecordType.insert.rawValue
        if continuing {
          // Counter, Lamport number, origin and right origin all predicted: the run
          // continues the previous one, which the message joins with it.
          throw ConvergeDecodingError.invalidValue(
            offset: offset, reason: "insert run that continues the previous one")
        }
        inserts.append(try readInsert(tag, at: offset, from: &reader))
        previousIsInsert = true
      case .delete:
        let delete = try readDelete(tag, at: offset, from: &reader)
        if canonical {
          if let last = deletes.last, TextWire.canExtend(last, with: delete) {
            throw ConvergeDecodingError.invalidValue(
              offset: offset, reason: "delete run that continues the previous one")
          }
          guard delete.count <= TextWire.maximumDeleteRun else {
            throw ConvergeDecodingError.invalidValue(offset: offset, reason: "delete run too long")
          }
        }
        deletes.append(delete)
        previousIsInsert = false
      case .listItem where !canonical && tag == RecordType.listItem.rawValue:
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
      recordIndex += 1
      if reader.isAtEnd { break }
      tag = try reader.readUInt8()
    }
    guard let targetKey, let targetField else {
      throw ConvergeDecodingError.invalidValue(
        offset: reader.offset, reason: "runs without a text field")
    }
    return Records(
      key: targetKey, field: targetField, inserts: inserts, deletes: deletes,
      listItem: listItem)
  }

  private mutating func readInsert(
    _ tag: UInt8, at offset: Int, from reader: inout ByteReader
  ) throws -> RGADelta.Insert {
    let (author, counter) = try readFirstDot(tag, at: offset, from: &reader)
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
    if tag & 0x10 == 0 {
      let difference = try reader.readVarInt()
      guard !canonical || difference != 0 else {
        throw ConvergeDecodingError.invalidValue(
          offset: lamportOffset, reason: "Lamport number that is the predicted one")
      }
      lamport = nextLamport &+ UInt64(bitPattern: difference)
    }
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
      let replica = try names.readReplica(from: &reader)
      let originCounter = try reader.readVarUInt()
      guard originCounter > 0 else {
        throw ConvergeDecodingError.invalidValue(offset: originOffset, reason: "counter 0")
      }
      guard !canonical || replica != author || originCounter >= counter else {
        throw ConvergeDecodingError.invalidValue(
          offset: originOffset, reason: "explicit origin that has a shorter form")
      }
      origin = Dot(replica: replica, counter: originCounter)
    }
    if canonical, tag & 0x60 != 0, let origin, origin == lastInserted {
      throw ConvergeDecodingError.invalidValue(
        offset: originOffset, reason: "origin that is the predicted one")
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
        Dot(
          replica: try names.readReplica(from: &reader),
          counter: try reader.readVarUInt())
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

  private mutating func readDelete(
    _ tag: UInt8, at offset: Int, from reader: inout ByteReader
  ) throws -> RGADelta.Delete {
    let (author, counter) = try readFirstDot(tag, at: offset, from: &reader)
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
      let difference = try reader.readVarInt()
      guard !canonical || difference != 0 else {
        throw ConvergeDecodingError.invalidValue(
          offset: targetOffset, reason: "delete target that is the predicted one")
      }
      let counter = predicted.counter &+ UInt64(bitPattern: difference)
      target = Dot(replica: predicted.replica, counter: counter)
    case 2:
      let replica = try names.readReplica(from: &reader)
      guard !canonical || replica != predictedDeleteTarget?.replica else {
        throw ConvergeDecodingError.invalidValue(
          offset: targetOffset, reason: "delete target that has a shorter form")
      }
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

  /// A run's first dot: the current author's, and the counter the record at `offset`
  /// gives (predicted when its tag's bit 0x08 is set). In a message (`canonical`) runs
  /// come in counter order, each after the last counter of the one before, and a counter
  /// is written only when it is not the predicted one.
  private func readFirstDot(
    _ tag: UInt8, at offset: Int, from reader: inout ByteReader
  ) throws -> (author: ReplicaID, counter: UInt64) {
    let author = try Self.required(self.author, at: offset, reason: "run before its author")
    if tag & 0x08 != 0 {
      return (author, try Self.required(nextCounter, at: offset, reason: "no predicted counter"))
    }
    let counterOffset = reader.offset
    let counter = try reader.readVarUInt()
    guard counter > 0 else {
      throw ConvergeDecodingError.invalidValue(offset: counterOffset, reason: "counter 0")
    }
    if canonical, let nextCounter, counter <= nextCounter {
      throw ConvergeDecodingError.invalidValue(
        offset: counterOffset,
        reason: counter == nextCounter ? "counter that is the predicted one" : "runs out of order")
    }
    return (author, counter)
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
}
