/// A plain Swift struct that an app stores in a ``Replica`` without writing merge code.
///
/// Declare the struct with defaults, and list which property is which kind of field:
///
/// ```swift
/// struct Note: EntityModel {
///   static let entityType = "note"
///   var title = ""
///   var body = ""
///   var tags: Set<String> = []
///   var pinned = false
///
///   static let schema = EntitySchema<Note>(
///     .register("title", \.title),
///     .text("body", \.body),
///     .set("tags", \.tags),
///     .register("pinned", \.pinned))
/// }
///
/// let (id, created) = replica.create(Note(title: "Groceries"))
/// let edited = try replica.update(Note.self, id: id) { $0.tags.insert("home") }
/// // Send created.delta and edited.delta to the other devices.
/// ```
///
/// Reads build the struct from the document's fields; writes compare the struct before
/// and after and record only what changed, field by field (for text, the changed
/// range): the same operations, and the same delta bytes, as a ``DocumentTransaction``
/// writing those fields by hand. Fields the model does not list, written by a newer app
/// version, are left untouched and keep merging and travelling with the entity.
///
/// That makes a projection a second model: a list view that shows a note's title, tags
/// and pin declares them over the same type and field names, and reads every row
/// without building a body.
///
/// ```swift
/// struct NoteRow: EntityModel {
///   static let entityType = Note.entityType
///   var title = ""
///   var tags: Set<String> = []
///   var pinned = false
///
///   static let schema = EntitySchema<NoteRow>(
///     .register("title", \.title), .set("tags", \.tags), .register("pinned", \.pinned))
/// }
///
/// let rows = replica.all(NoteRow.self)  // [(id, NoteRow)], sorted by id
/// try replica.update(NoteRow.self, id: id) { $0.pinned = true }  // the body is kept
/// ```
public protocol EntityModel: Sendable {
  /// The type name entities of this model are stored under.
  static var entityType: String { get }
  /// How the struct's properties map to fields.
  static var schema: EntitySchema<Self> { get }
  /// The model with every property at its default: what a field never written reads as.
  init()
}

/// The fields of an ``EntityModel``.
///
/// Every field name must appear once. Names are the stored identity of the data: renaming
/// a property is free, renaming its field orphans what was stored under the old name.
public struct EntitySchema<Model: EntityModel>: Sendable {
  /// The fields, in the order they were listed.
  public let fields: [EntityField<Model>]
  /// Each field's name, in the order of ``fields``: what a read looks the fields up by.
  @usableFromInline let names: [String]
  /// Each field's direct read, `nil` for a field read through its closure.
  @usableFromInline let directReads: [DirectRead?]
  /// Whether every field has a direct read (no closure to call).
  @usableFromInline let readsDirectly: Bool

  /// A schema listing `fields`: `.register(…)`, `.set(…)`, `.text(…)`, `.list(…)` and
  /// `.parent(…)`.
  public init(_ fields: EntityField<Model>...) {
    self.init(fields: fields)
  }

  /// A schema listing `fields`, for schemas built as an array.
  public init(fields: [EntityField<Model>]) {
    self.fields = fields
    names = fields.map(\.name)
    directReads = fields.map(\.direct)
    readsDirectly = directReads.allSatisfy { $0 != nil }
  }

  /// Sets the properties of `model` from `stored`, whose `field(at: i)` is the field
  /// of `fields[i]`: the one read of a model, for `get`, `all`, a projection and the read
  /// an update starts from.
  ///
  /// A field with a direct read is set through its offset in the model by a switch over
  /// its kind, in the module (``StoredFields/read(_:into:)``); the others call their
  /// read closure. Calling a closure a field (its reabstraction thunk, its context
  /// retained and released) cost about 85 instructions a field of a list row
  /// (BENCHMARKS.md, typed reads, sixth pass).
  @inlinable
  func read(into model: UnsafeMutablePointer<Model>, from stored: StoredFields) {
    stored.read(directReads, into: UnsafeMutableRawPointer(model))
    guard !readsDirectly else { return }
    for index in fields.indices where directReads[index] == nil {
      fields[index].read(&model.pointee, stored.field(at: index))
    }
  }
}

