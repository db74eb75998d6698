/// The replicated state of an app's data: entities keyed by type and id, each a set of
/// named fields that merge independently.
///
/// A field is a last-writer-wins register (a title, a due date, a flag), an add-wins set
/// (tags) or RGA text (a note body). Because each field merges on its own, two devices
/// that edit different fields of one record offline both keep their edit, and two that
/// edit the same field agree on the later write by hybrid logical clock, with no prompt.
///
/// ```swift
/// let list = EntityKey(type: "list", id: "groceries")
/// var phone = Replica()
/// var laptop = Replica()
/// let created = phone.transact { tx in
///   tx.create(list)
///   tx.setValue(.string("Groceries"), for: "title", of: list)
/// }
/// laptop.apply(created.delta)
/// let onLaptop = laptop.transact { tx in tx.insert(.string("pinned"), into: "tags", of: list) }
/// let onPhone = phone.transact { tx in tx.setValue(.string("Shopping"), for: "title", of: list) }
/// phone.apply(onLaptop.delta)
/// laptop.apply(onPhone.delta)
/// // Both: title "Shopping", tags ["pinned"].
/// ```
///
/// ## Presence and deletion
/// Every event on an entity (creation, a field write, a set change, typing) advances the
/// entity's version; a delete records the version it observed. The entity is visible
/// while it has an event its deleters did not see. A delete therefore beats the edits it
/// saw, and an edit made concurrently with a delete keeps the entity alive with all its
/// fields: deletion never removes field data, so nothing comes back partially.
///
/// ## One causal context
/// The whole document shares one ``CausalContext``: every dot of every entity, field,
/// element, character and deletion is recorded there. Per-key contexts would forget the
/// removals of a key when it is re-created and bring old data back.
///
/// - Complexity: reading an entity or field is O(1) expected. ``apply(_:)`` is
///   O(d log n) for a delta of size d; ``delta(since:)`` is O(e + d) for e entities.
public struct Document: Sendable {
  /// Every event this document has integrated.
  public package(set) var context: CausalContext
  package var entities: EntityTable
  /// Which entities each replica's events touched (derived from `entities`).
  package var events = EventIndex()
  /// Lists of field names the entities' tables share (memory only, not state).
  var fieldNames = FieldNameLists()
  /// The text fields holding changes that wait for missing events (derived from
  /// `entities`), so ``hasPendingChanges`` does not visit every field.
  var waitingTexts = Set<TextFieldKey>()
  /// The latest resolved forest of each parent field (memory only, not state), from
  /// the first parent field the document holds: `nil` before, so that documents without
  /// trees allocate no cache (their forests resolve uncached, and are empty).
  var forests: ForestCache?

  /// An empty document.
  public init() {
    context = CausalContext()
    entities = EntityTable()
  }

  /// Notes in ``events`` that the entity at `position` has the event `dot`, rebuilding
  /// the index when its stale entries outnumber the entities.
  mutating func noteEvent(ofEntityAt position: Int, _ dot: Dot) {
    events.note(position, replica: dot.replica, counter: dot.counter)
    rebuildEventsIfStale()
  }

  /// Takes a forest cache of this document's own before it changes, if it shares one
  /// with a copy (see ``ForestCache``). Every change of a document's state starts here
  /// once: a transaction (in `Replica.transact`), an applied delta, forgetting.
  ///
  /// - Complexity: O(1), plus O(f) for f cached forests when the cache is shared.
  mutating func ownForestCache() {
    guard forests != nil, !isKnownUniquelyReferenced(&forests) else { return }
    forests = forests?.copy()
  }

  mutating func rebuildEventsIfStale() {
    if events.needsRebuild(entityCount: entities.count) { events = EventIndex(entities) }
  }

  /// Derives what edits keep beside the entities for a document built another way, such
  /// as decoded: entities whose fields have the same names share one list of them (see
  /// ``FieldNameLists``), and the texts that wait for missing events are noted.
  package mutating func deriveFromEntities() {
    for index in entities.values.indices {
      entities.values[index].fields.shareNames(with: &fieldNames)
      // By slot, in place: iterating the table's (name, field) pairs copied every field.
      for slot in entities.values[index].fields.values.indices {
        let waits: Bool
        switch entities.values[index].fields.values[slot] {
        case .text(let storage): waits = storage.hasPending
        case .list(let list): waits = list.hasPending
        case .register, .set: waits = false
        case .parent:
          waits = false
          if forests == nil { forests = ForestCache() }
        }
        guard waits else { continue }
        waitingTexts.insert(
          TextFieldKey(
            entity: entities.key(at: index), field: entities.values[index].fields.keys[slot]))
      }
    }
  }
}

