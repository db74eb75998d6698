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
  let read: @Sendable (inout Model, Document, EntityKey) -> Void
  /// Records the change from the old model (`nil` when creating) to the new one.
  let write: @Sendable (Model?, Model, inout DocumentTransaction, EntityKey) -> Void

  /// A last-writer-wins register: the later write wins, field by field.
  public static func register<Value: FieldValueConvertible & Equatable>(
    _ name: String, _ keyPath: WritableKeyPath<Model, Value> & Sendable
  ) -> EntityField {
    EntityField(
      name: name, kind: .register, keyPath: keyPath,
      read: { model, document, key in
        if let stored = document.value(of: name, in: key), let value = Value(fieldValue: stored) {
          model[keyPath: keyPath] = value
        }
      },
      write: { old, new, transaction, key in
        let value = new[keyPath: keyPath]
        // A new entity records only what differs from the default, so that a concurrent
        // creation of the same entity elsewhere keeps its own values for the rest.
        let previous = old?[keyPath: keyPath] ?? Model()[keyPath: keyPath]
        guard value != previous else { return }
        transaction.setValue(value.fieldValue, for: name, of: key)
      })
  }

  /// An add-wins set: an add survives a concurrent remove.
  public static func set<Element: FieldValueConvertible & Hashable>(
    _ name: String, _ keyPath: WritableKeyPath<Model, Set<Element>> & Sendable
  ) -> EntityField {
    EntityField(
      name: name, kind: .set, keyPath: keyPath,
      read: { model, document, key in
        model[keyPath: keyPath] = Set(
          document.elements(of: name, in: key).compactMap { Element(fieldValue: $0) })
      },
      write: { old, new, transaction, key in
        let before = old?[keyPath: keyPath] ?? []
        let after = new[keyPath: keyPath]
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
  /// string, and the write compares all of it, so a keystroke costs O(n). To type, edit
  /// the field through its ``EntityText`` handle instead (`EntityText(\Note.body, of:
  /// id)`), which costs O(log n) an edit and records the same operations.
  ///
  /// - Complexity: a write is O(n) for the n scalars of the old and new strings (the
  ///   diff, after the O(n) read that built the model), plus O(log n + k) for the k
  ///   scalars it changes; its delta is O(k).
  public static func text(
    _ name: String, _ keyPath: WritableKeyPath<Model, String> & Sendable
  ) -> EntityField {
    EntityField(
      name: name, kind: .text, keyPath: keyPath,
      read: { model, document, key in
        model[keyPath: keyPath] = document.text(of: name, in: key)
      },
      write: { old, new, transaction, key in
        let before = old?[keyPath: keyPath] ?? ""
        let after = new[keyPath: keyPath]
        guard before != after else { return }
        let edit = ScalarEdit(from: before, to: after)
        if !edit.deleted.isEmpty { transaction.deleteText(edit.deleted, in: name, of: key) }
        if !edit.inserted.isEmpty {
          transaction.insertText(edit.inserted, at: edit.deleted.lowerBound, in: name, of: key)
        }
      })
  }
}

/// The smallest single replacement that turns one string into another, in scalars.
struct ScalarEdit {
  /// The range of the old string's scalars to delete.
  var deleted: Range<Int>
  /// The scalars to insert at `deleted.lowerBound`.
  var inserted: String

  init(from old: String, to new: String) {
    let oldScalars = Array(old.unicodeScalars)
    let newScalars = Array(new.unicodeScalars)
    var prefix = 0
    let limit = Swift.min(oldScalars.count, newScalars.count)
    while prefix < limit, oldScalars[prefix] == newScalars[prefix] { prefix += 1 }
    var suffix = 0
    while suffix < limit - prefix,
      oldScalars[oldScalars.count - 1 - suffix] == newScalars[newScalars.count - 1 - suffix]
    {
      suffix += 1
    }
    deleted = prefix..<(oldScalars.count - suffix)
    var inserted = String.UnicodeScalarView()
    inserted.append(contentsOf: newScalars[prefix..<(newScalars.count - suffix)])
    self.inserted = String(inserted)
  }
}

// MARK: - Reading and writing models

extension Document {
  /// The model stored under `id`, or `nil` if there is no such visible entity.
  ///
  /// - Complexity: O(f + n) for f schema fields and n scalars of its text fields.
  public func model<Model: EntityModel>(_ type: Model.Type, id: String) -> Model? {
    let key = EntityKey(type: Model.entityType, id: id)
    guard contains(key) else { return nil }
    var model = Model()
    for field in Model.schema.fields { field.read(&model, self, key) }
    return model
  }

  /// Every visible entity of the model's type, sorted by id.
  ///
  /// - Complexity: O(e log e) for e entities in the document, plus reading each model.
  public func models<Model: EntityModel>(_ type: Model.Type) -> [(id: String, value: Model)] {
    keys(ofType: Model.entityType).compactMap { key in
      model(Model.self, id: key.id).map { (key.id, $0) }
    }
  }
}

extension DocumentTransaction {
  /// Creates an entity from a model value and returns its id.
  ///
  /// Only properties that differ from the model's defaults are written, so that a
  /// concurrent creation of the same id elsewhere keeps its own values for the rest.
  @discardableResult
  public mutating func create<Model: EntityModel>(_ value: Model, id: String = UUID().uuidString)
    -> String
  {
    let key = EntityKey(type: Model.entityType, id: id)
    create(key)
    for field in Model.schema.fields { field.write(nil, value, &self, key) }
    return id
  }

  /// Edits an existing entity through its model; only changed fields are recorded.
  ///
  /// Set properties record the elements added and removed; text properties the changed
  /// range; register properties the new value.
  ///
  /// - Complexity: O(f + n) for f schema fields and n scalars of the entity's text
  ///   fields: the model is read whole and compared whole. A text property assigned here
  ///   costs O(n) a keystroke; type through an ``EntityText`` for O(log n).
  /// - Returns: `false` (and changes nothing) if there is no such visible entity.
  @discardableResult
  public mutating func update<Model: EntityModel>(
    _ type: Model.Type, id: String, _ body: (inout Model) -> Void
  ) -> Bool {
    guard let old = document.model(Model.self, id: id) else { return false }
    var new = old
    body(&new)
    let key = EntityKey(type: Model.entityType, id: id)
    for field in Model.schema.fields { field.write(old, new, &self, key) }
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