/// How a field of a known kind is read into a stored property of a known type at a known
/// offset in the model (``EntitySchema/read(into:from:)``), without its closure: what
/// `MemoryLayout<Model>.offset(of:)` reports for a stored property of a struct, with the
/// conversion the property's type makes (``FieldValueConvertible``). A field of any other
/// kind or type, or a property without an offset (computed, of a class, with observers),
/// has none and is read through its closure.
@usableFromInline
enum DirectRead: Equatable, Sendable {
  /// A register read into a `String`.
  case string(offset: Int)
  /// A register read into a `Bool`.
  case bool(offset: Int)
  /// A register read into an `Int64`.
  case int64(offset: Int)
  /// A register read into an `Int`.
  case int(offset: Int)
  /// A register read into a `Double`.
  case double(offset: Int)
  /// A text field read into a `String`.
  case text(offset: Int)
  /// A set field read into a `Set<String>`.
  case stringSet(offset: Int)

  /// The direct read of a register of `Value` at `keyPath`, if it has one.
  @inlinable
  static func register<Model, Value>(_ keyPath: WritableKeyPath<Model, Value>) -> DirectRead? {
    guard let offset = MemoryLayout<Model>.offset(of: keyPath) else { return nil }
    // Exact types: an enum with a `String` raw value or an optional is read by its
    // closure, which converts as its type says.
    if Value.self == String.self { return .string(offset: offset) }
    if Value.self == Bool.self { return .bool(offset: offset) }
    if Value.self == Int64.self { return .int64(offset: offset) }
    if Value.self == Int.self { return .int(offset: offset) }
    if Value.self == Double.self { return .double(offset: offset) }
    return nil
  }
}

/// One property of a model and the field that stores it.
public struct EntityField<Model: EntityModel>: Sendable {
  /// The field's name in the document.
  public let name: String
  /// The kind of CRDT that stores it.
  public let kind: FieldKind
  /// The model's property, so that ``EntityText/init(_:of:)`` can find a field by it.
  let keyPath: PartialKeyPath<Model> & Sendable
  /// How the field is read without its closure, if its kind and property allow it.
  @usableFromInline let direct: DirectRead?
  /// Sets the property from the field's stored state. The caller finds the state: one
  /// entity lookup serves every field, and a list of entities sharing their field names
  /// finds each field's slot once.
  @usableFromInline let read: @Sendable (inout Model, StoredField) -> Void
  /// Records the change of the property from `old` to `new`. Creating, `old` is the
  /// model's defaults, built once for every field: a register records a value that
  /// differs from its default, a set or text field everything `new` holds (a missing set
  /// or text reads as empty, whatever the default).
  @usableFromInline let write:
    @Sendable (_ old: Model, _ new: Model, _ creating: Bool, inout DocumentTransaction, EntityKey)
      -> Void

  // The field makers are inlinable so that their closures are specialized in the app's
  // module, for its model and value types: unspecialized, each read and write looked up
  // generic metadata and went through witness tables, several times the field's work.
  // They convert between the property and a `FieldValue`; the document work is the
  // module's own, not inlined.
  @usableFromInline
  init(
    name: String, kind: FieldKind, keyPath: PartialKeyPath<Model> & Sendable,
    direct: DirectRead? = nil,
    read: @escaping @Sendable (inout Model, StoredField) -> Void,
    write: @escaping @Sendable (Model, Model, Bool, inout DocumentTransaction, EntityKey) -> Void
  ) {
    self.name = name
    self.kind = kind
    self.keyPath = keyPath
    self.direct = direct
    self.read = read
    self.write = write
  }

  /// A last-writer-wins register: the later write wins, field by field.
  @inlinable
  public static func register<Value: FieldValueConvertible & Equatable>(
    _ name: String, _ keyPath: WritableKeyPath<Model, Value> & Sendable
  ) -> EntityField {
    let property = ModelProperty(keyPath)
    return EntityField(
      name: name, kind: .register, keyPath: keyPath, direct: .register(keyPath),
      read: { model, stored in
        if let stored = stored.registerValue, let value = Value(fieldValue: stored) {
          property.set(value, in: &model)
        }
      },
      write: { old, new, _, transaction, key in
        let value = property.get(from: new)
        // A new entity records only what differs from the default, so that a concurrent
        // creation of the same entity elsewhere keeps its own values for the rest.
        guard value != property.get(from: old) else { return }
        transaction.setValue(value.fieldValue, for: name, of: key)
      })
  }