/// One text field of a document: its entity and its name.
struct TextFieldKey: Hashable, Sendable {
  var entity: EntityKey
  var field: String
}

extension Set<TextFieldKey> {
  /// Notes whether the text `field` of `entity` waits for missing events after a change.
  mutating func note(_ text: RGA, field: String, of entity: EntityKey) {
    // Nearly always empty and staying so: no key is built then.
    if text.hasPending {
      insert(TextFieldKey(entity: entity, field: field))
    } else if !isEmpty {
      remove(TextFieldKey(entity: entity, field: field))
    }
  }
}

/// One entity: its presence and its fields.
package struct EntityRecord: Sendable, Equatable {
  /// `added`: the entity's latest event per replica; `removed`: what deletes observed.
  package var presence = Presence()
  package var fields = FieldTable<FieldState>()

  package init() {}

  package var isVisible: Bool { presence.isPresent }

  /// Moves the text out of the field at `slot`, leaving a placeholder there, so that the
  /// caller holds the only reference to it (a copy if another document shared it) and
  /// edits it in place; `nil`, changing nothing, if the field holds another kind. The
  /// caller puts the storage back with `.text(storage)`.
  mutating func takeText(at slot: Int) -> TextStorage? {
    // Swapped out first: a second reference held while checking would defeat the
    // uniqueness check.
    var taken = FieldState.register(LWWRegister())
    swap(&taken, &fields.values[slot])
    guard case .text = taken else {
      swap(&taken, &fields.values[slot])
      return nil
    }
    switch consume taken {
    case .text(var storage):
      // A deferred text is decoded into a storage of its own, kept decoded from then on.
      if !isKnownUniquelyReferenced(&storage) || storage.isDeferred {
        storage = TextStorage(storage.text)
      }
      return storage
    case .register, .set, .list, .parent: return nil
    }
  }

  /// Advances the entity's version to the local event `last` (the same as merging
  /// `.add(last)` into its presence, without building a one-entry vector) and returns
  /// its visibility before and after the event.
  mutating func noteLocalEvent(_ last: Dot) -> (wasVisible: Bool, isVisible: Bool) {
    let wasVisible = isVisible
    presence.mergeAdd(last)
    return (wasVisible, isVisible)
  }
}

extension Document: Equatable {
  /// Two documents are equal when they know the same events and hold the same entities.
  public static func == (lhs: Document, rhs: Document) -> Bool {
    lhs.context == rhs.context && lhs.entities == rhs.entities
  }
}

// MARK: - Reading

extension Document {
  /// The visible entities' keys, sorted by type, then id, including entity types the
  /// app does not know.
  ///
  /// - Complexity: O(e log e) for e entities in the document.
  public var keys: [EntityKey] {
    visibleKeys(at: entities.values.indices)
  }

  /// The keys of visible entities of `type`, sorted by id.
  ///
  /// - Complexity: O(e log e) for e entities in the document.
  public func keys(ofType type: String) -> [EntityKey] {
    visibleKeys(at: entities.positions(ofType: type))
  }

  /// The keys of the visible entities at `positions`, sorted.
  private func visibleKeys(at positions: some Sequence<Int>) -> [EntityKey] {
    let visible = positions.filter { entities.values[$0].isVisible }
    return entities.keyOrder(of: visible).map { entities.key(at: visible[$0]) }
  }

  /// Whether the entity exists and is not deleted.
  ///
  /// - Complexity: O(r) for r replicas that touched the entity.
  public func contains(_ key: EntityKey) -> Bool {
    entities[key]?.isVisible ?? false
  }

  /// The names of the fields the entity has, sorted; deleted entities keep theirs.
  ///
  /// Includes fields the app's models do not declare (written by a newer app version).
  public func fieldNames(of key: EntityKey) -> [String] {
    entities[key]?.fields.keys ?? []
  }

  /// The kind of a field, or `nil` if the entity has no such field.
  public func fieldKind(_ field: String, of key: EntityKey) -> FieldKind? {
    entities[key]?.fields[field]?.kind
  }

