// Reading and writing models: the document side of ``EntityModel``, one path for every
// model (a projection is a model listing fewer fields).

extension DocumentTransaction {
  /// Turns the text field's content `old` into `new` by its one changed range, as an
  /// ``EntityField/text(_:_:)`` field's write does.
  @usableFromInline
  mutating func replaceText(_ old: String, with new: String, in field: String, of key: EntityKey) {
    // Nothing to diff against: the whole string is the insert.
    guard !old.isEmpty else {
      insertText(new, at: 0, in: field, of: key)
      return
    }
    let edit = ScalarEdit(from: old, to: new)
    if !edit.deleted.isEmpty { deleteText(edit.deleted, in: field, of: key) }
    if !edit.inserted.isEmpty {
      insertText(edit.inserted, at: edit.deleted.lowerBound, in: field, of: key)
    }
  }
}

/// The smallest single replacement that turns one string into another, in scalars.
///
/// Found on the strings' UTF-8 (equal scalars have equal bytes), with no array of
/// scalars built: the common prefix and suffix of bytes, moved back to the scalar
/// boundaries they cut.
struct ScalarEdit {
  /// The range of the old string's scalars to delete.
  var deleted: Range<Int>
  /// The scalars to insert at `deleted.lowerBound`.
  var inserted: String

  init(from old: String, to new: String) {
    var (old, new) = (old, new)
    (deleted, inserted) = old.withUTF8 { old in
      new.withUTF8 { new in Self.edit(from: old, to: new) }
    }
  }

  private static func edit(from old: UnsafeBufferPointer<UInt8>, to new: UnsafeBufferPointer<UInt8>)
    -> (Range<Int>, String)
  {
    // A continuation byte (10xxxxxx) sits inside a scalar, never at its start.
    func isContinuation(_ byte: UInt8) -> Bool { byte & 0xC0 == 0x80 }
    let limit = Swift.min(old.count, new.count)
    var prefix = 0
    while prefix < limit, old[prefix] == new[prefix] { prefix += 1 }
    // The bytes before `prefix` are equal, so a boundary in one string is one in both.
    while prefix > 0,
      prefix < old.count
        ? isContinuation(old[prefix]) : prefix < new.count && isContinuation(new[prefix])
    {
      prefix -= 1
    }
    var suffix = 0
    while suffix < limit - prefix, old[old.count - 1 - suffix] == new[new.count - 1 - suffix] {
      suffix += 1
    }
    while suffix > 0, isContinuation(old[old.count - suffix]) { suffix -= 1 }
    var start = 0
    for byte in old[..<prefix] where !isContinuation(byte) { start += 1 }
    var count = 0
    for byte in old[prefix..<(old.count - suffix)] where !isContinuation(byte) { count += 1 }
    let inserted = String(
      decoding: UnsafeBufferPointer(rebasing: new[prefix..<(new.count - suffix)]), as: UTF8.self)
    return (start..<start + count, inserted)
  }
}

// MARK: - Reading and writing models

extension Document {
  /// The model stored under `id`, or `nil` if there is no such visible entity.
  ///
  /// Fields the schema does not list are not read: a model listing a few of an entity's
  /// fields (a list row's title and tags) reads without building the rest (its body).
  ///
  /// - Complexity: O(f + n) for f schema fields and n scalars of its text fields.
  @inlinable
  public func model<Model: EntityModel>(_ type: Model.Type, id: String) -> Model? {
    // Inlinable so that the model's code is specialized in the app's module, for its
    // type: unspecialized, building a model looked up generic metadata at every step.
    // The document side is ``withVisibleFields(of:reading:_:)``, not inlined.
    let schema = Model.schema
    var model: Model?
    withVisibleFields(of: EntityKey(type: Model.entityType, id: id), reading: schema.names) {
      stored in
      var read = Model()
      schema.read(into: &read, from: stored)
      model = read
    }
    return model
  }