  /// An add-wins set: an add survives a concurrent remove.
  @inlinable
  public static func set<Element: FieldValueConvertible & Hashable>(
    _ name: String, _ keyPath: WritableKeyPath<Model, Set<Element>> & Sendable
  ) -> EntityField {
    let property = ModelProperty(keyPath)
    return EntityField(
      name: name, kind: .set, keyPath: keyPath,
      direct: Element.self == String.self
        ? MemoryLayout<Model>.offset(of: keyPath).map { .stringSet(offset: $0) } : nil,
      read: { model, stored in
        func visible() -> Set<Element> {
          var value = Set<Element>(minimumCapacity: stored.elementCount)
          stored.forEachElement { element in
            if let element = Element(fieldValue: element) { value.insert(element) }
          }
          return value
        }
        // In a walk, kept with the set's entries until they change: reading the same
        // tags again is a lookup and a retain, not an allocation and a hash of each tag.
        // The type is checked here, where it is known: the runtime's cast took 46
        // instructions a read.
        if let kept = stored.keptObject,
          ObjectIdentifier(type(of: kept)) == ObjectIdentifier(VisibleElements<Element>.self)
        {
          return property.set(
            unsafeDowncast(kept, to: VisibleElements<Element>.self).elements, in: &model)
        }
        property.set(stored.keep(visible()), in: &model)
      },
      write: { old, new, creating, transaction, key in
        let before = creating ? [] : property.get(from: old)
        let after = property.get(from: new)
        guard before != after else { return }
        // Sorted so the dots are handed out in the same order on every run. Looked up in
        // place: building the two differences as sets cost more than the writes.
        var added: [FieldValue] = []
        for element in after where !before.contains(element) { added.append(element.fieldValue) }
        // `after` is `before` less the removed plus the added, so the counts say whether
        // anything was removed: an update that adds a tag hashes no old tag again.
        if before.count + added.count != after.count {
          var removed: [FieldValue] = []
          for element in before where !after.contains(element) {
            removed.append(element.fieldValue)
          }
          removed.sortIfNeeded()
          for element in removed { transaction.remove(element, from: name, of: key) }
        }
        added.sortIfNeeded()
        for element in added { transaction.insert(element, into: name, of: key) }
      })
  }

  /// RGA text: concurrent edits of the same text are all kept.
  ///
  /// Writes diff the old and new string (common prefix and suffix) and record the
  /// changed range, so typing in a long note sends the edit, not the note.
  ///
  /// Assigning the property is the convenience: reading the model builds the whole
  /// string, and a changed string is compared with the stored one, so a keystroke costs
  /// O(n). To type, edit the field through its ``EntityText`` handle instead
  /// (`EntityText(\Note.body, of: id)`), which costs O(log n) an edit and records the
  /// same operations. An update that leaves the string alone costs no comparison.
  ///
  /// - Complexity: a write of a changed string is O(n) for the n bytes of the old and new
  ///   strings (the diff, after the O(n) read that built the model), plus O(log n + k)
  ///   for the k scalars it changes; its delta is O(k).
  @inlinable
  public static func text(
    _ name: String, _ keyPath: WritableKeyPath<Model, String> & Sendable
  ) -> EntityField {
    let property = ModelProperty(keyPath)
    return EntityField(
      name: name, kind: .text, keyPath: keyPath,
      direct: MemoryLayout<Model>.offset(of: keyPath).map { .text(offset: $0) },
      read: { model, stored in property.set(stored.string, in: &model) },
      write: { old, new, creating, transaction, key in
        let before = creating ? "" : property.get(from: old)
        let after = property.get(from: new)
        // Unchanged, the two share their storage and compare in O(1).
        guard before != after else { return }
        transaction.replaceText(before, with: after, in: name, of: key)
      })
  }
}

/// One stored property of a model, as a field's read sets it and its write reads it:
/// through its offset in the model when the key path names the model's own inline
/// storage (a stored property of a struct, which `MemoryLayout.offset(of:)` reports), else
/// through the key path. Writes through the runtime's key path took about 230
/// instructions of a three-field list row's read (BENCHMARKS.md, typed reads at list
/// speed); reads through it, about 460 instructions each, eight of them in an update of
/// a four-field note (BENCHMARKS.md, typed reads, eighth pass).
@usableFromInline
struct ModelProperty<Model, Value>: Sendable {
  @usableFromInline let keyPath: WritableKeyPath<Model, Value> & Sendable
  /// The property's offset in `Model`, `nil` if it is not directly addressable (a
  /// computed property, a class's property).
  @usableFromInline let offset: Int?

