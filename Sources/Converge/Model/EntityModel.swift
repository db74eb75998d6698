#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

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
/// range). Fields the model does not list, written by a newer app version, are left
/// untouched and keep merging and travelling with the entity.
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

  /// A schema listing `fields`: `.register(…)`, `.set(…)` and `.text(…)`.
  public init(_ fields: EntityField<Model>...) {
    self.fields = fields
  }

  /// A schema listing `fields`, for schemas built as an array.
  public init(fields: [EntityField<Model>]) {
    self.fields = fields
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
  /// Sets the property from the field's stored state, `nil` when the entity lacks the
  /// field. The caller finds the state: one entity lookup serves every field, and a
  /// list of entities sharing their field names finds each field's slot once.
  let read: @Sendable (inout Model, FieldState?) -> Void
  /// Records the change of the property from `old` to `new`. Creating, `old` is the
  /// model's defaults, built once for every field: a register records a value that
  /// differs from its default, a set or text field everything `new` holds (a missing set
  /// or text reads as empty, whatever the default).
  let write:
    @Sendable (_ old: Model, _ new: Model, _ creating: Bool, inout DocumentTransaction, EntityKey)
      -> Void

  /// A last-writer-wins register: the later write wins, field by field.
  public static func register<Value: FieldValueConvertible & Equatable>(
    _ name: String, _ keyPath: WritableKeyPath<Model, Value> & Sendable
  ) -> EntityField {
    EntityField(
      name: name, kind: .register, keyPath: keyPath,
      read: { model, state in
        if case .register(let register)? = state, let stored = register.value,
          let value = Value(fieldValue: stored)
        {
          model[keyPath: keyPath] = value
        }
      },
      write: { old, new, _, transaction, key in
        let value = new[keyPath: keyPath]
        // A new entity records only what differs from the default, so that a concurrent
        // creation of the same entity elsewhere keeps its own values for the rest.
        guard value != old[keyPath: keyPath] else { return }
        transaction.setValue(value.fieldValue, for: name, of: key)
      })
  }

  /// An add-wins set: an add survives a concurrent remove.
  public static func set<Element: FieldValueConvertible & Hashable>(
    _ name: String, _ keyPath: WritableKeyPath<Model, Set<Element>> & Sendable
  ) -> EntityField {
    EntityField(
      name: name, kind: .set, keyPath: keyPath,
      read: { model, state in
        var value = Set<Element>()
        if case .set(let elements)? = state {
          value.reserveCapacity(elements.count)
          for (element, presence) in elements where presence.isPresent {
            if let element = Element(fieldValue: element) { value.insert(element) }
          }
        }
        model[keyPath: keyPath] = value
      },
      write: { old, new, creating, transaction, key in
        let before = creating ? [] : old[keyPath: keyPath]
        let after = new[keyPath: keyPath]
        guard before != after else { return }
        // Sorted so the dots are handed out in the same order on every run.
        for element in before.subtracting(after).map(\.fieldValue).sorted() {
          transaction.remove(element, from: name, of: key)
        }
        for element in after.subtracting(before).map(\.fieldValue).sorted() {
          transaction.insert(element, into: name, of: key)
        }
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
  public static func text(
    _ name: String, _ keyPath: WritableKeyPath<Model, String> & Sendable
  ) -> EntityField {
    EntityField(
      name: name, kind: .text, keyPath: keyPath,
      read: { model, state in
        if case .text(let storage)? = state {
          model[keyPath: keyPath] = storage.text.string
        } else {
          model[keyPath: keyPath] = ""
        }
      },
      write: { old, new, creating, transaction, key in
        let before = creating ? "" : old[keyPath: keyPath]
        let after = new[keyPath: keyPath]
        // Unchanged, the two share their storage and compare in O(1).
        guard before != after else { return }
        // Nothing to diff against: the whole string is the insert.
        guard !before.isEmpty else {
          transaction.insertText(after, at: 0, in: name, of: key)
          return
        }
        let edit = ScalarEdit(from: before, to: after)
        if !edit.deleted.isEmpty { transaction.deleteText(edit.deleted, in: name, of: key) }
        if !edit.inserted.isEmpty {
          transaction.insertText(edit.inserted, at: edit.deleted.lowerBound, in: name, of: key)
        }
      })
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
  public func model<Model: EntityModel>(_ type: Model.Type, id: String) -> Model? {
    let key = EntityKey(type: Model.entityType, id: id)
    guard let position = entities.index(forKey: key), entities.values[position].isVisible
    else { return nil }
    let fields = entities.values[position].fields
    var model = Model()
    for field in Model.schema.fields { field.read(&model, fields[field.name]) }
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
  public func models<Model: EntityModel>(_ type: Model.Type) -> [(id: String, value: Model)] {
    let schema = Model.schema.fields
    var positions: [Int] = []
    var models: [Model] = []
    // Entities of a type mostly share one list of field names (``FieldNameLists``): each
    // field's slot in the last list seen is reused while the list is the same one.
    var names: [String] = []
    var slots = [Int?](repeating: nil, count: schema.count)
    for position in entities.positions(ofType: Model.entityType)
    where entities.values[position].isVisible {
      let fields = entities.values[position].fields
      if fields.keys != names {
        names = fields.keys
        slots = schema.map { fields.index(forKey: $0.name) }
      }
      var model = Model()
      for index in schema.indices {
        schema[index].read(&model, slots[index].map { fields.values[$0] })
      }
      positions.append(position)
      models.append(model)
    }
    return entities.keyOrder(of: positions).map {
      (entities.key(at: positions[$0]).id, models[$0])
    }
  }
}

extension DocumentTransaction {
  /// Creates an entity from a model value and returns its id.
  ///
  /// Only properties that differ from the model's defaults are written, so that a
  /// concurrent creation of the same id elsewhere keeps its own values for the rest.
  ///
  /// - Complexity: O(f + n) for f schema fields and n scalars of its text fields: the
  ///   same writes as the transaction that sets each field by hand.
  @discardableResult
  public mutating func create<Model: EntityModel>(_ value: Model, id: String = UUID().uuidString)
    -> String
  {
    let key = EntityKey(type: Model.entityType, id: id)
    create(key)
    let defaults = Model()
    for field in Model.schema.fields { field.write(defaults, value, true, &self, key) }
    return id
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
  @discardableResult
  public mutating func update<Model: EntityModel>(
    _ type: Model.Type, id: String, _ body: (inout Model) -> Void
  ) -> Bool {
    guard let old = document.model(Model.self, id: id) else { return false }
    var new = old
    body(&new)
    let key = EntityKey(type: Model.entityType, id: id)
    for field in Model.schema.fields { field.write(old, new, false, &self, key) }
    return true
  }

  /// Deletes an entity of the model's type.
  public mutating func delete<Model: EntityModel>(_ type: Model.Type, id: String) {
    delete(EntityKey(type: Model.entityType, id: id))
  }
}

extension Replica {
  /// The model stored under `id`, or `nil` if there is no such visible entity.
  public func get<Model: EntityModel>(_ type: Model.Type, id: String) -> Model? {
    document.model(type, id: id)
  }

  /// Every visible entity of the model's type, sorted by id.
  public func all<Model: EntityModel>(_ type: Model.Type) -> [(id: String, value: Model)] {
    document.models(type)
  }

  /// Creates an entity and returns its id and the commit to send.
  @discardableResult
  public mutating func create<Model: EntityModel>(_ value: Model, id: String = UUID().uuidString)
    -> (id: String, commit: Commit)
  {
    let commit = transact { $0.create(value, id: id) }
    return (id, commit)
  }

  /// Edits an entity through its model and returns the commit to send.
  ///
  /// - Complexity: O(f + n), see ``DocumentTransaction/update(_:id:_:)``: assigning a
  ///   text property diffs the whole string. Type through an ``EntityText`` instead.
  /// - Throws: ``ReplicaError/entityNotFound(_:)`` if there is no such visible entity.
  @discardableResult
  public mutating func update<Model: EntityModel>(
    _ type: Model.Type, id: String, _ body: (inout Model) -> Void
  ) throws(ReplicaError) -> Commit {
    var found = true
    let commit = transact { found = $0.update(type, id: id, body) }
    guard found else { throw .entityNotFound(EntityKey(type: Model.entityType, id: id)) }
    return commit
  }

  /// Deletes an entity and returns the commit to send.
  @discardableResult
  public mutating func delete<Model: EntityModel>(_ type: Model.Type, id: String) -> Commit {
    transact { $0.delete(type, id: id) }
  }
}
