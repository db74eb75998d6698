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
  /// The delta of a transaction's single text edit keeps its events as one range of one
  /// replica (`localEvents`) and builds the context only if something reads it.
  public package(set) var context: CausalContext {
    get {
      guard let localEvents else { return storedContext }
      return CausalContext(replica: localEvents.replica, counters: localEvents.counters)
    }
    set {
      localEvents = nil
      storedContext = newValue
    }
    _modify {
      materializeContext()
      yield &storedContext
    }
  }

  private var storedContext: CausalContext
  /// When set, the delta's context is exactly these counters of this replica, and
  /// `storedContext` is empty.
  package private(set) var localEvents: (replica: ReplicaID, counters: ClosedRange<UInt64>)?

  /// The entities the delta touches and what it carries for each.
  ///
  /// The delta of a transaction's single text edit (a keystroke) keeps its one entity
  /// as a ``LocalTextEdit`` and builds the two one-entry hash tables only if something
  /// reads them: encoding it needs neither.
  package var entities: [EntityKey: EntityDelta] {
    get {
      guard let edit = localTextEdit else { return storedEntities }
      return [edit.key: edit.entity]
    }
    set {
      localTextEdit = nil
      storedEntities = newValue
    }
    _modify {
      materializeEntities()
      yield &storedEntities
    }
  }

  private var storedEntities: [EntityKey: EntityDelta]
  /// When set, the delta's only entity; `storedEntities` is then empty.
  package private(set) var localTextEdit: LocalTextEdit?

  /// One local text edit's entity: the runs of one field and the presence `.add(last)`.
  package struct LocalTextEdit: Sendable {
    package var key: EntityKey
    package var field: String
    package var runs: RGADelta
    package var last: Dot

    var entity: EntityDelta {
      EntityDelta(presence: .add(last), fields: [field: .text(runs)])
    }
  }

  /// The empty delta.
  public init() {
    storedContext = CausalContext()
    storedEntities = [:]
  }

  /// The delta of one local text edit: the runs `textEdit`, made with the dots `counters`
  /// of `last.replica`, the latest of which is `last`.
  package init(
    textEdit: RGADelta, counters: ClosedRange<UInt64>, last: Dot, field: String,
    of key: EntityKey
  ) {
    storedContext = CausalContext()
    localEvents = (last.replica, counters)
    storedEntities = [:]
    localTextEdit = LocalTextEdit(key: key, field: field, runs: textEdit, last: last)
  }

  private mutating func materializeContext() {
    guard let localEvents else { return }
    self.localEvents = nil
    storedContext = CausalContext(replica: localEvents.replica, counters: localEvents.counters)
  }

  private mutating func materializeEntities() {
    guard let edit = localTextEdit else { return }
    localTextEdit = nil
    storedEntities = [edit.key: edit.entity]
  }

  /// Two deltas are equal when they know the same events and carry the same entities,
  /// however they store them.
  public static func == (lhs: DocumentDelta, rhs: DocumentDelta) -> Bool {
    lhs.context == rhs.context && lhs.entities == rhs.entities
  }

  /// Whether the delta carries nothing.
  public var isEmpty: Bool {
    localEvents == nil && storedContext.isEmpty && localTextEdit == nil
      && storedEntities.isEmpty
  }

  /// The entities the delta touches, sorted.
  ///
  /// - Complexity: O(k log k) for k entities in the delta.
  public var keys: [EntityKey] {
    if let edit = localTextEdit { return [edit.key] }
    return storedEntities.keys.sorted()
  }

  /// The fields of `key` the delta writes, sorted (empty if it only creates or deletes
  /// the entity, or does not touch it): with ``keys`` and `context.eventCount`, what an app
  /// inspects before it applies a delta from elsewhere.
  ///
  /// - Complexity: O(f log f) for f fields.
  public func fields(of key: EntityKey) -> [String] {
    if let edit = localTextEdit { return edit.key == key ? [edit.field] : [] }
    return storedEntities[key]?.fields.keys.sorted() ?? []
  }

  /// Calls `body` with each entity the delta touches, in no particular order, without
  /// building the hash table a keystroke's delta leaves unbuilt: a store marks them pending
  /// on every commit.
  ///
  /// - Complexity: O(k) for k entities in the delta.
  public func forEachKey(_ body: (EntityKey) -> Void) {
    if let edit = localTextEdit { return body(edit.key) }
    for key in storedEntities.keys { body(key) }
  }

  /// The latest counter of `replica` the delta accounts for (0 if none), without building
  /// the context a keystroke's delta leaves unbuilt.
  ///
  /// - Complexity: O(1).
  public func latestCounter(of replica: ReplicaID) -> UInt64 {
    if let localEvents {
      return localEvents.replica == replica ? localEvents.counters.upperBound : 0
    }
    return storedContext.counters(of: replica).maximum
  }

  /// The latest register timestamp in the delta, for the receiving replica's clock.
  var latestTimestamp: Timestamp? {
    guard localTextEdit == nil else { return nil }  // text carries no timestamps
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
        guard elements.presences.contains(where: { $0.mayHaveEvents(unknownTo: prefix) }) else {
          continue
        }
        let missing = elements.filter { $0.mayHaveEvents(unknownTo: prefix) }
        entityDelta.fields.append(name, .set(missing))
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