  /// Every visible entity of the model's type, sorted by id.
  ///
  /// A second model over some of the same field names is a projection: a list view
  /// declares its row (`struct NoteRow: EntityModel` with the title, tags and pinned
  /// fields of `"note"`) and reads every row without building a body.
  ///
  /// - Complexity: O(e log e) for e entities of the type, plus reading each model: O(f)
  ///   for its f fields and the scalars of its text fields.
  @inlinable
  public func models<Model: EntityModel>(_ type: Model.Type) -> [(id: String, value: Model)] {
    // Specialized in the app's module, as ``model(_:id:)`` is; the walk over the
    // entities is ``forEachVisibleEntity(ofType:reading:_:)``.
    let schema = Model.schema
    var models: [(id: String, value: Model)] = []
    forEachVisibleEntity(ofType: Model.entityType, reading: schema.names) { count, walk in
      // Each row made and read in place in the result's storage: a row built aside and
      // appended was copied in (three retains and two releases a row).
      models = Array(unsafeUninitializedCapacity: count) { rows, made in
        guard let first = rows.baseAddress else { return }
        walk { id, stored in
          guard made < count else { return }
          let row = first + made
          row.initialize(to: (id, Model()))
          made += 1
          schema.read(into: &row.pointee.value, from: stored)
        }
      }
    }
    return models
  }

  /// Calls `body` with the fields of the visible entity `key`, in place, if there is one;
  /// `field(at: i)` of the fields is the field `names[i]`.
  @usableFromInline
  func withVisibleFields(of key: EntityKey, reading names: [String], _ body: (StoredFields) -> Void)
  {
    guard let position = entities.index(forKey: key) else { return }
    entities.values.withUnsafeBufferPointer { records in
      guard records[position].presence.isPresent else { return }
      // In place, as a walk reads (see ``forEachVisibleEntity(ofType:reading:_:)``).
      let (keys, values) = records[position].fields.unsafeBuffers
      withUnsafeTemporaryAllocation(of: Int?.self, capacity: names.count) { slots in
        for (slot, name) in names.enumerated() {
          slots.initializeElement(at: slot, to: keys.firstIndex(of: name))
        }
        // Reads what walks kept of the entity's sets (an update after a list view read
        // its rows finds the tags built), and keeps nothing itself.
        var reads = EntityReads(
          document: self, sets: nil, keptSets: entities.setReads(at: position))
        reads.point(
          at: position, names: keys, values: values, slots: UnsafeBufferPointer(slots))
        withUnsafeMutablePointer(to: &reads) { body(StoredFields($0)) }
      }
    }
  }

