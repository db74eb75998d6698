#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Wire form of a whole document (see `FORMAT.md`, "Document"): one replica table, the
/// causal context, then every entity sorted by key, each with its presence and its
/// fields sorted by name.
///
/// ```swift
/// let bytes = replica.document.encoded()   // save it, send it
/// let restored = try Document(decoding: bytes)
/// // restored == replica.document, and restored.encoded() == bytes
/// ```
///
/// Equal documents encode to equal bytes, however they were reached: maps are written
/// sorted and text runs in one canonical shape. Decoding accepts exactly those bytes.
///
/// - Complexity: encoding is O(n log n) and decoding O(n log n) for n bytes of output.
extension Document {
  /// The document as a ``MessageKind/documentState`` message.
  public func encoded() -> [UInt8] { encoded(as: .documentState) }

  /// The document as a ``MessageKind/legacyDocumentState`` message, each text coding its
  /// own content: never written by the library, only by tests that check that its
  /// decoder accepts exactly what an earlier build wrote.
  package func legacyEncoded() -> [UInt8] { encoded(as: .legacyDocumentState) }

  private func encoded(as kind: MessageKind) -> [UInt8] {
    var builder = ReplicaTable.Builder()
    builder.insert(contentsOf: context.replicas)
    // Each text's runs are taken once: they name replicas for the table, give the content
    // its code, then are written. By the entity's position, so no key is hashed for them.
    var texts = [[String: TextWire.PreparedRuns]](repeating: [:], count: entities.count)
    var contents: [[UInt8]] = []
    for position in entities.values.indices {
      entities.values[position].collectReplicas(into: &builder)
      for (name, runs) in entities.values[position].textRuns() {
        runs.collectReplicas(into: &builder)
        let prepared = TextWire.PreparedRuns(runs)
        contents.append(prepared.content)
        texts[position][name] = prepared
      }
    }
    let table = builder.build()
    let shared = kind == .documentState ? DocumentContentCode.Writer(contents: contents) : nil
    contents = []
    let content: ([UInt8], inout ByteWriter) -> Void = { content, writer in
      guard let shared else { return ContentCoding.write(content, to: &writer) }
      shared.write(content, to: &writer)
    }
    return Envelope.seal(kind: kind) { writer in
      table.write(to: &writer)
      context.write(to: &writer, replicas: table)
      shared?.writeHeader(to: &writer)
      writer.writeVarUInt(entities.count)
      // Positions sorted by key: a decoded document's are already in order.
      let keys = Array(entities.keys)
      for position in keys.indices.sorted(by: { keys[$0] < keys[$1] }) {
        keys[position].write(to: &writer)
        entities.values[position].write(
          to: &writer, replicas: table, texts: texts[position], content: content)
      }
    }
  }

  /// Decodes a message made by ``encoded()``, or a ``MessageKind/legacyDocumentState``
  /// message of an earlier build.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for any input that ``encoded()`` (or an
  ///   earlier build's) could not have produced.
  ///
  /// `bytes` may be an array, a slice of a larger buffer, or a `Data` (any collection of
  /// bytes; one that is not an array or a slice is copied once).
  @inlinable
  public init(decoding bytes: some Collection<UInt8>) throws {
    self = try Self.decode(Envelope.slice(bytes))
  }

  /// Decodes a message made by ``encoded()`` that this store saved with `tag`, its
  /// ``SnapshotKey/tag(of:)`` under `key`: as ``init(decoding:)`` does, but when the tag
  /// matches, the texts' content is left coded until a text is read
  /// (`DeferredTexts`), which makes loading a library of notes several times faster.
  ///
  /// Bytes whose tag does not match (damaged, or not written with this key) are decoded
  /// with every check, exactly as ``init(decoding:)`` decodes them.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for any input that ``encoded()`` could not
  ///   have produced, except, with a matching tag, a text's content: that is trusted, and
  ///   a text whose content does not decode (which only a key holder could write) reads
  ///   as an empty text.
  @inlinable
  public init(decoding bytes: some Collection<UInt8>, tag: UInt64, key: SnapshotKey) throws {
    let slice = Envelope.slice(bytes)
    self = try Self.decode(slice, deferringTexts: key.tag(of: slice) == tag)
  }