  /// The current value of a register field, or `nil` if it was never written (or the
  /// field is of another kind).
  ///
  /// - Complexity: O(1).
  public func value(of field: String, in key: EntityKey) -> FieldValue? {
    guard case .register(let register)? = entities[key]?.fields[field] else { return nil }
    return register.value
  }

  /// The value of a register field for every visible entity of `type` that has one, in
  /// no particular order: the titles of a list view, read without building any other
  /// field or sorting what the view will sort its own way.
  ///
  /// ```swift
  /// let titles = document.values(of: "title", ofType: "note")
  /// let sorted = titles.sorted { $0.value < $1.value }  // as the list shows them
  /// ```
  ///
  /// - Complexity: O(e) for e entities in the document.
  public func values(of field: String, ofType type: String) -> [(key: EntityKey, value: FieldValue)]
  {
    var values: [(key: EntityKey, value: FieldValue)] = []
    values.reserveCapacity(entities.count)
    // Entities of a type mostly share one list of field names (``FieldNameLists``): the
    // field's position in the last list seen is reused while the list is the same one.
    var names: [String] = []
    var position: Int?
    let records = entities.values
    for index in entities.positions(ofType: type) where records[index].isVisible {
      let fields = records[index].fields
      if fields.keys != names {
        names = fields.keys
        position = fields.index(forKey: field)
      }
      if let position, case .register(let register) = fields.values[position],
        let value = register.value
      {
        values.append((entities.key(at: index), value))
      }
    }
    return values
  }

  /// The elements of a set field, sorted (empty if the field is of another kind).
  ///
  /// - Complexity: O(k log k + k r) for k elements ever added and r replicas.
  public func elements(of field: String, in key: EntityKey) -> [FieldValue] {
    guard case .set(let elements)? = entities[key]?.fields[field] else { return [] }
    return elements.filter(\.isPresent).map(\.key).sorted()
  }

  /// The content of a text field (empty if it has none or is of another kind).
  ///
  /// - Complexity: O(n) for n visible scalars.
  public func text(of field: String, in key: EntityKey) -> String {
    guard case .text(let storage)? = entities[key]?.fields[field] else { return "" }
    return storage.text.string
  }

  /// The RGA of a text field, for position conversions and fine-grained reads.
  public func sequence(of field: String, in key: EntityKey) -> RGA? {
    guard case .text(let storage)? = entities[key]?.fields[field] else { return nil }
    return storage.text
  }

  /// Whether parts of received deltas wait for events that have not arrived yet.
  ///
  /// Only text and a list's slots wait: an insert whose origin, or a delete whose
  /// target, is missing. Registers, sets, list items and presence integrate whatever
  /// order deltas arrive in.
  ///
  /// - Complexity: O(1).
  public var hasPendingChanges: Bool { !waitingTexts.isEmpty }
}

// MARK: - Merging

extension Document: Mergeable {
  /// Joins another replica's document into this one.
  ///
  /// - Complexity: O(D log n) for the D dots of `other`.
  public mutating func merge(_ other: Document) {
    apply(other.delta(since: CausalContext()))
  }
}

extension Document {
  /// Integrates a delta from this or another replica and reports what became visible.
  ///
  /// Deltas may arrive in any order, more than once, and grouped: applying is a join.
  /// Text whose dependencies have not arrived yet waits inside the document and is
  /// integrated when they do.
  ///
  /// - Complexity: O(d log n) for a delta with d dots in a document of n elements.
  @discardableResult
  public mutating func apply(_ delta: DocumentDelta) -> DocumentChanges {
    var recorder = ChangeRecorder()
    apply(delta, recording: &recorder)
    return recorder.finish(in: self)
  }

  /// Applies `delta`, noting what changed in `recorder`: a text edit (see
  /// ``DocumentDelta/TextEdit``) as it is kept, any other delta entity by entity.
  mutating func apply(_ delta: DocumentDelta, recording recorder: inout ChangeRecorder) {
    ownForestCache()
    if let edit = delta.storedTextEdit {
      apply(edit, recording: &recorder)
    } else {
      // This document's gap-free prefix, for entities it has no record of (see
      // ``wasForgotten(_:knownPrefix:)``), computed at the first.
      var knownPrefix: VersionVector?
      for (key, entityDelta) in delta.entities {
        merge(entityDelta, of: key, knownPrefix: &knownPrefix, recording: &recorder)
      }
      rebuildEventsIfStale()
      context.formUnion(delta.context)
    }
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
  }

