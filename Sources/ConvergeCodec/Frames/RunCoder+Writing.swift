// The sending side of a ``RunCoder``: a text's (or a list's slots') runs as records,
// each stating only what the context does not predict.

extension RunCoder {
  typealias RecordType = SessionStream.RecordType

  /// Writes one replica's runs of the field `field` of `key` (a text's, or a list's
  /// slots), with the target and author records they need first: a frame's records, or,
  /// from an empty context, a text edit message's body.
  mutating func writeRuns(
    _ runs: RGADelta, of key: EntityKey, _ field: String, to body: inout ByteWriter
  ) {
    // A message states its one target first and never again, so it keeps none.
    if Names.isCanonical || targetKey != key || targetField != field {
      body.writeUInt8(RecordType.target.rawValue)
      names.writeKey(key, to: &body)
      names.writeField(field, to: &body)
      if !Names.isCanonical {
        targetKey = key
        targetField = field
      }
    }
    // `textEditBody` and `listEdit` guarantee one replica made every run.
    let runAuthor = runs.inserts.first?.id.replica ?? runs.deletes.first?.dot.replica
    if let runAuthor, runAuthor != author {
      body.writeUInt8(RecordType.author.rawValue)
      names.writeReplica(runAuthor, to: &body)
      noteAuthor(runAuthor)
    }
    // In counter order, so that each run's first counter is the predicted one.
    let inserts = runs.inserts
    let deletes = runs.deletes
    _ = RGADelta.inCounterOrder(
      inserts, deletes, insert: { writeInsert(inserts[$0], to: &body) },
      delete: { writeDelete(deletes[$0], to: &body) })
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
        names.writeReplica(origin.replica, to: &body)
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
        names.writeReplica(right.replica, to: &body)
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
      names.writeReplica(delete.target.replica, to: &body)
      body.writeVarUInt(delete.target.counter)
    default: break
    }
    noteDelete(delete)
  }
}