  /// Decodes `bytes`, deferring its texts (`DeferredTexts`) when `deferringTexts`:
  /// only for bytes whose ``SnapshotKey`` tag matched (a store that checked the tag
  /// itself calls this directly).
  @usableFromInline
  package static func decode(_ bytes: ArraySlice<UInt8>, deferringTexts: Bool = false) throws
    -> Document
  {
    // A matching tag covers every byte the checksum covers.
    try Envelope.decode(
      bytes, as: [.documentState, .legacyDocumentState], checksummed: !deferringTexts
    ) { kind, reader in
      try readBody(
        &reader, sharedContent: kind == .documentState, deferringTexts: deferringTexts)
    }
  }

  static func readBody(
    _ reader: inout ByteReader, sharedContent: Bool, deferringTexts: Bool = false
  ) throws -> Document {
    var document = Document()
    (document.context, document.entities) = try EntityRecord.readBody(
      from: &reader, sharedContent: sharedContent, deferringTexts: deferringTexts)
    document.events = EventIndex(document.entities)
    document.deriveFromEntities()
    return document
  }
}

extension EntityKey {
  func write(to writer: inout ByteWriter) {
    writer.writeString(type)
    writer.writeString(id)
  }

  init(from reader: inout ByteReader) throws {
    let type = try reader.readString()
    self.init(type: type, id: try reader.readString())
  }

  /// Reads a count and that many (key, entity) pairs with keys strictly increasing into
  /// a new `Map`.
  static func readMap<Map: DecodedEntityMap>(
    from reader: inout ByteReader, _ readValue: (inout ByteReader) throws -> Map.Entity
  ) throws -> Map {
    // An entity is at least two empty strings, two empty vectors and a field count.
    let count = try reader.readCount(minimumBytesPerElement: 5)
    var map = Map()
    map.reserveCapacity(count)
    try reader.readSortedEntries(
      count: count, keys: .init(plural: "entities", singular: "entity"),
      readKey: { try EntityKey(from: &$0) }, precedes: <,
      readValue: { reader, key, _ in map.insertDecoded(key, try readValue(&reader)) })
    return map
  }
}

/// What a body's entities decode into: a document's table or a delta's dictionary.
protocol DecodedEntityMap {
  associatedtype Entity
  associatedtype Entities: Sequence<Entity>
  init()
  /// The entities, in any order.
  var values: Entities { get }
  mutating func reserveCapacity(_ capacity: Int)
  /// Adds `entity` under `key`; `false`, changing nothing, if the map holds `key`.
  mutating func insertDecoded(_ key: EntityKey, _ entity: Entity) -> Bool
}

extension Dictionary: DecodedEntityMap where Key == EntityKey {
  typealias Entity = Value

  mutating func insertDecoded(_ key: EntityKey, _ entity: Value) -> Bool {
    updateValue(entity, forKey: key) == nil
  }
}

extension EntityTable: DecodedEntityMap {
  mutating func insertDecoded(_ key: EntityKey, _ entity: EntityRecord) -> Bool {
    guard index(forKey: key) == nil else { return false }
    append(key, entity)
    return true
  }
}

extension Presence {
  func collectReplicas(into builder: inout ReplicaTable.Builder) {
    forEachLatest { replica, _ in builder.insert(replica) }
  }

  /// Writes `added`, then `removed`, as version vectors.
  func write(to writer: inout ByteWriter, replicas table: ReplicaTable) {
    added.write(to: &writer, replicas: table)
    removed.write(to: &writer, replicas: table)
  }

  init(from reader: inout ByteReader, replicas table: inout DecodedReplicaTable) throws {
    // Most presences are one add: its entry is kept apart, so no vector is built for it.
    var first: Dot?
    var rest: [(replica: ReplicaID, value: UInt64)] = []
    try VersionVector.readEntries(from: &reader, replicas: &table) { _ in
    } entry: { replica, counter in
      if first == nil {
        first = Dot(replica: replica, counter: counter)
      } else {
        rest.append((replica, counter))
      }
    }
    let removed = try VersionVector(from: &reader, replicas: &table)
    guard rest.isEmpty, removed.isEmpty else {
      let added = (first.map { [($0.replica, $0.counter)] } ?? []) + rest
      self.init(added: VersionVector(sortedEntries: added), removed: removed)
      return
    }
    self = first.map(Presence.add) ?? Presence()
  }
}