  @inlinable init(_ keyPath: WritableKeyPath<Model, Value> & Sendable) {
    self.keyPath = keyPath
    offset = MemoryLayout<Model>.offset(of: keyPath)
  }

  /// The property of `model`.
  @inlinable func get(from model: Model) -> Value {
    guard let offset else { return model[keyPath: keyPath] }
    // `offset(of:)` guarantees that the property's storage is at `offset`, of type
    // `Value`: the read copies it (a retain) as the key path's did.
    return withUnsafePointer(to: model) { model in
      UnsafeRawPointer(model).advanced(by: offset).assumingMemoryBound(to: Value.self).pointee
    }
  }

  /// Sets the property of `model` to `value`.
  @inlinable func set(_ value: Value, in model: inout Model) {
    guard let offset else {
      model[keyPath: keyPath] = value
      return
    }
    // `offset(of:)` guarantees that the property's storage is at `offset`, of type
    // `Value`: the assignment releases the old value and retains the new one.
    withUnsafeMutablePointer(to: &model) { model in
      UnsafeMutableRawPointer(model).advanced(by: offset)
        .assumingMemoryBound(to: Value.self).pointee = value
    }
  }
}

/// What an entity stores in one field, as a schema's field reads it: the field's state
/// in place, read without a copy of it (a copy retained and released what the field
/// holds, twice a field, for a read that takes one value out); `nil` when the entity
/// lacks the field. Valid only during the read it is handed to. The reads' document side,
/// kept out of the inlined code.
///
/// Three words and no reference: made and dropped once a field of every row, it costs
/// no retain, release or outlined copy (a parent key and a cache place carried here cost
/// about 550 instructions of a list row's 2,653; BENCHMARKS.md, typed reads, fourth
/// pass). What a few fields need beyond their state (a parent's resolved key, a walk's
/// kept sets) is found through `entity`, the read's own ``EntityReads``.
@usableFromInline
struct StoredField {
  private let field: UnsafePointer<FieldState>?
  /// The read the field belongs to, and the field's slot in its entity's table.
  private let entity: UnsafeMutablePointer<EntityReads>?
  private let slot: Int

  init(
    _ field: UnsafePointer<FieldState>?, of entity: UnsafeMutablePointer<EntityReads>?, slot: Int
  ) {
    self.field = field
    self.entity = entity
    self.slot = slot
  }

  /// The field's state (a copy, for the rare reads that need it whole).
  var state: FieldState? { field?.pointee }

  /// The node's parent as the forest resolves it, `nil` for a root or another kind.
  @usableFromInline var parentKey: EntityKey? {
    guard let entity, let field, case .parent = field.pointee else { return nil }
    return entity.pointee.resolvedParent(inSlot: slot)
  }

  /// The register's value, or `nil` if the field is not a written register.
  @usableFromInline var registerValue: FieldValue? {
    guard let field, case .register(let register) = field.pointee else { return nil }
    return register.value
  }

  /// How many elements the set field has ever held (an upper bound of its present ones).
  @usableFromInline var elementCount: Int {
    guard let field, case .set(let elements) = field.pointee else { return 0 }
    return elements.count
  }

  /// The object a walk kept for the set field's visible elements (``SetReadCache``), if
  /// it was built from the set's very entries; the reader checks its type. Reads of one
  /// model find it too (an update after a list view), and keep nothing.
  @usableFromInline var keptObject: (AnyObject & Sendable)? {
    guard let entity, let field, let address = field.pointee.setEntriesAddress else { return nil }
    // Each part read through the pointer: a method of `entity.pointee` copied the read,
    // its document with it, at every set field of a row.
    let position = entity.pointee.position
    if let sets = entity.pointee.sets {
      return SetReadWalk.kept(in: UnsafePointer(sets), address: address, at: position, field: slot)
    }
    return entity.pointee.keptSets?.walk().kept(address: address, at: position, field: slot)
  }

  /// `elements`, built from the set field's visible elements, as a walk keeps them for
  /// its next walks: the same `Set` as every equal one built in this walk
  /// (``SetReadWalk/sharing(_:)``). Outside a walk, or for an empty set, `elements`
  /// themselves, kept nowhere.
  @usableFromInline func keep<Element: Hashable & Sendable>(_ elements: Set<Element>) -> Set<
    Element
  > {
    guard let entity, let sets = entity.pointee.sets, let field,
      case .set(let entries) = field.pointee, !entries.isEmpty
    else { return elements }
    let object = sets.pointee.sharing(elements)
    sets.pointee.keep(object, of: entries, at: entity.pointee.position, field: slot)
    return object.elements
  }