  /// Joins one entity's delta into the document, creating its record unless the
  /// document forgot the entity.
  private mutating func merge(
    _ entityDelta: EntityDelta, of key: EntityKey, knownPrefix: inout VersionVector?,
    recording recorder: inout ChangeRecorder
  ) {
    // Edited in place: one lookup, and no copy of the record's storage.
    let entity: Int
    if let existing = entities.index(forKey: key) {
      entity = existing
    } else {
      let prefix = knownPrefix ?? context.versionVector
      knownPrefix = prefix
      if Self.wasForgotten(entityDelta, knownPrefix: prefix) { return }
      entities.append(key, EntityRecord())
      entity = entities.count - 1
    }
    recorder.noteBefore(key, in: self)
    if forests == nil, entityDelta.fields.values.contains(where: { $0.kind == .parent }) {
      forests = ForestCache()
    }
    events.note(entity, presence: entityDelta.presence)
    Self.merge(
      Self.withoutKnownSlots(entityDelta, known: context), of: key,
      into: &entities.values[entity],
      names: &fieldNames, waiting: &waitingTexts, recording: &recorder)
  }

  /// Applies one text edit (a keystroke, local or decoded). An existing text field is
  /// edited in place, without building the edit's tables or taking the entity out of the
  /// document; a new entity or field, or a field of another kind, takes the entity's
  /// general merge.
  private mutating func apply(
    _ edit: DocumentDelta.TextEdit, recording recorder: inout ChangeRecorder
  ) {
    defer { context.insert(replica: edit.replica, counters: edit.counters) }
    guard let entity = entities.index(forKey: edit.key),
      let slot = entities.values[entity].fields.index(forKey: edit.field),
      let text = entities.values[entity].takeText(at: slot)
    else {
      var knownPrefix: VersionVector?
      merge(edit.entity, of: edit.key, knownPrefix: &knownPrefix, recording: &recorder)
      rebuildEventsIfStale()
      return
    }
    // What the general merge does: `.add(last)` into the presence, then the runs.
    let last = edit.last
    let visibility = entities.values[entity].noteLocalEvent(last)
    noteEvent(ofEntityAt: entity, last)
    let changes = text.text.apply(edit.runs)
    waitingTexts.note(text.text, field: edit.field, of: edit.key)
    entities.values[entity].fields.values[slot] = .text(text)
    if changes.count == 1, let change = changes.first {
      recorder.noteSingleTextEdit(
        of: edit.key, field: edit.field, wasVisible: visibility.wasVisible,
        isVisible: visibility.isVisible, change: change)
    } else {
      recorder.noteChange(
        of: edit.key, wasVisible: visibility.wasVisible, isVisible: visibility.isVisible)
      recorder.noteField(edit.field, of: edit.key, changed: !changes.isEmpty, text: changes)
    }
  }

  /// Applies the delta of one event, `dot`, of `key` that changes `field` (if any): what
  /// ``apply(_:recording:)`` does with that delta (the context `[dot]`, and the entity
  /// `key` with the presence `.add(dot)` and that one field), without building its
  /// tables. A transaction's creates and its register and set writes take this path.
  mutating func apply(
    event dot: Dot, on key: EntityKey, field: FieldEdit?, recording recorder: inout ChangeRecorder
  ) {
    recorder.noteBefore(key, in: self)
    // Only a transaction takes this path, and `Replica.transact` has already given the
    // document a forest cache of its own (``ownForestCache()``).
    if forests == nil, case .parent? = field?.change { forests = ForestCache() }
    let entity = entities.insertIfAbsent(key)
    events.note(entity, replica: dot.replica, counter: dot.counter)
    Self.merge(
      event: dot, field: field, of: key, into: &entities.values[entity],
      names: &fieldNames, waiting: &waitingTexts, recording: &recorder)
    rebuildEventsIfStale()
    context.insert(dot)
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
  }

  /// Joins one entity's delta into its record; a new field takes its table's names from
  /// `names`, and a text's waiting changes are noted in `waiting`.
  private static func merge(
    _ entityDelta: EntityDelta, of key: EntityKey, into record: inout EntityRecord,
    names: inout FieldNameLists, waiting: inout Set<TextFieldKey>,
    recording recorder: inout ChangeRecorder
  ) {
    record.presence.merge(entityDelta.presence)
    for (name, fieldDelta) in entityDelta.fields {
      merge(
        fieldDelta, of: key, field: name, into: &record, names: &names, waiting: &waiting,
        recording: &recorder)
    }
  }