/// An entity as a document's or a delta's body holds it: its presence, then its fields.
protocol WireEntity {
  associatedtype Text: Sendable & Equatable
  associatedtype List: ListWire
  var presence: Presence { get }
  /// The entity's fields by name: a document's and a delta's share the one table.
  var fields: FieldTable<FieldContent<Text, List>> { get }
  init(presence: Presence, fields: FieldTable<FieldContent<Text, List>>)
  /// A text field's runs as the entity holds them: a delta's own; `nil` for a document's,
  /// whose runs are taken once per encoding (``EntityRecord/textRuns()``).
  static func heldRuns(of field: FieldContent<Text, List>) -> RGADelta?
  /// Reads a text field's content: a document's text, or a delta's runs, whose insert
  /// ids and delete dots it hands to `checks` (``FieldChecks/checkRuns(_:_:of:)``).
  static func readText(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    checks: inout FieldChecks
  ) throws -> Text
}

extension WireEntity {
  /// Reads what a document's and a delta's bodies share: the replica table, the causal
  /// context, a document state's content code (`sharedContent`), and the entities sorted
  /// by key; then checks that the body uses every
  /// replica of the table, that every register's write is in the context and within
  /// its entity's version (``FieldWire/checkRegister(_:presence:context:offset:)``), and
  /// that every text run's ids and delete dots are in the context.
  static func readBody<Map: DecodedEntityMap>(
    from reader: inout ByteReader, sharedContent: Bool = false, deferringTexts: Bool = false
  ) throws -> (context: CausalContext, entities: Map) where Map.Entity == Self {
    var table = try DecodedReplicaTable(from: &reader)
    let context = try CausalContext(from: &reader, replicas: &table)
    if sharedContent {
      table.documentContent = try DocumentContentCode.Reader(from: &reader)
      if deferringTexts {
        table.contentReading = .deferred(DeferredTexts(reading: reader, table: table))
      }
    }
    var checks = FieldChecks(context: context)
    let entities: Map = try EntityKey.readMap(from: &reader) { reader in
      try Self(from: &reader, replicas: &table, checks: &checks)
    }
    try table.checkAllReferenced(offset: reader.offset)
    // A deferring load counted no content: the code is the one its writer chose.
    if table.contentReading.deferral == nil {
      try table.documentContent?.checkCanonical(offset: reader.offset)
    }
    try checks.throwFirstFailure(offset: reader.offset)
    return (context, entities)
  }

  /// Reads an entity, each of its fields checked by `checks` as it is read.
  init(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    checks: inout FieldChecks
  ) throws {
    let presence = try Presence(from: &reader, replicas: &table)
    let fields: FieldTable<FieldContent<Text, List>> = try FieldWire.readFields(
      from: &reader, replicas: &table, presence: presence, checks: &checks,
      readText: Self.readText)
    self.init(presence: presence, fields: fields)
  }

  // The entity's presence and fields are passed to the two below by the conforming type,
  // not read here: a read through the protocol's getter copied the table (1% more
  // instructions to encode a library).

  /// Adds the replicas of an entity's `presence` and `fields` to `builder`; a text
  /// field's are those of its ``heldRuns(of:)``.
  static func collectReplicas(
    of presence: Presence, _ fields: FieldTable<FieldContent<Text, List>>,
    into builder: inout ReplicaTable.Builder
  ) {
    presence.collectReplicas(into: &builder)
    for field in fields.values {
      field.collectReplicas(into: &builder, runs: heldRuns(of: field))
    }
  }

  /// Writes an entity's `presence` and `fields`; a text field's runs are what
  /// `writeText` writes for the field's name and text (inlined, so that the closure
  /// costs nothing).
  @inline(__always)
  static func write(
    _ presence: Presence, _ fields: FieldTable<FieldContent<Text, List>>,
    to writer: inout ByteWriter, replicas table: ReplicaTable,
    text writeText: (String, Text, inout ByteWriter) -> Void
  ) {
    presence.write(to: &writer, replicas: table)
    writer.writeVarUInt(fields.count)
    // The two arrays zipped here, not the table's own iterator: generic, declared in
    // another module, it ran unspecialized (runtime metadata at every field).
    for (name, field) in zip(fields.keys, fields.values) {
      writer.writeString(name)
      field.write(to: &writer, replicas: table) { text, writer in writeText(name, text, &writer) }
    }
  }
}