  /// Calls `body` with the number of visible entities of `type` and a walk over them,
  /// which calls its argument with the id and the fields of each, sorted by id;
  /// `field(at: i)` of the fields is the field `names[i]`.
  ///
  /// Entities of a type mostly share one list of field names (``FieldNameLists``): each
  /// field's slot in the last list seen is reused while the list is the same one.
  @usableFromInline
  func forEachVisibleEntity(
    ofType type: String, reading names: [String],
    _ body: (_ count: Int, _ walk: ((String, StoredFields) -> Void) -> Void) -> Void
  ) {
    // The records read in place, through one buffer for the walk: `entities.values[p]`
    // copied a record (three retains and releases a row), and a record's two arrays
    // taken with `withUnsafeBufferPointer` retained and released each (BENCHMARKS.md,
    // typed reads, fifth pass).
    entities.values.withUnsafeBufferPointer { records in
      var visible: [Int] = []
      visible.reserveCapacity(entities.count)
      // The presence alone: `isVisible` of the record copied the whole record for the
      // presence's out-of-line read, three retains and releases a row.
      for position in entities.positions(ofType: type) where records[position].presence.isPresent {
        visible.append(position)
      }
      guard let first = visible.first else {
        body(0) { _ in }
        return
      }
      // Each name's slot in the entity's table, for the last few lists of names seen
      // (entities of a type share a few, ``FieldNameLists``: a typed create writes only
      // what differs from the defaults, so notes with and without a pin alternate), found
      // again only for a list not among them; kept in buffers of the walk's, read without
      // a retain a row. One list remembered searched again at every alternation, about
      // 75 instructions a row of a projection (BENCHMARKS.md, typed reads, sixth pass).
      let ways = 4
      let slotTable = UnsafeMutableBufferPointer<Int?>.allocate(capacity: names.count * ways)
      slotTable.initialize(repeating: nil)
      defer { slotTable.deallocate() }
      // The list of names (its storage) each way holds slots for; `nil` for an entity
      // without fields, whose slots are all `nil` as every way's are at first.
      let wayNames = UnsafeMutableBufferPointer<UnsafePointer<String>?>.allocate(capacity: ways)
      wayNames.initialize(repeating: nil)
      defer { wayNames.deallocate() }
      var nextWay = 0
      // A walk keeps the sets' visible elements it builds (a list view reads its rows
      // again), reading what earlier walks kept without a lock a field; a read of one
      // model, as an update makes, reads what walks kept and keeps nothing it builds.
      let cache = entities.setReads(at: first)
      var walk = cache.walk()
      withUnsafeMutablePointer(to: &walk) { walk in
        // One copy of the document for the walk (a copy a row retained its storage a row).
        var reads = EntityReads(document: self, sets: walk)
        withUnsafeMutablePointer(to: &reads) { reads in
          body(visible.count) { each in
            let order = entities.keyOrder(of: visible)
            // The field arrays of the next `ahead` rows touched together, one block of
            // rows ahead of the reads: each entity's array is an allocation of its own,
            // and a row's reads wait on its lines from memory. Touched a row at a time,
            // each row still waited once (the reads of a row are more instructions than
            // the processor looks ahead); a block's touches wait together. Twice as fast
            // by the clock at 50,000 notes (BENCHMARKS.md, typed reads, tenth pass).
            let ahead = 16
            func touchRows(from block: Int) {
              let start = Swift.min(block, order.count)
              let end = Swift.min(start + ahead, order.count)
              var touched: UInt8 = 0
              for index in order[start..<end] {
                touched &+= Self.touch(records[visible[index]].fields.unsafeBuffers.values)
              }
              // Kept where the walk's reader can see it, so that the reads stay.
              reads.pointee.touched = touched
            }
            touchRows(from: 0)
            for (step, index) in order.enumerated() {
              if step % ahead == 0 { touchRows(from: step + ahead) }
              let position = visible[index]
              // The record's arrays are the document's, which `reads` holds for the walk.
              let (keys, values) = records[position].fields.unsafeBuffers
              var way = 0
              while way < ways, wayNames[way] != keys.baseAddress { way += 1 }
              if way == ways {
                way = nextWay
                nextWay = (nextWay + 1) % ways
                wayNames[way] = keys.baseAddress
                for (slot, name) in names.enumerated() {
                  slotTable[way * names.count + slot] = keys.firstIndex(of: name)
                }
              }
              let slots = UnsafeBufferPointer(
                rebasing: slotTable[(way * names.count)..<((way + 1) * names.count)])
              reads.pointee.point(at: position, names: keys, values: values, slots: slots)
              each(entities.id(at: position), StoredFields(reads))
            }
          }
        }
      }
      cache.finish(walk)
    }
  }

  /// Reads a byte at each end of each field of `fields` (the first byte of its payload
  /// and its case's tag, which every case initializes), so that the memory lines the
  /// fields span are on their way to the cache: their sum, for the caller to keep.
  private static func touch(_ fields: UnsafeBufferPointer<FieldState>) -> UInt8 {
    guard let base = fields.baseAddress else { return 0 }
    let raw = UnsafeRawPointer(base)
    let stride = MemoryLayout<FieldState>.stride
    let last = MemoryLayout<FieldState>.size - 1
    var sum: UInt8 = 0
    var offset = 0
    for _ in 0..<fields.count {
      sum &+= raw.load(fromByteOffset: offset, as: UInt8.self)
      sum &+= raw.load(fromByteOffset: offset + last, as: UInt8.self)
      offset += stride
    }
    return sum
  }
}

