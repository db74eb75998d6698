/// A part of a ``Document`` that travels between replicas: the events of one transaction,
/// or everything a peer lacks.
///
/// Deltas are idempotent and commutative: send them more than once, in any order, through
/// any channel, and every replica that has applied the same set ends in the same state.
/// Deltas join into groups with ``merging(_:)``, so a device that was offline can send
/// one delta for a day of edits.
public struct DocumentDelta: Sendable, Equatable {
  /// The events the delta accounts for, including removals (seen dots it does not hold).
  ///
  /// A text edit's delta (one replica's edit of one text field) keeps its events as one
  /// range and builds the context only if something reads it.
  public package(set) var context: CausalContext {
    get {
      guard let storedTextEdit else { return storedContext }
      return CausalContext(replica: storedTextEdit.replica, counters: storedTextEdit.counters)
    }
    set {
      materializeEntities()
      storedContext = newValue
    }
    _modify {
      materializeEntities()
      yield &storedContext
    }
  }

  private var storedContext: CausalContext

  /// The entities the delta touches and what it carries for each.
  ///
  /// A text edit's delta keeps its one entity as a ``TextEdit`` and builds the two
  /// one-entry hash tables only if something reads them: encoding it, sending it in a
  /// frame and applying it need neither.
  package var entities: [EntityKey: EntityDelta] {
    get {
      guard let edit = storedTextEdit else { return storedEntities }
      return [edit.key: edit.entity]
    }
    set {
      materializeEntities()
      storedEntities = newValue
    }
    _modify {
      materializeEntities()
      yield &storedEntities
    }
  }

  private var storedEntities: [EntityKey: EntityDelta]

  /// The delta's storage when it is one replica's edit of one text field: set, the delta is
  /// exactly this edit and `storedContext` and `storedEntities` are empty; `nil`, the
  /// delta is those two tables. The transaction, the text edit decoder and the frame
  /// decoder all make this one form of a keystroke, and ``Document/apply(_:)`` and both
  /// encoders read it as it is.
  package private(set) var storedTextEdit: TextEdit?

  /// One replica's edit of one text field: the runs `runs` of the field `field` of `key`,
  /// whose dots are exactly the counters `counters` of `replica`. Its delta's context is
  /// those dots and its entity's presence adds the latest of them.
  package struct TextEdit: Sendable {
    package var key: EntityKey
    package var field: String
    package var runs: RGADelta
    package var replica: ReplicaID
    package var counters: ClosedRange<UInt64>

    /// The edit's latest dot, which its entity's presence adds.
    package var last: Dot { Dot(replica: replica, counter: counters.upperBound) }

    /// The edit as a delta's entity: the presence `.add(last)` and the runs.
    package var entity: EntityDelta {
      EntityDelta(presence: .add(last), fields: [field: .text(runs)])
    }
  }

  /// The empty delta.
  public init() {
    storedContext = CausalContext()
    storedEntities = [:]
  }

  /// The delta of `edit`, whose runs' dots the caller knows to be exactly its counters.
  package init(textEdit edit: TextEdit) {
    storedContext = CausalContext()
    storedEntities = [:]
    storedTextEdit = edit
  }

  /// The delta of the runs `runs` of the field `field` of `key`, made by one replica: a
  /// ``TextEdit`` when their dots are one range (a keystroke's, a transaction's typing),
  /// the tables otherwise; `nil` if the runs are empty, name several replicas or run past
  /// the counter space. What the text edit decoder and the frame decoder make of the runs
  /// they read.
  package static func textEdit(_ runs: RGADelta, field: String, of key: EntityKey) -> DocumentDelta?
  {
    if let (replica, range) = singleRunEvents(of: runs) {
      return DocumentDelta(
        textEdit: TextEdit(key: key, field: field, runs: runs, replica: replica, counters: range))
    }
    guard let (replica, counters) = events(of: runs) else { return nil }
    if counters.ranges.count == 1, let range = counters.ranges.first {
      return DocumentDelta(
        textEdit: TextEdit(key: key, field: field, runs: runs, replica: replica, counters: range))
    }
    var delta = DocumentDelta()
    delta.context.insert(replica: replica, counters: counters)
    delta.entities[key] = EntityDelta(
      presence: .add(Dot(replica: replica, counter: counters.maximum)),
      fields: [field: .text(runs)])
    return delta
  }