/// The checks of a body's registers, lists and texts against its causal context: every
/// register's write is an event of the context and within its entity's version
/// (``FieldWire/checkRegister(_:presence:context:offset:)``), a parent field holds a
/// move, a list's moves are events of the context, and so is every insert id and delete
/// dot of a text's runs and of a list's slots (``checkRuns(_:_:of:)``).
///
/// Presences are not checked against the context: a presence is a summary (each
/// replica's latest add, and what removals observed), and a delta carries a changed
/// entity's, set element's or list item's whole presence, so its adds may be events the
/// receiver was known to hold and the message's context leaves out (FORMAT.md §8.2).
///
/// Each field is checked as it is read, while its entity's presence is at hand; the first
/// failure is thrown once the whole body is read, at its end, after the checks of the
/// replica table and the content code, as a pass over the entities did then. That pass
/// read each entity's presence and fields back through another module's accessors, and
/// was a tenth of the extra cost of a library load after the module split.
struct FieldChecks {
  let context: CausalContext
  /// The first failing check, run again with the body's end offset.
  private var failure: ((Int) throws -> Void)?

  /// The context's counters of the replica whose run events were checked last: a
  /// text's runs are mostly one replica's, and a library's texts a few replicas'. When
  /// they are one range (a replica that missed nothing), `knownSpan` is that range, and a
  /// run is tested against it inline.
  private var knownReplica: ReplicaID?
  private var known = CounterRanges()
  private var knownSpan: ClosedRange<UInt64>?

  /// What holds the runs checked: a text or a list's slots (§8.3, §8.3.2), named by the
  /// error's reason.
  enum RunHolder {
    case text, list

    var reason: String {
      switch self {
      case .text: "text run that is not in the message's context"
      case .list: "list slot that is not in the message's context"
      }
    }
  }

  init(context: CausalContext) { self.context = context }

  /// Checks that every insert id and delete dot of a text's runs, or of a list's slots,
  /// is an event of the context (`headers` and `deletes`, as a state's or a delta's runs
  /// are read: ``RGADelta/init(from:replicas:inspecting:)``). A text or a list that held
  /// ids beyond it would break the invariant a merge relies on (the context covers every
  /// dot its data holds): one holding this replica's ids would make its own next
  /// keystrokes look stale, and hand its next list insert a slot id it already holds,
  /// so that the insert changes nothing. A run is one replica's consecutive counters, so
  /// each run is one range test.
  mutating func checkRuns(
    _ headers: [TextWire.RunHeader], _ deletes: [RGADelta.Delete], of holder: RunHolder
  ) {
    for header in headers {
      checkEvents(
        of: header.id.replica, from: header.id.counter, count: UInt64(clamping: header.length),
        in: holder)
    }
    for delete in deletes {
      checkEvents(of: delete.dot.replica, from: delete.dot.counter, count: delete.count, in: holder)
    }
  }

  /// Records a failure unless the counters `lower ..< lower + count` of `replica` are
  /// events of the context.
  private mutating func checkEvents(
    of replica: ReplicaID, from lower: UInt64, count: UInt64, in holder: RunHolder
  ) {
    guard failure == nil, count > 0 else { return }
    if knownReplica != replica {
      knownReplica = replica
      known = context.counters(of: replica)
      knownSpan = known.ranges.count == 1 ? known.ranges.first : nil
    }
    let (last, overflow) = lower.addingReportingOverflow(count - 1)
    if !overflow {
      if let span = knownSpan {
        if span.lowerBound <= lower, last <= span.upperBound { return }
      } else if known.contains(lower...last) {
        return
      }
    }
    let reason = holder.reason
    failure = { offset in
      throw ConvergeDecodingError.invalidValue(offset: offset, reason: reason)
    }
  }

  /// Checks `field` of the entity whose presence is `presence`.
  mutating func check<Text, List: ListWire>(
    _ field: FieldContent<Text, List>, presence: Presence
  ) {
    guard failure == nil else { return }
    let context = self.context
    do {
      try Self.check(field, presence: presence, context: context, offset: 0)
    } catch {
      failure = { offset in
        try Self.check(field, presence: presence, context: context, offset: offset)
      }
    }
  }

