/// The origins of text runs on the wire (see `FORMAT.md`, "RGA text"): each run names
/// the item its first scalar follows and the item that followed it then, in the
/// shortest of a few forms, and a reader refuses every other form, so a run has exactly
/// one encoding.
extension TextWire {
  static func readOrigin(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    replica: ReplicaID, counter: UInt64, end: UInt64
  ) throws -> Dot? {
    let start = reader.offset
    let code = try reader.readVarUInt()
    switch code {
    case headOrigin:
      return nil
    case explicitOrigin:
      let origin = try Dot(from: &reader, replicas: &table)
      if origin.replica == replica, origin.counter < end {
        throw ConvergeDecodingError.invalidValue(
          offset: start,
          reason: origin.counter < counter
            ? "explicit origin that has a shorter form" : "origin inside its own run")
      }
      return origin
    default:
      let back = code - firstOwnOrigin
      guard back < counter - 1 else {
        throw ConvergeDecodingError.invalidValue(offset: start, reason: "origin before counter 1")
      }
      return Dot(replica: replica, counter: counter - 1 - back)
    }
  }

  /// The code of a run's right origin in its shortest form: the end, the item after its
  /// origin in the origin's replica (typing inside earlier text), an earlier id of the
  /// run's own replica; `nil` when it must be written as an explicit dot
  /// (``explicitOrigin``, then the dot in the message's own replica reference).
  static func rightOriginCode(_ rightOrigin: Dot?, of id: Dot, origin: Dot?) -> UInt64? {
    guard let right = rightOrigin else { return endRightOrigin }
    if right == origin.flatMap(nextInReplica) { return nextOfOriginRightOrigin }
    if right.replica == id.replica && right.counter < id.counter {
      return firstOwnRightOrigin + (id.counter - 1 - right.counter)
    }
    return nil
  }

  /// Writes a run's right origin (``rightOriginCode(_:of:origin:)``).
  static func writeRightOrigin(
    _ rightOrigin: Dot?, of id: Dot, origin: Dot?, to writer: inout ByteWriter,
    replicas table: ReplicaTable
  ) {
    if let code = rightOriginCode(rightOrigin, of: id, origin: origin) {
      writer.writeVarUInt(code)
    } else if let right = rightOrigin {
      writer.writeVarUInt(explicitOrigin)
      right.write(to: &writer, replicas: table)
    }
  }

  /// The id after `dot` in its replica, if there is one.
  static func nextInReplica(_ dot: Dot) -> Dot? {
    dot.counter < .max ? Dot(replica: dot.replica, counter: dot.counter + 1) : nil
  }

  /// Reads what ``writeRightOrigin(_:of:origin:to:replicas:)`` wrote, an explicit dot
  /// through `readExplicit`, refusing a form that is not the shortest and a right origin
  /// inside its own run `counter..<end` of `replica`.
  static func readRightOrigin(
    from reader: inout ByteReader, origin: Dot?, replica: ReplicaID, counter: UInt64,
    end: UInt64, readExplicit: (inout ByteReader) throws -> Dot
  ) throws -> Dot? {
    let start = reader.offset
    let code = try reader.readVarUInt()
    let next = origin.flatMap(nextInReplica)
    let right: Dot
    switch code {
    case endRightOrigin:
      return nil
    case explicitOrigin:
      right = try readExplicit(&reader)
      guard right.counter > 0 else {
        throw ConvergeDecodingError.invalidValue(offset: start, reason: "zero dot counter")
      }
      guard right != next, right.replica != replica || right.counter >= counter else {
        throw ConvergeDecodingError.invalidValue(
          offset: start, reason: "explicit right origin that has a shorter form")
      }
    case nextOfOriginRightOrigin:
      guard let next else {
        throw ConvergeDecodingError.invalidValue(
          offset: start, reason: "right origin after an origin that has no next id")
      }
      right = next
    default:
      let back = code - firstOwnRightOrigin
      guard back < counter - 1 else {
        throw ConvergeDecodingError.invalidValue(
          offset: start, reason: "right origin before counter 1")
      }
      right = Dot(replica: replica, counter: counter - 1 - back)
      guard right != next else {
        throw ConvergeDecodingError.invalidValue(
          offset: start, reason: "right origin that has a shorter form")
      }
    }
    if right.replica == replica, right.counter >= counter, right.counter < end {
      throw ConvergeDecodingError.invalidValue(
        offset: start, reason: "right origin inside its own run")
    }
    return right
  }
}
