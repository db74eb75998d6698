/// A group of edits to one or more entities that becomes one delta.
///
/// Get one from ``Replica/transact(_:)``. Every edit applies to the document at once (so
/// later edits in the same transaction see earlier ones) and is added to the
/// transaction's delta, which the replica hands back for sending.
///
/// Every edit is an event with a dot of its own that advances the entity's version. That
/// is what keeps an entity alive when another device deletes it concurrently: the delete
/// removes only the versions it observed.
public struct DocumentTransaction: Sendable {
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
  /// The inverses of this transaction's edits, in the order made, when an
  /// ``UndoHistory`` records it; `nil` otherwise (then recording costs one check).
  var undoLog: UndoLog?

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
    let wasVisible = undoLog == nil || isVisible(key)
    let dot = nextDot()
    commit(event: dot, on: key, edit: nil)
    if !wasVisible { recordUndo(.hideEntity(key, replica: dot.replica)) }
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
    recordUndo(.restoreEntity(key))
  }

  // MARK: Registers

  /// Writes a register field; the write wins over every write this replica has seen.
  ///
  /// Writing a field the entity does not have yet adds it; writing to an entity that
  /// does not exist yet makes it visible, as ``create(_:)`` would.
  ///
  /// - Complexity: O(r) for r replicas that touched the entity.
  public mutating func setValue(_ value: FieldValue, for field: String, of key: EntityKey) {
    write(value, for: field, of: key)
  }

  /// Writes a register field and returns the write's stamp.
  @discardableResult
  mutating func write(_ value: FieldValue, for field: String, of key: EntityKey)
    -> LWWRegister<FieldValue>.Stamp
  {
    var previous: LWWRegister<FieldValue>?
    var wasVisible = true
    if undoLog != nil {
      wasVisible = isVisible(key)
      if case .register(let register)? = document.entities[key]?.fields[field] {
        previous = register
      }
    }
    let dot = nextDot()
    let stamp = LWWRegister<FieldValue>.Stamp(timestamp: clock.tick(), dot: dot)
    var register = LWWRegister<FieldValue>()
    _ = register.set(value, stamp: stamp)
    commit(event: dot, on: key, field: field, .register(register))
    if undoLog != nil {
      // The revival first, so that undo hides the entity after restoring the field.
      noteRevival(of: key, wasVisible: wasVisible, by: dot)
      recordUndo(
        .restoreRegister(
          key, field: field, previous: previous?.value, previousStamp: previous?.stamp,
          written: stamp))
    }
    return stamp
  }

  // MARK: Sets

  /// Adds an element to a set field. The add wins over removes it has not seen.
  ///
  /// - Complexity: O(r) for r replicas that touched the entity or the element.
  public mutating func insert(_ element: FieldValue, into field: String, of key: EntityKey) {
    var wasPresent = true
    var wasVisible = true
    if undoLog != nil {
      wasVisible = isVisible(key)
      if case .set(let elements)? = document.entities[key]?.fields[field] {
        wasPresent = elements[element]?.isPresent ?? false
      } else {
        wasPresent = false
      }
    }
    let dot = nextDot()
    commit(event: dot, on: key, field: field, .set([element: .add(dot)]))
    if undoLog != nil {
      noteRevival(of: key, wasVisible: wasVisible, by: dot)
      if !wasPresent {
        recordUndo(.removeOwnAdds(key, field: field, element: element, replica: dot.replica))
      }
    }
  }

  /// Removes an element from a set field: exactly the adds of it this replica has seen.
  /// Removing an element that is not present does nothing.
  ///
  /// - Complexity: O(r) for r replicas that touched the entity or the element.
  public mutating func remove(_ element: FieldValue, from field: String, of key: EntityKey) {
    guard case .set(let elements)? = document.entities[key]?.fields[field],
      let observed = elements[element], observed.isPresent
    else { return }
    let wasVisible = undoLog == nil || isVisible(key)
    let dot = nextDot()
    commit(
      event: dot, on: key, field: field, .set([element: .remove(observing: observed, dot: dot)]))
    if undoLog != nil {
      noteRevival(of: key, wasVisible: wasVisible, by: dot)
      recordUndo(.addElement(key, field: field, element: element))
    }
  }

  // MARK: Text

  /// Inserts `string` into a text field at a position counted in Unicode scalars
  /// (clamped to the text's length).
  ///
  /// - Complexity: O(log n + m) for m inserted scalars.
  public mutating func insertText(
    _ string: String, at position: Int, in field: String, of key: EntityKey
  ) {
    // One pass over the string for the scalars and their UTF-16 length: counting either
    // view on its own walks the string again (and the UTF-16 count of a non-ASCII string
    // allocates an index cache on it). The text copies the string's UTF-8 as it is.
    var string = string
    string.withUTF8 { utf8 in
      let (scalars, utf16Count) = UTF8Scalars.scalarsAndUTF16Count(ofValid: utf8)
      insertScalars(scalars, utf16Count: utf16Count, utf8: utf8, at: position, in: field, of: key)
    }
  }

  /// Inserts `scalars`, which take `utf16Count` UTF-16 code units and whose UTF-8 is
  /// `utf8`, into a text field.
  private mutating func insertScalars(
    _ scalars: [Unicode.Scalar], utf16Count: Int, utf8: UnsafeBufferPointer<UInt8>,
    at position: Int, in field: String, of key: EntityKey
  ) {
    let scalarCount = scalars.count
    guard scalarCount > 0 else { return }
    func insert(into text: inout RGA, firstDot: Dot) -> (RGADelta, TextChange) {
      let start = Swift.max(0, Swift.min(position, text.count))
      let utf16Start = Self.utf16Offset(ofScalarOffset: start, in: text)
      let change = TextChange(
        kind: .insert, scalarRange: start..<start + scalarCount,
        utf16Range: utf16Start..<utf16Start + utf16Count)
      let delta = text.insert(
        scalars, content: (utf8, utf16Count), at: start, firstDot: firstDot)
      return (delta, change)
    }
    editText(
      field: field, of: key, dotCount: { _ in scalarCount }, undo: .deleteInserted, edit: insert)
  }

  /// Inserts scalars right after the item `item` of a text field, deleted or not (at the
  /// start for `nil`), and returns the first inserted item's id; `nil`, changing nothing,
  /// if the text does not hold `item`.
  @discardableResult
  mutating func insertScalars(
    _ scalars: [Unicode.Scalar], after item: Dot?, in field: String, of key: EntityKey
  ) -> Dot? {
    let scalarCount = scalars.count
    let utf16Count = scalars.reduce(0) { $0 + UTF16.width($1) }
    func insert(into text: inout RGA, firstDot: Dot) -> (RGADelta, TextChange) {
      guard let (delta, start) = text.insert(scalars, after: item, firstDot: firstDot) else {
        return (RGADelta(), TextChange(kind: .insert, scalarRange: 0..<0, utf16Range: 0..<0))
      }
      let utf16Start = Self.utf16Offset(ofScalarOffset: start, in: text)
      let change = TextChange(
        kind: .insert, scalarRange: start..<start + scalarCount,
        utf16Range: utf16Start..<utf16Start + utf16Count)
      return (delta, change)
    }
    return editText(
      field: field, of: key,
      dotCount: { text in item.map(text.contains) ?? true ? scalarCount : 0 },
      undo: .deleteInserted,
      edit: insert)
  }

  /// Deletes the scalars in `range` (clamped to the text) from a text field.
  ///
  /// - Complexity: O(log n + k) for k deleted scalars in a text of n scalars.
  public mutating func deleteText(_ range: Range<Int>, in field: String, of key: EntityKey) {
    func clamped(_ text: RGA) -> Range<Int> {
      let lower = Swift.max(0, Swift.min(range.lowerBound, text.count))
      return lower..<Swift.max(lower, Swift.min(range.upperBound, text.count))
    }
    func delete(from text: inout RGA, firstDot: Dot) -> (RGADelta, TextChange) {
      let deleted = clamped(text)
      let utf16Range =
        Self.utf16Offset(
          ofScalarOffset: deleted.lowerBound, in: text)..<Self.utf16Offset(
          ofScalarOffset: deleted.upperBound, in: text)
      let change = TextChange(kind: .delete, scalarRange: deleted, utf16Range: utf16Range)
      return (text.delete(deleted, firstDot: firstDot), change)
    }
    editText(
      field: field, of: key, dotCount: { clamped($0).count },
      undo: .restoreDeleted,
      edit: delete)
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

  /// The UTF-16 offset of a scalar offset, for the edit's ``TextChange``. A text whose
  /// scalars all take one UTF-16 unit (no scalar above U+FFFF: the two counts are equal)
  /// has equal offsets, found without a search.
  private static func utf16Offset(ofScalarOffset offset: Int, in text: RGA) -> Int {
    text.utf16Count == text.count ? offset : text.utf16Offset(ofScalarOffset: offset)
  }

  /// How undo takes back a local text edit.
  private enum TextInverse {
    /// Delete the items the edit inserted.
    case deleteInserted
    /// Insert again the scalars of the items the edit deleted.
    case restoreDeleted
  }

  /// Runs a local edit on a text field's RGA with fresh dots and records it.
  ///
  /// `dotCount` tells, from the text before the edit (empty if the field does not exist
  /// yet), how many dots the edit takes; none means there is nothing to do, and the
  /// document is left as it was. A field of another kind is left alone too. It reads the
  /// text in place (`inout`, never changing it): the text lives in a class, and handing
  /// it over by value would copy the RGA's header on every keystroke.
  ///
  /// The entity and the field are each looked up once, and the RGA is moved out of the
  /// document while it is edited, so its storage is uniquely referenced and edited in
  /// place rather than copied. `undo` tells how an ``UndoHistory`` that records the edit
  /// takes it back: by deleting the items it inserted (typing that continues the previous
  /// insert joins its action) or by restoring the items its delta deletes.
  ///
  /// - Returns: the edit's first dot, or `nil` if nothing was edited.
  @discardableResult
  private mutating func editText(
    field: String, of key: EntityKey, dotCount: (inout RGA) -> Int,
    undo: TextInverse,
    edit: (inout RGA, Dot) -> (RGADelta, TextChange)
  ) -> Dot? {
    let entity: Int
    let slot: Int
    if let found = document.entities.index(forKey: key),
      let fieldSlot = document.entities.values[found].fields.index(forKey: field)
    {
      entity = found
      slot = fieldSlot
    } else {
      // A new entity or field: created only by an edit that takes dots.
      var empty = RGA()
      guard dotCount(&empty) > 0 else { return nil }
      let found = document.entities.insertIfAbsent(key)
      document.entities.values[found].fields.set(
        .text(holding: RGA()), for: field, sharingNames: &document.fieldNames)
      guard let fieldSlot = document.entities.values[found].fields.index(forKey: field)
      else { return nil }
      entity = found
      slot = fieldSlot
    }
    guard let text = document.entities.values[entity].takeText(at: slot) else {
      return nil  // the field holds another kind; a text edit cannot apply to it
    }
    let count = dotCount(&text.text)
    guard count > 0 else {
      document.entities.values[entity].fields.values[slot] = .text(text)
      return nil
    }
    let dotCount = UInt64(count)
    let first = nextDots(dotCount)
    let last = Dot(replica: first.replica, counter: first.counter + (dotCount - 1))
    let (textDelta, textChange) = edit(&text.text, first)
    document.entities.values[entity].fields.values[slot] = .text(text)
    let visibility = document.entities.values[entity].noteLocalEvent(last)
    document.noteEvent(ofEntityAt: entity, last)
    let counters = first.counter...(first.counter + dotCount - 1)
    document.context.insert(replica: first.replica, counters: counters)
    addToDelta(textDelta, counters: counters, last: last, field: field, of: key)
    recorder.noteSingleTextEdit(
      of: key, field: field, wasVisible: visibility.wasVisible,
      isVisible: visibility.isVisible, change: textChange)
    if undoLog != nil {
      noteRevival(of: key, wasVisible: visibility.wasVisible, by: last)
      switch undo {
      case .deleteInserted:
        recordUndo(.deleteItems(key, field: field, span: RGA.ItemSpan(first: first, count: count)))
      case .restoreDeleted:
        recordUndo(.restoreDeleted(key, field: field, deletes: textDelta.deletes))
      }
    }
    return first
  }

  /// Adds a local text edit's runs to the transaction's delta: the delta's one
  /// ``DocumentDelta/TextEdit`` while the transaction edits one text field and nothing
  /// else. Runs join the field's earlier runs unsorted; ``finishDelta()`` brings them into
  /// normal form once, so a transaction of many edits does not re-sort its runs after
  /// each one.
  private mutating func addToDelta(
    _ textDelta: RGADelta, counters: ClosedRange<UInt64>, last: Dot, field: String,
    of key: EntityKey
  ) {
    if delta.joinLocalTextEdit(
      textDelta, replica: last.replica, counters: counters, field: field, of: key)
    {
      textRunsPending = true
    }
  }

  /// Brings the text runs that ``addToDelta(_:counters:last:field:of:)`` appended into
  /// normal form. The delta is moved out, not copied: the transaction is done with it.
  mutating func finishDelta() -> DocumentDelta {
    guard textRunsPending else { return takeDelta() }
    textRunsPending = false
    delta.normalizeTextRuns()
    return takeDelta()
  }

  private mutating func takeDelta() -> DocumentDelta {
    var taken = DocumentDelta()
    swap(&taken, &delta)
    return taken
  }

  // MARK: Plumbing

  /// Records the event `dot` of `key`, which advances the entity's version and makes
  /// `edit` (if any): the same as committing the delta of that one event, without
  /// building it.
  mutating func commit(event dot: Dot, on key: EntityKey, edit: FieldEdit?) {
    document.apply(event: dot, on: key, field: edit, recording: &recorder)
    delta.merge(event: dot, on: key, field: edit)
  }

  /// Records the event `dot` of `key` that changes `field` by `change`.
  mutating func commit(event dot: Dot, on key: EntityKey, field: String, _ change: FieldDelta) {
    commit(event: dot, on: key, edit: FieldEdit(name: field, change: change))
  }

  mutating func commit(_ change: DocumentDelta) {
    document.apply(change, recording: &recorder)
    delta.merge(change)
  }

  /// A fresh dot of this transaction's replica.
  mutating func nextDot() -> Dot {
    nextDots(1)
  }

  /// The first of `count` consecutive fresh dots, switching to a fresh replica id if the
  /// current one cannot supply them.
  mutating func nextDots(_ count: UInt64) -> Dot {
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