  /// Throws the first failure found, if any, at `offset`.
  func throwFirstFailure(offset: Int) throws {
    try failure?(offset)
  }

  private static func check<Text, List: ListWire>(
    _ field: FieldContent<Text, List>, presence: Presence, context: CausalContext, offset: Int
  ) throws {
    switch field {
    case .register(let register):
      try FieldWire.checkRegister(register, presence: presence, context: context, offset: offset)
    case .parent(let register):
      try FieldWire.checkRegister(register, presence: presence, context: context, offset: offset)
      if let value = register.value, ParentMove(fieldValue: value) == nil {
        throw ConvergeDecodingError.invalidValue(
          offset: offset, reason: "parent field whose value is not a move")
      }
    case .list(let list):
      try list.checkMoves(in: context, offset: offset)
    case .set, .text:
      return
    }
  }
}

/// The field kind tags of the wire form.
enum FieldWireTag: UInt8 {
  /// A register holding a write: stamp, then value.
  case register = 0
  /// A set: its elements with their presence.
  case set = 1
  /// Text: its runs.
  case text = 2
  /// A register that was never written: no payload.
  case emptyRegister = 3
  /// A movable list: its slots' runs, then its items (§8.3.2).
  case list = 4
  /// A tree node's parent: a register's stamp, then its move as a value (§8.3.3).
  case parent = 5
}

/// The wire forms shared by document fields and delta fields.
enum FieldWire {
  static func collectReplicas(
    of register: LWWRegister<FieldValue>, into builder: inout ReplicaTable.Builder
  ) {
    if let stamp = register.stamp { builder.insert(stamp.dot.replica) }
  }

  static func collectReplicas(
    of elements: SetElements, into builder: inout ReplicaTable.Builder
  ) {
    for presence in elements.presences { presence.collectReplicas(into: &builder) }
  }

  /// Writes the tag and payload of a register; a parent field's (`parent`) under its own
  /// tag, which a parent field never written also takes, with no payload.
  static func write(
    _ register: LWWRegister<FieldValue>, to writer: inout ByteWriter, replicas table: ReplicaTable,
    parent: Bool = false
  ) {
    guard let stamp = register.stamp, let value = register.value else {
      writer.writeUInt8(
        parent ? FieldWireTag.parent.rawValue : FieldWireTag.emptyRegister.rawValue)
      if parent { writer.writeUInt8(0) }
      return
    }
    if parent {
      writer.writeUInt8(FieldWireTag.parent.rawValue)
      writer.writeUInt8(1)
    } else {
      writer.writeUInt8(FieldWireTag.register.rawValue)
    }
    stamp.timestamp.write(to: &writer)
    stamp.dot.write(to: &writer, replicas: table)
    value.write(to: &writer)
  }

  /// Reads the payload of a register written with a ``FieldWireTag/register`` tag.
  static func readRegister(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable
  ) throws -> LWWRegister<FieldValue> {
    let timestamp = try Timestamp(from: &reader)
    let dot = try Dot(from: &reader, replicas: &table)
    let value = try FieldValue(from: &reader)
    return LWWRegister(value: value, stamp: .init(timestamp: timestamp, dot: dot))
  }

  /// Reads the payload of a parent field: a flag (0: never written, 1: a write), then the
  /// write as a register's.
  static func readParent(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable
  ) throws -> LWWRegister<FieldValue> {
    let start = reader.offset
    switch try reader.readUInt8() {
    case 0: return LWWRegister()
    case 1: return try readRegister(from: &reader, replicas: &table)
    default:
      throw ConvergeDecodingError.invalidValue(offset: start, reason: "parent field flag")
    }
  }

  /// Throws unless the register's write is an event of `context` and no newer than its
  /// entity's version: true of every state and every delta a replica makes, and what
  /// keeps a peer that missed the message able to get the write from a handshake (a
  /// write outside every context is never re-sent).
  static func checkRegister(
    _ register: LWWRegister<FieldValue>, presence: Presence, context: CausalContext, offset: Int
  ) throws {
    guard let dot = register.stamp?.dot else { return }
    guard context.contains(dot) else {
      throw ConvergeDecodingError.invalidValue(
        offset: offset, reason: "register write that is not in the message's context")
    }
    guard dot.counter <= presence.addedCounter(of: dot.replica) else {
      throw ConvergeDecodingError.invalidValue(
        offset: offset, reason: "register write newer than its entity's version")
    }
  }