  /// Moves a ``TextEdit`` into the tables, before they are changed.
  private mutating func materializeEntities() {
    guard let edit = storedTextEdit else { return }
    storedTextEdit = nil
    storedContext = CausalContext(replica: edit.replica, counters: edit.counters)
    storedEntities = [edit.key: edit.entity]
  }

  /// Joins the local text edit `runs` of `field` of `key`, made with the counters
  /// `counters` of `replica`, into the delta of a transaction: the edit itself when the
  /// delta is empty, an extension of the delta's text edit when it continues it (the
  /// same field and replica, the next counters), the tables otherwise. `runs` must be in
  /// normal form. Returns whether the field's runs may now be out of it
  /// (``normalizeTextRuns()`` brings them back): not when `runs` follow the field's
  /// earlier runs in normal order (``RGADelta/appendKeepingNormalForm(_:)``), as a run
  /// of typing does.
  mutating func joinLocalTextEdit(
    _ runs: consuming RGADelta, replica: ReplicaID, counters: ClosedRange<UInt64>, field: String,
    of key: EntityKey
  ) -> Bool {
    if isEmpty {
      self = DocumentDelta(
        textEdit: TextEdit(key: key, field: field, runs: runs, replica: replica, counters: counters)
      )
      return false
    }
    if var edit = storedTextEdit, edit.replica == replica,
      edit.counters.upperBound &+ 1 == counters.lowerBound, edit.key == key, edit.field == field
    {
      storedTextEdit = nil  // so the runs below are uniquely referenced
      let isNormal = edit.runs.appendKeepingNormalForm(runs)
      edit.counters = edit.counters.lowerBound...counters.upperBound
      storedTextEdit = edit
      return !isNormal
    }
    context.insert(replica: replica, counters: counters)
    return entities[key, default: EntityDelta()].appendLocalTextRuns(
      runs, last: Dot(replica: replica, counter: counters.upperBound), field: field)
  }

  /// Brings every text field's runs into normal form, each in place.
  mutating func normalizeTextRuns() {
    if var edit = storedTextEdit {
      storedTextEdit = nil
      edit.runs.normalize()
      storedTextEdit = edit
      return
    }
    for index in storedEntities.indices { storedEntities.values[index].normalizeTextRuns() }
  }

  /// Two deltas are equal when they know the same events and carry the same entities,
  /// however they store them.
  public static func == (lhs: DocumentDelta, rhs: DocumentDelta) -> Bool {
    lhs.context == rhs.context && lhs.entities == rhs.entities
  }

  /// Whether the delta carries nothing.
  public var isEmpty: Bool {
    storedTextEdit == nil && storedContext.isEmpty && storedEntities.isEmpty
  }

  /// The entities the delta touches, sorted.
  ///
  /// - Complexity: O(k log k) for k entities in the delta.
  public var keys: [EntityKey] {
    if let edit = storedTextEdit { return [edit.key] }
    return storedEntities.keys.sorted()
  }

  /// The fields of `key` the delta writes, sorted (empty if it only creates or deletes
  /// the entity, or does not touch it): with ``keys`` and `context.eventCount`, what an app
  /// inspects before it applies a delta from elsewhere.
  ///
  /// - Complexity: O(f log f) for f fields.
  public func fields(of key: EntityKey) -> [String] {
    if let edit = storedTextEdit { return edit.key == key ? [edit.field] : [] }
    return storedEntities[key]?.fields.keys.sorted() ?? []
  }

