/// The one coder of a text's (or a list's slots') runs as records: what a session frame
/// carries and what a text edit message's body is (see `FORMAT.md`, "Session frames").
///
/// A record states only what the records before it do not predict, so the coder holds
/// that context: the text field the runs edit, their author, the predictions for the
/// next insert and delete, and the names (replicas, entity keys, field names) the
/// records have stated in full, which later records refer to by position. `Names` is
/// where those live:
///
/// - ``StreamNames``, a ``SessionStream``'s dictionaries, carried from frame to frame;
/// - ``MessageNames``, a message's own few replicas, kept inline, so that a keystroke's
///   message allocates nothing but its buffer. A message names one target, first, so it
///   never refers to a key or field name.
///
/// Writing and reading are the same code for both, specialized by `Names`; a message is
/// read canonically (``RecordNames/isCanonical``), a frame only for what it means.
struct RunCoder<Names: RecordNames>: Sendable, Equatable {
  /// The text field the next runs edit.
  var targetKey: EntityKey?
  var targetField: String?
  /// The replica whose edits the next runs are.
  var author: ReplicaID?
  /// The author's next unused counter, if known.
  var nextCounter: UInt64?
  /// The Lamport number the next insert is predicted to take.
  var nextLamport: UInt64 = 1
  /// The last scalar inserted: the predicted origin of the next insert.
  var lastInserted: Dot?
  /// The right origin of the last insert: the predicted right origin of the next one
  /// (typing forward keeps it).
  var lastRightOrigin: Dot?
  /// The predicted target of the next delete.
  var predictedDeleteTarget: Dot?
  /// The timestamp of the last list item record (0 at the start): the next one is
  /// written as a difference from it.
  var lastTimestamp: UInt64 = 0
  /// The names stated so far.
  var names = Names()

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

// MARK: - Names

/// Where a ``RunCoder`` keeps the names its records state in full and refer to later.
///
/// A reference is `0` and the value in full (kept when the table has room), or the
/// value's position plus one.
protocol RecordNames: Sendable, Equatable {
  /// Whether records are read as a message's, which have exactly one encoding.
  static var isCanonical: Bool { get }
  init()
  mutating func writeKey(_ key: EntityKey, to body: inout ByteWriter)
  mutating func writeField(_ field: String, to body: inout ByteWriter)
  mutating func writeReplica(_ replica: ReplicaID, to body: inout ByteWriter)
  mutating func readKey(from reader: inout ByteReader) throws -> EntityKey
  mutating func readField(from reader: inout ByteReader) throws -> String
  mutating func readReplica(from reader: inout ByteReader) throws -> ReplicaID
}

/// A value a record can state in full.
protocol RecordLiteral: Hashable, Sendable {
  func writeLiteral(to writer: inout ByteWriter)
  static func readLiteral(from reader: inout ByteReader) throws -> Self
}

extension ReplicaID: RecordLiteral {
  func writeLiteral(to writer: inout ByteWriter) { writer.writeUInt64(rawValue) }
  static func readLiteral(from reader: inout ByteReader) throws -> ReplicaID {
    ReplicaID(rawValue: try reader.readUInt64())
  }
}

extension EntityKey: RecordLiteral {
  func writeLiteral(to writer: inout ByteWriter) { write(to: &writer) }
  static func readLiteral(from reader: inout ByteReader) throws -> EntityKey {
    try EntityKey(from: &reader)
  }
}

extension String: RecordLiteral {
  func writeLiteral(to writer: inout ByteWriter) { writer.writeString(self) }
  static func readLiteral(from reader: inout ByteReader) throws -> String {
    try reader.readString()
  }
}

/// One dictionary of a stream: the values in order of first mention, and, on the
/// sending side, their positions (the decoder leaves them empty).
struct NameTable<Value: RecordLiteral>: Sendable, Equatable {
  var values: [Value] = []
  var positions: [Value: Int] = [:]

  static func == (lhs: NameTable, rhs: NameTable) -> Bool { lhs.values == rhs.values }

  mutating func write(_ value: Value, to body: inout ByteWriter) {
    if let position = positions[value] {
      body.writeVarUInt(position + 1)
      return
    }
    body.writeVarUInt(0)
    let start = body.count
    value.writeLiteral(to: &body)
    if values.count < SessionStream.dictionaryLimit
      && body.count - start <= SessionStream.storedNameLimit + 8
    {
      positions[value] = values.count
      values.append(value)
    }
  }

  /// Reads a reference (a frame's, so a value in full that the table holds is read as
  /// it is).
  mutating func read(from reader: inout ByteReader) throws -> Value {
    let offset = reader.offset
    let reference = try reader.readVarUInt()
    guard reference == 0 else {
      guard reference <= UInt64(values.count) else {
        throw ConvergeDecodingError.invalidValue(offset: offset, reason: "unknown reference")
      }
      return values[Int(reference - 1)]
    }
    let start = reader.offset
    let value = try Value.readLiteral(from: &reader)
    if values.count < SessionStream.dictionaryLimit
      && reader.offset - start <= SessionStream.storedNameLimit + 8
    {
      values.append(value)
    }
    return value
  }
}

/// A ``SessionStream``'s dictionaries: every name a frame stated in full, for the
/// frames after it.
struct StreamNames: RecordNames {
  static var isCanonical: Bool { false }
  var replicas = NameTable<ReplicaID>()
  var keys = NameTable<EntityKey>()
  var fields = NameTable<String>()

