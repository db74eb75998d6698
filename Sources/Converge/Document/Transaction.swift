/// A group of edits to one or more entities that becomes one delta.
///
/// Get one from ``Replica/transact(_:)``. Every edit applies to the document at once (so
/// later edits in the same transaction see earlier ones) and is added to the
/// transaction's delta, which the replica hands back for sending.
///
/// Every edit is an event with a dot of its own that advances the entity's version. That
/// is what keeps an entity alive when another device deletes it concurrently: the delete
/// removes only the versions it observed.
public struct Transaction: Sendable {
  /// The document as the transaction has left it so far.
  public internal(set) var document: Document
  /// The replica making the edits. In the (practically unreachable) case that its
  /// counter space runs out, the transaction continues under a fresh random id: a new id
  /// never reuses a dot.
  public internal(set) var replica: ReplicaID
  var clock: HybridLogicalClock
  var delta = DocumentDelta()
  /// Whether some text field of `delta` holds runs that are not in normal form yet.
  private var textRunsPending = false
  var recorder = ChangeRecorder()

  init(document: Document, replica: ReplicaID, clock: HybridLogicalClock) {
    self.document = document
    self.replica = replica
    self.clock = clock
  }

  // MARK: Entities

  /// Creates the entity, or revives it if it was deleted.
  ///
  /// A revived entity has the field values it had when it was deleted: deletion keeps
  /// field data so that a concurrent edit can keep the entity whole. Any field edit of a
  /// deleted entity revives it in the same way.
  ///
  /// - Complexity: O(r) for r replicas that touched the entity.
  public mutating func create(_ key: EntityKey) {
    let dot = nextDot()
    var change = DocumentDelta()
    change.context.insert(dot)
    change.entities[key] = EntityDelta(presence: .add(dot))
    commit(change)
  }

  /// Deletes the entity: removes the versions of it this replica has seen. Its fields
  /// are kept, so an edit made concurrently elsewhere revives it whole. Deleting an
  /// entity that is not visible does nothing.
  ///
  /// - Complexity: O(r) for r replicas that touched the entity.
  public mutating func delete(_ key: EntityKey) {
    guard let record = document.entities[key], record.isVisible else { return }
    let dot = nextDot()
    var change = DocumentDelta()
    change.context.insert(dot)
    change.entities[key] = EntityDelta(presence: .remove(observing: record.presence, dot: dot))
    commit(change)
  }

  // MARK: Registers

  /// Writes a register field; the write wins over every write this replica has seen.
  ///
  /// Writing a field the entity does not have yet adds it; writing to an entity that
  /// does not exist yet makes it visible, as ``create(_:)`` would.
  ///
  /// - Complexity: O(r) for r replicas that touched the entity.
  public mutating func setValue(_ value: FieldValue, for field: String, of key: EntityKey) {
    let dot = nextDot()
    let stamp = LWWRegister<FieldValue>.Stamp(timestamp: clock.tick(), dot: dot)
    var register = LWWRegister<FieldValue>()
    _ = register.set(value, stamp: stamp)
    commit(event: dot, on: key, field: field, .register(register))
  }

  // MARK: Sets

  /// Adds an element to a set field. The add wins over removes it has not seen.
  ///
  /// - Complexity: O(r) for r replicas that touched the entity or the element.
  public mutating func insert(_ element: FieldValue, into field: String, of key: EntityKey) {
    let dot = nextDot()
    commit(event: dot, on: key, field: field, .set([element: .add(dot)]))
  }

  /// Removes an element from a set field: exactly the adds of it this replica has seen.
  /// Removing an element that is not present does nothing.
  ///
  /// - Complexity: O(r) for r replicas that touched the entity or the element.
  public mutating func remove(_ element: FieldValue, from field: String, of key: EntityKey) {
    guard case .set(let elements)? = document.entities[key]?.fields[field],
      let observed = elements[element], observed.isPresent
    else { return }
    let dot = nextDot()
    commit(
      event: dot, on: key, field: field, .set([element: .remove(observing: observed, dot: dot)]))
  }

  // MARK: Text

  /// Inserts `string` into a text field at a position counted in Unicode scalars
  /// (clamped to the text's length).
  ///
  /// - Complexity: O(log n + m) for m inserted scalars.
  public mutating func insertText(
    _ string: String, at position: Int, in field: String, of key: EntityKey
  ) {
    let scalars = string.unicodeScalars
    guard !scalars.isEmpty else { return }
    editText(field: field, of: key, dotCount: UInt64(scalars.count)) { text, firstDot in
      let start = Swift.max(0, Swift.min(position, text.count))
      let utf16Start = text.utf16Offset(ofScalarOffset: start)
      let change = TextChange(
        kind: .insert, scalarRange: start..<start + scalars.count,
        utf16Range: utf16Start..<utf16Start + string.utf16.count)
      return (text.insert(scalars, at: start, firstDot: firstDot), change)
    }
  }

  /// Deletes the scalars in `range` (clamped to the text) from a text field.
  ///
  /// - Complexity: O(log n + k) for k deleted scalars in a text of n scalars.
  public mutating func deleteText(_ range: Range<Int>, in field: String, of key: EntityKey) {
    guard let text = document.sequence(of: field, in: key) else { return }
    let lower = Swift.max(0, Swift.min(range.lowerBound, text.count))
    let upper = Swift.max(lower, Swift.min(range.upperBound, text.count))
    guard lower < upper else { return }
    editText(field: field, of: key, dotCount: UInt64(upper - lower)) { text, firstDot in
      let utf16Range =
        text.utf16Offset(ofScalarOffset: lower)..<text.utf16Offset(ofScalarOffset: upper)
      let change = TextChange(kind: .delete, scalarRange: lower..<upper, utf16Range: utf16Range)
      return (text.delete(lower..<upper, firstDot: firstDot), change)
    }
  }