  /// Calls `body` with each present element of the set field, in no particular order.
  @usableFromInline func forEachElement(_ body: (FieldValue) -> Void) {
    guard let field, case .set(let elements) = field.pointee else { return }
    for (element, presence) in elements where presence.isPresent { body(element) }
  }

  /// The text field's content, empty if the field is not text.
  @usableFromInline var string: String {
    guard let field, case .text(let storage) = field.pointee else { return "" }
    return storage.text.string
  }
}

extension FieldContent {
  /// A set field's entries' storage (``SetElements/entriesAddress``), `nil` for another
  /// kind: read on the field in place, without copying the field's enum out (a copy and
  /// its destruction took 88 instructions a read).
  fileprivate var setEntriesAddress: UnsafeRawPointer? {
    guard case .set(let elements) = self else { return nil }
    return elements.entriesAddress
  }
}

extension StoredFields {
  /// Sets each property of the model at `model` that has a direct read (`directs[i]`,
  /// for the field at `i`) from its field, leaving the others: the switch over kinds
  /// that reads most fields of most models without a closure.
  @usableFromInline
  func read(_ directs: [DirectRead?], into model: UnsafeMutableRawPointer) {
    directs.withUnsafeBufferPointer { directs in
      for index in directs.indices {
        guard let direct = directs[index] else { continue }
        field(at: index).read(direct, into: model)
      }
    }
  }
}

extension StoredField {
  /// Sets the property `direct` names in the model at `model` from the field, as the
  /// field's closure does: a register missing, of another kind of value, or a field of
  /// another kind, leaves the property at its value (the model's default); a text or set
  /// field missing reads as empty, whatever the default.
  fileprivate func read(_ direct: DirectRead, into model: UnsafeMutableRawPointer) {
    // `offset(of:)` guarantees that the property's storage is at `offset`, of the type
    // the case names: each assignment releases the old value and retains the new one.
    func property<Value>(at offset: Int, _: Value.Type) -> UnsafeMutablePointer<Value> {
      (model + offset).assumingMemoryBound(to: Value.self)
    }
    // `registerValue` is `nil` for a missing field or another kind.
    switch direct {
    case .string(let offset):
      guard case .string(let value)? = registerValue else { return }
      property(at: offset, String.self).pointee = value
    case .bool(let offset):
      guard case .bool(let value)? = registerValue else { return }
      property(at: offset, Bool.self).pointee = value
    case .int64(let offset):
      guard case .int(let value)? = registerValue else { return }
      property(at: offset, Int64.self).pointee = value
    case .int(let offset):
      guard case .int(let value)? = registerValue, let exact = Int(exactly: value)
      else { return }
      property(at: offset, Int.self).pointee = exact
    case .double(let offset):
      switch registerValue {
      case .double(let value)?: property(at: offset, Double.self).pointee = value
      case .int(let value)?: property(at: offset, Double.self).pointee = Double(value)
      default: return
      }
    case .text(let offset):
      property(at: offset, String.self).pointee = string
    case .stringSet(let offset):
      property(at: offset, Set<String>.self).pointee = visibleStrings()
    }
  }

  /// The set field's present string elements, as a `set` field of `Set<String>` reads
  /// them: the walk's kept value if there is one, else built (and kept, in a walk).
  private func visibleStrings() -> Set<String> {
    // In a walk, the kept value read without a retain of the object that holds it.
    if let entity, let sets = entity.pointee.sets, let field {
      if let address = field.pointee.setEntriesAddress,
        let kept = SetReadWalk.keptElements(
          String.self, in: UnsafePointer(sets), address: address, at: entity.pointee.position,
          field: slot)
      {
        return kept
      }
    } else if let kept = keptObject,
      ObjectIdentifier(type(of: kept)) == ObjectIdentifier(VisibleElements<String>.self)
    {
      return unsafeDowncast(kept, to: VisibleElements<String>.self).elements
    }
    var elements = Set<String>(minimumCapacity: elementCount)
    forEachElement { element in
      if case .string(let element) = element { elements.insert(element) }
    }
    return keep(elements)
  }
}