  /// Writes the tag and payload of a set: elements sorted by ``FieldValue``'s order.
  static func write(
    _ elements: SetElements, to writer: inout ByteWriter, replicas table: ReplicaTable
  ) {
    writer.writeUInt8(FieldWireTag.set.rawValue)
    writer.writeVarUInt(elements.count)
    for entry in elements.inWireOrder {
      entry.element.write(to: &writer)
      entry.presence.write(to: &writer, replicas: table)
    }
  }

  static func readSet(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable
  ) throws -> SetElements {
    // An element is at least a tag byte and two empty vectors.
    let count = try reader.readCount(minimumBytesPerElement: 3)
    return try withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { starts in
      var entries: [SetElements.Entry] = []
      entries.reserveCapacity(count)
      try reader.readSortedEntries(
        count: count, keys: .init(plural: "set elements", singular: "set element"),
        readKey: { try FieldValue(from: &$0) }, precedes: <,
        readValue: { reader, element, start in
          let presence = try Presence(from: &reader, replicas: &table)
          // Every element a replica holds, or a delta carries, was added somewhere.
          guard presence.hasAdds else {
            throw ConvergeDecodingError.invalidValue(
              offset: start, reason: "set element never added")
          }
          starts.initializeElement(at: entries.count, to: start)
          entries.append(SetElements.Entry(element: element, presence: presence))
          return true
        })
      // Two spellings of one element (canonically equivalent strings) are far apart in
      // the wire's byte order: found once every element is read.
      let (elements, duplicate) = SetElements.reading(consume entries)
      if let duplicate {
        throw ConvergeDecodingError.invalidValue(
          offset: starts[duplicate], reason: "duplicate set element")
      }
      return elements
    }
  }

  /// Reads an entity's fields into a table: a count, then that many (name, field) pairs
  /// with names strictly increasing, a text field's content read by `readText` (a
  /// document's text or a delta's runs). Refuses a name equal (as a `String`:
  /// canonically equivalent) to an earlier one. Each field is checked by `checks`, for
  /// the entity whose presence is `presence`.
  static func readFields<Text, List: ListWire>(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    presence: Presence, checks: inout FieldChecks,
    readText: (inout ByteReader, inout DecodedReplicaTable, inout FieldChecks) throws -> Text
  ) throws -> FieldTable<FieldContent<Text, List>> {
    // Names in scalar order can still be equal as strings ("é" and "e\u{301}"), and not
    // next to each other: past a few fields, a set finds them without a quadratic scan.
    var names: Set<String> = []
    // A field is at least an empty name and a tag.
    let count = try reader.readCount(minimumBytesPerElement: 2)
    // While the names read are the previous entity's first ones (`shared` of them; -1
    // once one differs), they are matched as bytes, and the table shares that list.
    let previous = table.fieldNames
    var shared = 0
    var keys: [String] = []
    var values: [FieldContent<Text, List>] = []
    values.reserveCapacity(count)
    try reader.readSortedEntries(
      count: count, keys: .init(plural: "field names", singular: "field name"),
      readKey: { reader in
        if shared == values.count, shared < previous.count,
          reader.readString(equalTo: previous[shared])
        {
          return previous[shared]
        }
        if shared >= 0 {
          keys = Array(previous[..<values.count])
          keys.reserveCapacity(count)
          shared = -1
        }
        return try reader.readString()
      }, precedes: fieldNameOrder,
      readValue: { reader, name, _ in
        let field: FieldContent<Text, List> =
          switch try readTag(from: &reader) {
          case .register: .register(try readRegister(from: &reader, replicas: &table))
          case .emptyRegister: .register(LWWRegister())
          case .set: .set(try readSet(from: &reader, replicas: &table))
          case .text: .text(try readText(&reader, &table, &checks))
          case .list: .list(try List(from: &reader, replicas: &table, checks: &checks))
          case .parent: .parent(try readParent(from: &reader, replicas: &table))
          }
        checks.check(field, presence: presence)
        if shared >= 0 {
          // The previous list's next name, after its names before it: a valid table's
          // names, none equal to another.
          shared += 1
        } else if keys.count < 16 {
          guard !keys.contains(name) else { return false }
          keys.append(name)
        } else {
          if names.isEmpty { names = Set(keys) }
          guard names.insert(name).inserted else { return false }
          keys.append(name)
        }
        values.append(field)
        return true
      })
    if shared >= 0 { keys = shared == previous.count ? previous : Array(previous[..<shared]) }
    table.fieldNames = keys
    return FieldTable(sortedKeys: keys, values: values)
  }