  /// Calls `body` with each entity the delta touches, in no particular order, without
  /// building the hash table a keystroke's delta leaves unbuilt: a store marks them pending
  /// on every commit.
  ///
  /// - Complexity: O(k) for k entities in the delta.
  public func forEachKey(_ body: (EntityKey) -> Void) {
    if let edit = storedTextEdit { return body(edit.key) }
    for key in storedEntities.keys { body(key) }
  }

  /// The latest counter of `replica` the delta accounts for (0 if none), without building
  /// the context a keystroke's delta leaves unbuilt.
  ///
  /// - Complexity: O(1).
  public func latestCounter(of replica: ReplicaID) -> UInt64 {
    if let edit = storedTextEdit {
      return edit.replica == replica ? edit.counters.upperBound : 0
    }
    return storedContext.counters(of: replica).maximum
  }

  /// The latest register timestamp in the delta, for the receiving replica's clock.
  var latestTimestamp: Timestamp? {
    guard storedTextEdit == nil else { return nil }  // text carries no timestamps
    return entities.values.reduce(nil) {
      FieldDelta.latestTimestamp(of: $1.fields.values, after: $0)
    }
  }

  /// Joins another delta into this one; applying the result equals applying both.
  ///
  /// - Complexity: O(k + d) for k entities and d entries in `other`.
  public mutating func merge(_ other: DocumentDelta) {
    guard !isEmpty else {
      self = other
      return
    }
    for (key, incoming) in other.entities {
      guard var existing = entities.removeValue(forKey: key) else {
        entities[key] = incoming
        continue
      }
      existing.presence.merge(incoming.presence)
      for (name, field) in incoming.fields { existing.merge(field, into: name) }
      entities[key] = existing
    }
    context.formUnion(other.context)
  }

  /// Joins the delta of one event, `dot`, of `key` that changes `field` (if any): the
  /// context `[dot]`, and the entity `key` with the presence `.add(dot)` and that one
  /// field, as ``merge(_:)`` would, without building that delta's tables.
  mutating func merge(event dot: Dot, on key: EntityKey, field: FieldEdit?) {
    context.insert(dot)
    // Edited in place: one lookup, and no copy of the entity's table.
    entities[key, default: EntityDelta()].merge(event: dot, field: field)
  }

  /// The join of the two deltas.
  ///
  /// - Complexity: O(k + d) for k entities and d entries in `other`, plus a copy of
  ///   this delta.
  public func merging(_ other: DocumentDelta) -> DocumentDelta {
    var result = self
    result.merge(other)
    return result
  }
}

/// One field's change in one local event: a register write, or a set add or remove.
struct FieldEdit: Sendable {
  var name: String
  var change: FieldDelta
}

