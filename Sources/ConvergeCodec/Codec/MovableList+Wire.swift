/// The wire form of a list field (`FORMAT.md` §8.3.2): its slots as a text's runs, each
/// coding its own content (§8.3.1), then its items sorted by value, each with its
/// presence and its move (a timestamp and a dot, the dot naming the item's slot).
///
/// A document state and a delta write a list the same way: a state's slots are the runs
/// of `delta(since: CausalContext())`, as a text's are.
protocol ListWire: ListItemStamps {
  /// The slots' runs and the items, as they go on the wire.
  var wireSlots: RGADelta { get }
  var wireItems: [FieldValue: MovableListItem] { get }
  /// Reads a list field's payload (after its tag), handing its slots' ids and delete
  /// dots to `checks` (``FieldChecks/checkRuns(_:_:of:)``).
  init(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    checks: inout FieldChecks
  ) throws
}

extension MovableList: ListWire {
  var wireSlots: RGADelta { slots.delta(since: CausalContext()) }
  var wireItems: [FieldValue: MovableListItem] { items }

  init(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    checks: inout FieldChecks
  ) throws {
    // A state may hold runs that share a counter (from separate messages), as a text's.
    let (runs, items) = try ListWireFields.read(from: &reader, replicas: &table) {
      try RGADelta(from: &$0, replicas: &$1) { checks.checkRuns($0, $1, of: .list) }
    }
    var slots = RGA()
    slots.apply(runs)
    self.init(slots: slots, items: items)
  }
}

extension MovableListDelta: ListWire {
  var wireSlots: RGADelta { slots }
  var wireItems: [FieldValue: MovableListItem] { items }

  init(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    checks: inout FieldChecks
  ) throws {
    let (runs, items) = try ListWireFields.read(from: &reader, replicas: &table) {
      try RGADelta(fromDelta: &$0, replicas: &$1) { checks.checkRuns($0, $1, of: .list) }
    }
    self.init(slots: runs, items: items)
  }
}

extension ListWire {
  func collectReplicas(into builder: inout ReplicaTable.Builder, slots: RGADelta) {
    slots.collectReplicas(into: &builder)
    for item in wireItems.values {
      item.presence.collectReplicas(into: &builder)
      if let stamp = item.position.stamp { builder.insert(stamp.dot.replica) }
    }
  }

  /// Writes the tag and the payload; `slots` are ``wireSlots`` (computed once by the
  /// caller, which collected their replicas).
  func write(to writer: inout ByteWriter, replicas table: ReplicaTable, slots: RGADelta) {
    writer.writeUInt8(FieldWireTag.list.rawValue)
    slots.write(to: &writer, replicas: table)
    let items = wireItems.sorted { $0.key < $1.key }
    writer.writeVarUInt(items.count)
    for (value, item) in items {
      value.write(to: &writer)
      item.presence.write(to: &writer, replicas: table)
      if let stamp = item.position.stamp {
        writer.writeUInt8(1)
        stamp.timestamp.write(to: &writer)
        stamp.dot.write(to: &writer, replicas: table)
      } else {
        writer.writeUInt8(0)
      }
    }
  }

  /// Throws unless every move is an event of `context`, as a register's write must be.
  func checkMoves(in context: CausalContext, offset: Int) throws {
    for item in wireItems.values {
      guard let dot = item.position.stamp?.dot else { continue }
      guard context.contains(dot) else {
        throw ConvergeDecodingError.invalidValue(
          offset: offset, reason: "list move that is not in the message's context")
      }
    }
  }
}

/// Reading what a list's state and delta share.
enum ListWireFields {
  static func read(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    readSlots: (inout ByteReader, inout DecodedReplicaTable) throws -> RGADelta
  ) throws -> (RGADelta, [FieldValue: MovableListItem]) {
    // The slots code their own content even inside a document state, whose texts share
    // the document's content code.
    let documentContent = table.documentContent
    table.documentContent = nil
    defer { table.documentContent = documentContent }
    let slots = try readSlots(&reader, &table)
    // An item is at least a value tag, two empty vectors and a move flag.
    let count = try reader.readCount(minimumBytesPerElement: 4)
    var items: [FieldValue: MovableListItem] = [:]
    items.reserveCapacity(count)
    try reader.readSortedEntries(
      count: count, keys: .init(plural: "list items", singular: "list item"),
      readKey: { try FieldValue(from: &$0) }, precedes: <,
      readValue: { reader, value, start in
        var item = MovableListItem()
        item.presence = try Presence(from: &reader, replicas: &table)
        guard item.presence.hasAdds else {
          throw ConvergeDecodingError.invalidValue(offset: start, reason: "list item never added")
        }
        let flagOffset = reader.offset
        switch try reader.readUInt8() {
        case 0: break
        case 1:
          let timestamp = try Timestamp(from: &reader)
          let dot = try Dot(from: &reader, replicas: &table)
          item.position.set(dot, stamp: .init(timestamp: timestamp, dot: dot))
        default:
          throw ConvergeDecodingError.invalidValue(offset: flagOffset, reason: "unknown move flag")
        }
        // Two spellings of one value (canonically equivalent strings) are one item.
        guard items.updateValue(item, forKey: value) == nil else {
          throw ConvergeDecodingError.invalidValue(offset: start, reason: "duplicate list item")
        }
        return true
      })
    return (slots, items)
  }
}

extension MovableList {
  /// The encoded bytes of the list's slots (runs, content and deletes, §8.3.2), of their
  /// delete runs alone, and of the slots with the slots `excluded` and their deletes left
  /// out: what collecting them would save, measured on the format. The last form is not
  /// a decodable state (the slots that name an excluded slot still do).
  ///
  /// - Complexity: O(s log s).
  package func slotBytes(excluding excluded: Set<Dot>) -> (all: Int, deletes: Int, kept: Int) {
    let all = slots.delta(since: CausalContext())
    let kept = Self.runs(all, excluding: excluded)
    return (
      Self.encodedSize(of: all), Self.encodedSize(of: RGADelta(inserts: [], deletes: all.deletes)),
      Self.encodedSize(of: kept)
    )
  }

  private static func encodedSize(of runs: RGADelta) -> Int {
    var builder = ReplicaTable.Builder()
    runs.collectReplicas(into: &builder)
    var writer = ByteWriter()
    runs.write(to: &writer, replicas: builder.build())
    return writer.count
  }
}