  mutating func writeKey(_ key: EntityKey, to body: inout ByteWriter) {
    keys.write(key, to: &body)
  }
  mutating func writeField(_ field: String, to body: inout ByteWriter) {
    fields.write(field, to: &body)
  }
  mutating func writeReplica(_ replica: ReplicaID, to body: inout ByteWriter) {
    replicas.write(replica, to: &body)
  }
  mutating func readKey(from reader: inout ByteReader) throws -> EntityKey {
    try keys.read(from: &reader)
  }
  mutating func readField(from reader: inout ByteReader) throws -> String {
    try fields.read(from: &reader)
  }
  mutating func readReplica(from reader: inout ByteReader) throws -> ReplicaID {
    try replicas.read(from: &reader)
  }
}

/// A text edit message's names: its one target is stated in full, and its replicas (the
/// author first) are a list whose first entry is inline, so a message of one replica's
/// keystroke, which names no other, allocates nothing.
struct MessageNames: RecordNames {
  static var isCanonical: Bool { true }
  /// The first replica named, at position 1.
  var first: ReplicaID?
  /// The others, at positions 2 and on (a merged peer's delta can name many); `nil`
  /// until there is one, so a keystroke's message has nothing to release.
  var others: Others?

  /// Replicas after the first, and their positions for the writer once there are more
  /// than a few.
  struct Others: Sendable, Equatable {
    var list: [ReplicaID] = []
    var positions: [ReplicaID: Int] = [:]
  }

  /// How many entries `others` holds before the writer hashes them.
  static let searchedInOrder = 8

  var count: Int { first == nil ? 0 : 1 + (others?.list.count ?? 0) }

  mutating func writeKey(_ key: EntityKey, to body: inout ByteWriter) {
    body.writeVarUInt(0)
    key.write(to: &body)
  }

  mutating func writeField(_ field: String, to body: inout ByteWriter) {
    body.writeVarUInt(0)
    body.writeString(field)
  }

  mutating func writeReplica(_ replica: ReplicaID, to body: inout ByteWriter) {
    if let position = position(of: replica) {
      body.writeVarUInt(position)
      return
    }
    body.writeVarUInt(0)
    body.writeUInt64(replica.rawValue)
    append(replica)
  }

  /// A message names its target once, first: a reference can only be to nothing.
  mutating func readKey(from reader: inout ByteReader) throws -> EntityKey {
    try Self.readLiteralOnly(from: &reader)
  }

  mutating func readField(from reader: inout ByteReader) throws -> String {
    try Self.readLiteralOnly(from: &reader)
  }

  mutating func readReplica(from reader: inout ByteReader) throws -> ReplicaID {
    let offset = reader.offset
    let reference = try reader.readVarUInt()
    if reference == 1, let first { return first }
    guard reference == 0 else {
      guard reference <= UInt64(count), let others else {
        throw ConvergeDecodingError.invalidValue(offset: offset, reason: "unknown reference")
      }
      return others.list[Int(reference - 2)]
    }
    let replica = ReplicaID(rawValue: try reader.readUInt64())
    // At most `dictionaryLimit` entries, so the check is bounded.
    if replica == first || others?.list.contains(replica) == true {
      throw ConvergeDecodingError.invalidValue(
        offset: offset, reason: "value in full that has a reference")
    }
    append(replica)
    return replica
  }

  private static func readLiteralOnly<Value: RecordLiteral>(from reader: inout ByteReader)
    throws -> Value
  {
    let offset = reader.offset
    guard try reader.readVarUInt() == 0 else {
      throw ConvergeDecodingError.invalidValue(offset: offset, reason: "unknown reference")
    }
    return try Value.readLiteral(from: &reader)
  }

  /// The replica's reference (its position plus one), if it was named.
  private func position(of replica: ReplicaID) -> Int? {
    guard let first else { return nil }
    if replica == first { return 1 }
    guard let others else { return nil }
    if others.list.count <= Self.searchedInOrder {
      guard let index = others.list.firstIndex(of: replica) else { return nil }
      return index + 2
    }
    return others.positions[replica].map { $0 + 2 }
  }

  private mutating func append(_ replica: ReplicaID) {
    guard first != nil else {
      first = replica
      return
    }
    guard count < SessionStream.dictionaryLimit else { return }
    var added = others ?? Others()
    others = nil
    added.list.append(replica)
    if added.list.count == Self.searchedInOrder + 1 {
      for (index, other) in added.list.enumerated() { added.positions[other] = index }
    } else if added.list.count > Self.searchedInOrder {
      added.positions[replica] = added.list.count - 1
    }
    others = added
  }
}