/// What a delta carries for one entity.
package struct EntityDelta: Sendable, Equatable {
  /// The entity's versions (see ``Presence``), joined into the receiver's.
  package var presence = Presence()
  package var fields = FieldTable<FieldDelta>()

  package init(presence: Presence = Presence(), fields: FieldTable<FieldDelta> = FieldTable()) {
    self.presence = presence
    self.fields = fields
  }

  /// Joins the local event `dot`, which changes `field` (if any).
  mutating func merge(event dot: Dot, field: FieldEdit?) {
    presence.mergeAdd(dot)
    guard let field else { return }
    merge(field.change, into: field.name)
  }

  /// Joins `change` into the field `name` (which it adds if missing), in its slot.
  mutating func merge(_ change: FieldDelta, into name: String) {
    guard let position = fields.index(forKey: name) else {
      // A transaction's delta gains its entity's fields one event at a time: room for a
      // typical entity's from the first (the delta is short-lived).
      if fields.isEmpty { fields.reserveCapacity(4) }
      fields[name] = change
      return
    }
    let existing = fields.values[position]
    fields.values[position].vacate()  // so the merge below edits the only reference
    fields.values[position] = existing.merged(with: change)
  }

  /// Joins a local text edit's runs (in normal form), whose latest dot is `last`, into the
  /// field `field`; returns whether the field's runs may now be out of normal form (see
  /// ``DocumentDelta/joinLocalTextEdit(_:replica:counters:field:of:)``).
  mutating func appendLocalTextRuns(_ runs: consuming RGADelta, last: Dot, field: String)
    -> Bool
  {
    presence.mergeAdd(last)
    guard let position = fields.index(forKey: field),
      case .text(var earlier) = fields.values[position]
    else {
      merge(.text(runs), into: field)
      return false
    }
    fields.values[position].vacate()  // the runs are now uniquely referenced
    let isNormal = earlier.appendKeepingNormalForm(runs)
    fields.values[position] = .text(earlier)
    return !isNormal
  }

  /// Brings the runs of every text field into normal form, each in its slot.
  mutating func normalizeTextRuns() {
    for position in fields.values.indices {
      guard case .text(var runs) = fields.values[position] else { continue }
      fields.values[position].vacate()  // keeps the runs uniquely referenced
      runs.normalize()
      fields.values[position] = .text(runs)
    }
  }
}

extension Document {
  /// What a replica that knows `known` lacks: the entity versions, fields, elements,
  /// characters and deletions whose events are not in `known`, and the context
  /// difference. Every change, removals included, is an event with a dot of its own, so
  /// nothing is re-sent that `known` already covers, except that a presence (an entity's
  /// or a set element's) is re-sent whole when `known` has a gap at or below one of its
  /// entries (see `Presence.mayHaveEvents(unknownTo:)`).
  ///
  /// Its size grows with the changes since `known`, not with the document's history, and
  /// so does its cost: an index of which entities each replica's events touched (see
  /// `EventIndex`) lists the entities to visit.
  ///
  /// - Complexity: O(r log e + k + d) for r replicas, e entities, k entities touched by
  ///   events above `known`'s gap-free prefix, and d dots in the result; at most O(e + d).
  public func delta(since known: CausalContext) -> DocumentDelta {
    var delta = DocumentDelta()
    delta.context = context.subtracting(known)
    guard !delta.context.isEmpty else { return delta }
    let prefix = known.versionVector
    forEachPosition(mayHaveEventsAbove: prefix) { position in
      addEntity(
        entities.key(at: position), entities.values[position], since: known, prefix: prefix,
        to: &delta)
    }
    return delta
  }

  /// Calls `body` with the position of every entity that may have events above `prefix`
  /// (and maybe others): those the event index lists, or every entity when it would
  /// list more than half of them. May repeat a position.
  private func forEachPosition(mayHaveEventsAbove prefix: VersionVector, _ body: (Int) -> Void) {
    if let touched = events.entities(withEventsAbove: prefix, limit: entities.count / 2) {
      for position in touched { body(position) }
    } else {
      for position in entities.values.indices { body(position) }
    }
  }

  /// The keys of the entities ``delta(since:)`` would hold for `known` (those with
  /// events `known` lacks), without building the delta or decoding any text: a store's
  /// pending entities at open. May repeat a key.
  ///
  /// An entity's presence holds its latest event of each replica, so an entity has
  /// events above `known`'s gap-free prefix exactly when its presence does, and that is
  /// when ``delta(since:)`` includes it.
  package func keys(withEventsUnknownTo known: CausalContext) -> [EntityKey] {
    guard !context.subtracting(known).isEmpty else { return [] }
    let prefix = known.versionVector
    var keys: [EntityKey] = []
    forEachPosition(mayHaveEventsAbove: prefix) { position in
      if entities.values[position].presence.mayHaveEvents(unknownTo: prefix) {
        keys.append(entities.key(at: position))
      }
    }
    return keys
  }