  /// Replaces the scalars in `range` with `string`: a delete, then an insert at
  /// `range.lowerBound`.
  ///
  /// - Complexity: O(log n + k + m) for k deleted and m inserted scalars.
  public mutating func replaceText(
    _ range: Range<Int>, with string: String, in field: String, of key: EntityKey
  ) {
    deleteText(range, in: field, of: key)
    insertText(string, at: range.lowerBound, in: field, of: key)
  }

  /// Runs a local edit on a text field's RGA with `dotCount` fresh dots and records it.
  private mutating func editText(
    field: String, of key: EntityKey, dotCount: UInt64,
    _ edit: (inout RGA, Dot) -> (RGADelta, TextChange)
  ) {
    // Take the record out of the document so the RGA's storage is uniquely referenced
    // and edited in place rather than copied.
    var record = document.entities.removeValue(forKey: key) ?? EntityRecord()
    var text: RGA
    if case .text(let existing)? = record.fields[field] {
      text = existing
    } else if record.fields[field] != nil {
      document.entities[key] = record
      return  // the field holds another kind; a text edit cannot apply to it
    } else {
      text = RGA()
    }
    let first = nextDots(dotCount)
    let last = Dot(replica: first.replica, counter: first.counter + (dotCount - 1))
    // The record is out of the document: note its visibility from the record itself.
    recorder.noteBefore(key, wasVisible: record.isVisible)
    // The same as merging `.add(last)`, without building a one-entry vector.
    record.presence.added[last.replica] = Swift.max(
      record.presence.added[last.replica], last.counter)
    record.fields[field] = nil
    let (textDelta, textChange) = edit(&text, first)
    record.fields[field] = .text(text)
    document.entities[key] = record
    let counters = first.counter...(first.counter + dotCount - 1)
    document.context.insert(replica: first.replica, counters: counters)
    delta.context.insert(replica: first.replica, counters: counters)
    addToDelta(textDelta, last: last, field: field, of: key)
    recorder.noteField(field, of: key, changed: true, text: [textChange])
  }

  /// Adds a local text edit's runs to the transaction's delta. Runs join the field's
  /// earlier runs unsorted; ``finishDelta()`` brings them into normal form once, so a
  /// transaction of many edits does not re-sort its runs after each one.
  private mutating func addToDelta(
    _ textDelta: RGADelta, last: Dot, field: String, of key: EntityKey
  ) {
    guard !delta.entities.isEmpty else {
      // The common case, a transaction's first edit: the delta is exactly this edit.
      delta.entities[key] = EntityDelta(presence: .add(last), fields: [field: .text(textDelta)])
      return
    }
    var entity = delta.entities.removeValue(forKey: key) ?? EntityDelta()
    let added = entity.presence.added[last.replica]
    entity.presence.added[last.replica] = Swift.max(added, last.counter)
    var existing = entity.fields.removeValue(forKey: field)
    if case .text(var runs)? = existing {
      existing = nil  // the runs are now uniquely referenced and grow in place
      runs.inserts.append(contentsOf: textDelta.inserts)
      runs.deletes.append(contentsOf: textDelta.deletes)
      entity.fields[field] = .text(runs)
      textRunsPending = true
    } else {
      entity.fields[field] = existing.map { $0.merged(with: .text(textDelta)) } ?? .text(textDelta)
    }
    delta.entities[key] = entity
  }

  /// Brings the text runs that ``addToDelta(_:last:field:of:)`` appended into normal form.
  mutating func finishDelta() -> DocumentDelta {
    guard textRunsPending else { return delta }
    textRunsPending = false
    for key in Array(delta.entities.keys) {
      guard var entity = delta.entities.removeValue(forKey: key) else { continue }
      for name in Array(entity.fields.keys) {
        guard case .text(var runs)? = entity.fields[name] else { continue }
        entity.fields[name] = nil  // keeps the runs uniquely referenced
        runs.normalize()
        entity.fields[name] = .text(runs)
      }
      delta.entities[key] = entity
    }
    return delta
  }

  // MARK: Plumbing

  /// Records a field change made with `dot`, which also advances the entity's version.
  private mutating func commit(
    event dot: Dot, on key: EntityKey, field: String, _ change: FieldDelta
  ) {
    var delta = DocumentDelta()
    delta.context.insert(dot)
    delta.entities[key] = EntityDelta(presence: .add(dot), fields: [field: change])
    commit(delta)
  }

  private mutating func commit(_ change: DocumentDelta) {
    document.apply(change, recording: &recorder)
    delta.merge(change)
  }

  /// A fresh dot of this transaction's replica.
  private mutating func nextDot() -> Dot {
    nextDots(1)
  }

  /// The first of `count` consecutive fresh dots, switching to a fresh replica id if the
  /// current one cannot supply them.
  private mutating func nextDots(_ count: UInt64) -> Dot {
    while true {
      if let first = document.context.nextDot(for: replica),
        count == 0 || first.counter <= UInt64.max - (count - 1)
      {
        return first
      }
      replica = .random()
    }
  }
}