  /// Joins one event into the entity's record: ``merge(_:of:into:names:recording:)`` for
  /// an entity delta with the presence `.add(dot)` and `field` alone.
  private static func merge(
    event dot: Dot, field: FieldEdit?, of key: EntityKey, into record: inout EntityRecord,
    names: inout FieldNameLists, waiting: inout Set<TextFieldKey>,
    recording recorder: inout ChangeRecorder
  ) {
    record.presence.mergeAdd(dot)
    guard let field else { return }
    merge(
      field.change, of: key, field: field.name, into: &record, names: &names,
      waiting: &waiting, recording: &recorder)
  }

  /// Joins one field's delta into the entity's record and notes what changed.
  private static func merge(
    _ fieldDelta: FieldDelta, of key: EntityKey, field name: String,
    into record: inout EntityRecord, names: inout FieldNameLists,
    waiting: inout Set<TextFieldKey>, recording recorder: inout ChangeRecorder
  ) {
    var listChanges: [ListChange] = []
    let changes = integrate(
      fieldDelta, of: key, into: &record, field: name, names: &names, waiting: &waiting,
      listChanges: &listChanges)
    recorder.noteField(name, of: key, changed: changes.changed, text: changes.text)
    if changes.changed, case .list = fieldDelta {
      recorder.noteList(name, of: key, changes: listChanges)
    }
  }

  /// Joins one field's delta into an entity record; a list reports its items' changes
  /// in `listChanges` (the list applies the delta and reports them, in O(d log s)).
  private static func integrate(
    _ fieldDelta: FieldDelta, of key: EntityKey, into record: inout EntityRecord,
    field: String, names: inout FieldNameLists, waiting: inout Set<TextFieldKey>,
    listChanges: inout [ListChange]
  ) -> (changed: Bool, text: [TextChange]) {
    if let existing = record.fields[field], existing.kind != fieldDelta.kind {
      // Two kinds under one name: the higher kind replaces the lower on every replica.
      guard fieldDelta.kind > existing.kind else { return (false, []) }
      record.fields[field] = nil
    }
    switch fieldDelta {
    case .register(let incoming):
      var register = LWWRegister<FieldValue>()
      if case .register(let existing)? = record.fields[field] { register = existing }
      let before = register.value
      register.merge(incoming)
      record.fields.set(.register(register), for: field, sharingNames: &names)
      return (register.value != before, [])
    case .parent(let incoming):
      var register = LWWRegister<FieldValue>()
      if case .parent(let existing)? = record.fields[field] { register = existing }
      let before = register.value
      register.merge(incoming)
      record.fields.set(.parent(register), for: field, sharingNames: &names)
      return (register.value != before, [])
    case .set(let incoming):
      var elements = SetElements()
      if let slot = record.fields.index(forKey: field) {
        // Moved out, not copied: the table's reference would make the edit copy the set.
        var taken = FieldState.register(LWWRegister())
        swap(&taken, &record.fields.values[slot])
        if case .set(let existing) = consume taken { elements = existing }
      }
      let changed = elements.merge(incoming)
      record.fields.set(.set(elements), for: field, sharingNames: &names)
      return (changed, [])
    case .text(let incoming):
      let slot = record.fields.index(forKey: field)
      let text = slot.flatMap { record.takeText(at: $0) } ?? TextStorage(RGA())
      let changes = text.text.apply(incoming)
      waiting.note(text.text, field: field, of: key)
      record.fields.set(.text(text), for: field, sharingNames: &names)
      return (!changes.isEmpty, changes)
    case .list(let incoming):
      var list = MovableList()
      if let slot = record.fields.index(forKey: field) {
        // Moved out, not copied, as a set is.
        var taken = FieldState.register(LWWRegister())
        swap(&taken, &record.fields.values[slot])
        if case .list(let existing) = consume taken { list = existing }
      }
      let changed: Bool
      (changed, listChanges) = list.applyReportingChanges(incoming)
      waiting.note(list.slots, field: field, of: key)
      record.fields.set(.list(list), for: field, sharingNames: &names)
      return (changed, [])
    }
  }
}