  /// Adds what `known` lacks of one entity to `delta`.
  private func addEntity(
    _ key: EntityKey, _ record: EntityRecord, since known: CausalContext, prefix: VersionVector,
    to delta: inout DocumentDelta
  ) {
    var entityDelta = EntityDelta()
    // In name order, so each field goes at the end of the delta's table.
    for (name, field) in record.fields {
      switch field {
      case .register(let register):
        let missing = register.delta(since: known)
        if missing.stamp != nil { entityDelta.fields.append(name, .register(missing)) }
      case .parent(let register):
        let missing = register.delta(since: known)
        if missing.stamp != nil { entityDelta.fields.append(name, .parent(missing)) }
      case .set(let elements):
        let missing = elements.delta(since: prefix)
        if !missing.isEmpty { entityDelta.fields.append(name, .set(missing)) }
      case .text(let storage):
        // Most texts of a document have nothing new for a peer: skip them in O(r)
        // (a deferred text without decoding it).
        guard storage.mayHaveEvents(unknownTo: prefix) else { continue }
        let missing = storage.text.delta(since: known)
        if !missing.isEmpty { entityDelta.fields.append(name, .text(missing)) }
      case .list(let list):
        guard list.mayHaveEvents(unknownTo: prefix) else { continue }
        let missing = list.delta(since: known)
        if !missing.isEmpty { entityDelta.fields.append(name, .list(missing)) }
      }
    }
    // A field change travels with the entity's versions, so the receiver's presence
    // accounts for every event it holds, even when `known` overstates what the peer
    // has (a sync session's optimistic view after a lost message).
    if !entityDelta.fields.isEmpty || record.presence.mayHaveEvents(unknownTo: prefix) {
      entityDelta.presence = record.presence
      delta.entities[key] = entityDelta
    }
  }
}

extension DocumentDelta {
  /// The replica and counters of the dots of `runs` if they are a single well-formed run,
  /// as ``events(of:)`` would find them; `nil` otherwise.
  package static func singleRunEvents(of runs: RGADelta) -> (ReplicaID, ClosedRange<UInt64>)? {
    let first: Dot
    let count: UInt64
    if runs.deletes.isEmpty, runs.inserts.count == 1, let insert = runs.inserts.first {
      first = insert.id
      count = UInt64(insert.length)
    } else if runs.inserts.isEmpty, runs.deletes.count == 1, let delete = runs.deletes.first {
      first = delete.dot
      count = delete.count
    } else {
      return nil
    }
    guard count > 0, first.counter > 0 else { return nil }
    let (last, overflow) = first.counter.addingReportingOverflow(count - 1)
    guard !overflow else { return nil }
    return (first.replica, first.counter...last)
  }

  /// The replica that made every run of `runs` and the counters of their dots, or `nil`
  /// if the runs are empty, name several replicas, or run past the counter space.
  ///
  /// An insert run counts its ids (``RGADelta/Insert/length``), never its content: a
  /// tombstone run without content (``RGADelta/Insert/isContentDropped``) has the same
  /// dots, and the wire gives it placeholder content, so encoder and decoder must count
  /// both alike to make the same choice of form.
  package static func events(of runs: RGADelta) -> (replica: ReplicaID, counters: CounterRanges)? {
    var replica: ReplicaID?
    var counters = CounterRanges()
    func add(_ first: Dot, _ count: UInt64) -> Bool {
      guard count > 0 else { return true }
      let (last, overflow) = first.counter.addingReportingOverflow(count - 1)
      guard !overflow, first.counter > 0, replica == nil || replica == first.replica else {
        return false
      }
      replica = first.replica
      counters.insert(first.counter...last)
      return true
    }
    for insert in runs.inserts where !add(insert.id, UInt64(insert.length)) {
      return nil
    }
    for delete in runs.deletes where !add(delete.dot, delete.count) { return nil }
    guard let replica else { return nil }
    return (replica, counters)
  }
}