/// One entity's fields as a read finds them, and what the read needs beyond them: the
/// document (a parent field's resolved parent depends on other entities) and, in a walk,
/// the set fields' kept values. One a read, on the reader's stack; the fields it hands
/// out point at it (``StoredField``).
@usableFromInline
struct EntityReads {
  /// The entity's field names, `names[i]` naming `values[i]`.
  private var names = UnsafeBufferPointer<String>(start: nil, count: 0)
  fileprivate private(set) var values = UnsafeBufferPointer<FieldState>(start: nil, count: 0)
  /// For each name of the read's list, its slot in `values`, if the entity has the field.
  fileprivate private(set) var slots = UnsafeBufferPointer<Int?>(start: nil, count: 0)
  private let document: Document
  /// The entity's position in the document.
  private(set) var position = 0
  /// In a walk, the set fields' kept values and what the walk built (``SetReadCache``),
  /// on the walk's stack; `nil` in reads by name, which keep nothing.
  let sets: UnsafeMutablePointer<SetReadWalk>?
  /// In a read by name, the cache whose kept values it reads (without keeping any).
  let keptSets: SetReadCache?
  /// What a walk's touches of the rows ahead read (``Document/forEachVisibleEntity(ofType:reading:_:)``),
  /// stored where the rows' reads could see it so that the touches are not dropped.
  var touched: UInt8 = 0

  init(
    document: Document, sets: UnsafeMutablePointer<SetReadWalk>?, keptSets: SetReadCache? = nil
  ) {
    self.document = document
    self.sets = sets
    self.keptSets = keptSets
  }

  /// Points at the fields of the entity at `position`, in place.
  mutating func point(
    at position: Int, names: UnsafeBufferPointer<String>, values: UnsafeBufferPointer<FieldState>,
    slots: UnsafeBufferPointer<Int?>
  ) {
    self.names = names
    self.values = values
    self.slots = slots
    self.position = position
  }

  /// The parent the forest of the parent field in `slot` resolves for the entity.
  func resolvedParent(inSlot slot: Int) -> EntityKey? {
    guard slot < names.count else { return nil }
    return document.forest(of: names[slot]).parent(of: document.entities.key(at: position))
  }
}

/// The fields of one entity, in place, as a model's reads find them: by the position of
/// the name in the list of names the read was given (in a walk, its slot found once for
/// all entities sharing their field names). Valid only during the call that
/// hands them over.
@usableFromInline
struct StoredFields {
  private let reads: UnsafeMutablePointer<EntityReads>

  init(_ reads: UnsafeMutablePointer<EntityReads>) { self.reads = reads }

  /// The field at `index` of the walk's list of names.
  @usableFromInline
  func field(at index: Int) -> StoredField {
    field(inSlot: reads.pointee.slots[index])
  }

  private func field(inSlot slot: Int?) -> StoredField {
    let values = reads.pointee.values
    guard let slot, slot < values.count, let base = values.baseAddress else {
      return StoredField(nil, of: nil, slot: 0)
    }
    return StoredField(base + slot, of: reads, slot: slot)
  }
}

extension DocumentTransaction {
  /// Creates an entity from a model value and returns its id.
  ///
  /// Only properties that differ from the model's defaults are written, so that a
  /// concurrent creation of the same id elsewhere keeps its own values for the rest.
  ///
  /// Without an `id`, the entity's id is its creation's dot written out: this replica's
  /// id and the event's counter in 15 URL-safe characters (for the first 2^24 events),
  /// unique without a random draw (a UUID took longer than the whole create), short
  /// enough for a Swift string to hold inline, and sorting as this replica created them.
  ///
  /// - Complexity: O(f + n) for f schema fields and n scalars of its text fields: the
  ///   same writes as the transaction that sets each field by hand.
  @inlinable @discardableResult
  public mutating func create<Model: EntityModel>(_ value: Model, id: String? = nil) -> String {
    // Inlinable, as the reads are, so that the model's code is specialized for its type.
    let id = id ?? newEntityID()
    let key = EntityKey(type: Model.entityType, id: id)
    create(key)
    let defaults = Model()
    let schema = Model.schema.fields
    for index in schema.indices { schema[index].write(defaults, value, true, &self, key) }
    return id
  }