  /// Reads a field tag.
  static func readTag(from reader: inout ByteReader) throws -> FieldWireTag {
    let start = reader.offset
    guard let tag = FieldWireTag(rawValue: try reader.readUInt8()) else {
      throw ConvergeDecodingError.invalidValue(offset: start, reason: "unknown field kind")
    }
    return tag
  }
}

/// The wire form of a document's or a delta's field, which differ only in where a text
/// field's runs come from: a delta holds them, a document takes them from its text once
/// per encoding (``EntityRecord/textRuns()``).
extension FieldContent where List: ListWire {
  /// Adds the replicas the field names to `builder`; a text field's are those of `runs`.
  func collectReplicas(into builder: inout ReplicaTable.Builder, runs: RGADelta?) {
    switch self {
    case .register(let register), .parent(let register):
      FieldWire.collectReplicas(of: register, into: &builder)
    case .set(let elements): FieldWire.collectReplicas(of: elements, into: &builder)
    case .text: runs?.collectReplicas(into: &builder)
    case .list(let list): list.collectReplicas(into: &builder, slots: list.wireSlots)
    }
  }

  /// Writes the field's tag and payload; a text field's payload is what `writeText`
  /// writes for its text (inlined, so that the closure costs nothing).
  @inline(__always)
  func write(
    to writer: inout ByteWriter, replicas table: ReplicaTable,
    text writeText: (Text, inout ByteWriter) -> Void
  ) {
    switch self {
    case .register(let register): FieldWire.write(register, to: &writer, replicas: table)
    case .parent(let register):
      FieldWire.write(register, to: &writer, replicas: table, parent: true)
    case .set(let elements): FieldWire.write(elements, to: &writer, replicas: table)
    case .text(let text):
      writer.writeUInt8(FieldWireTag.text.rawValue)
      writeText(text, &writer)
    case .list(let list):
      list.write(to: &writer, replicas: table, slots: list.wireSlots)
    }
  }
}

extension FieldContent where Text == RGADelta, List == MovableListDelta {
  /// The runs of a text field.
  var runs: RGADelta? {
    guard case .text(let runs) = self else { return nil }
    return runs
  }
}

extension EntityRecord: WireEntity {
  init(presence: Presence, fields: FieldTable<FieldState>) {
    self.init()
    self.presence = presence
    self.fields = fields
  }

  /// Adds the replicas of the presence, registers and sets to `builder`; those of text
  /// fields come from ``textRuns()``.
  package func collectReplicas(into builder: inout ReplicaTable.Builder) {
    Self.collectReplicas(of: presence, fields, into: &builder)
  }

  /// None: a document's text runs are taken once per encoding, by ``textRuns()``.
  static func heldRuns(of field: FieldState) -> RGADelta? { nil }

  static func readText(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    checks: inout FieldChecks
  ) throws -> TextStorage {
    try TextStorage.read(from: &reader, replicas: &table, checks: &checks)
  }

  /// Every text field's whole state as runs, by field name.
  package func textRuns() -> [String: RGADelta] {
    var runs: [String: RGADelta] = [:]
    // The two arrays zipped here, not the table's own iterator: generic, declared in
    // another module, it ran unspecialized (runtime metadata at every field).
    for (name, field) in zip(fields.keys, fields.values) {
      if case .text(let storage) = field {
        runs[name] = storage.text.delta(since: CausalContext())
      }
    }
    return runs
  }

  /// Writes the presence and the fields; `texts` holds the text fields' runs
  /// (``textRuns()``), whose content `content` writes (§8.4.1 or §8.3.1).
  func write(
    to writer: inout ByteWriter, replicas table: ReplicaTable,
    texts: [String: TextWire.PreparedRuns], content: ([UInt8], inout ByteWriter) -> Void
  ) {
    Self.write(presence, fields, to: &writer, replicas: table) { name, _, writer in
      (texts[name] ?? TextWire.PreparedRuns(RGADelta())).write(
        to: &writer, replicas: table, content: content)
    }
  }
}