  /// A new entity's id: the dot its creation will take, the replica's 64 bits in 11
  /// characters and the counter in 4 (11 from the 2^24th event on).
  ///
  /// The digits are in ASCII order, so a replica's ids sort as it created them and
  /// ``Document/models(_:)``, sorting by id, walks the entities in the order they sit in
  /// memory rather than at random.
  @usableFromInline
  mutating func newEntityID() -> String {
    let dot = nextDot()
    // Base 64 in ASCII order: "-", 0–9, A–Z, "_", a–z (URL-safe).
    func digit(_ value: UInt64) -> UInt8 {
      let value = UInt8(truncatingIfNeeded: value & 63)
      switch value {
      case 0: return UInt8(ascii: "-")
      case 1..<11: return UInt8(ascii: "0") + value - 1
      case 11..<37: return UInt8(ascii: "A") + value - 11
      case 37: return UInt8(ascii: "_")
      default: return UInt8(ascii: "a") + value - 38
      }
    }
    let counterDigits = dot.counter < 1 << 24 ? 4 : 11
    return String(unsafeUninitializedCapacity: 11 + counterDigits) { buffer in
      for index in 0..<11 {
        buffer[index] = digit(dot.replica.rawValue >> (6 * (10 - index)))
      }
      for index in 0..<counterDigits {
        buffer[11 + index] = digit(dot.counter >> (6 * (counterDigits - 1 - index)))
      }
      return 11 + counterDigits
    }
  }

  /// Edits an existing entity through its model; only changed fields are recorded.
  ///
  /// Set properties record the elements added and removed; text properties the changed
  /// range; register properties the new value. The delta is the one the transaction
  /// making the same writes by hand makes, byte for byte.
  ///
  /// - Complexity: O(f + n) for f schema fields and n scalars of the entity's text
  ///   fields: the model is read whole, and a changed text compared whole. A text
  ///   property assigned here costs O(n) a keystroke; type through an ``EntityText`` for
  ///   O(log n).
  /// - Returns: `false` (and changes nothing) if there is no such visible entity.
  @inlinable @discardableResult
  public mutating func update<Model: EntityModel>(
    _ type: Model.Type, id: String, _ body: (inout Model) -> Void
  ) -> Bool {
    guard let old = document.model(Model.self, id: id) else { return false }
    var new = old
    body(&new)
    let key = EntityKey(type: Model.entityType, id: id)
    let schema = Model.schema.fields
    for index in schema.indices { schema[index].write(old, new, false, &self, key) }
    return true
  }

  /// Deletes an entity of the model's type.
  @inlinable
  public mutating func delete<Model: EntityModel>(_ type: Model.Type, id: String) {
    delete(EntityKey(type: Model.entityType, id: id))
  }
}

extension Replica {
  /// The model stored under `id`, or `nil` if there is no such visible entity.
  @inlinable
  public func get<Model: EntityModel>(_ type: Model.Type, id: String) -> Model? {
    document.model(type, id: id)
  }

  /// Every visible entity of the model's type, sorted by id.
  @inlinable
  public func all<Model: EntityModel>(_ type: Model.Type) -> [(id: String, value: Model)] {
    document.models(type)
  }

  /// Creates an entity and returns its id and the commit to send.
  ///
  /// Without an `id`, the entity's id is drawn from its creation event, see
  /// ``DocumentTransaction/create(_:id:)``.
  @inlinable @discardableResult
  public mutating func create<Model: EntityModel>(_ value: Model, id: String? = nil)
    -> (id: String, commit: Commit)
  {
    var created = ""
    let commit = transact { created = $0.create(value, id: id) }
    return (created, commit)
  }

  /// Edits an entity through its model and returns the commit to send.
  ///
  /// - Complexity: O(f + n), see ``DocumentTransaction/update(_:id:_:)``: assigning a
  ///   text property diffs the whole string. Type through an ``EntityText`` instead.
  /// - Throws: ``ReplicaError/entityNotFound(_:)`` if there is no such visible entity.
  @inlinable @discardableResult
  public mutating func update<Model: EntityModel>(
    _ type: Model.Type, id: String, _ body: (inout Model) -> Void
  ) throws(ReplicaError) -> Commit {
    var found = true
    let commit = transact { found = $0.update(type, id: id, body) }
    guard found else { throw .entityNotFound(EntityKey(type: Model.entityType, id: id)) }
    return commit
  }

  /// Deletes an entity and returns the commit to send.
  @inlinable @discardableResult
  public mutating func delete<Model: EntityModel>(_ type: Model.Type, id: String) -> Commit {
    transact { $0.delete(type, id: id) }
  }
}
