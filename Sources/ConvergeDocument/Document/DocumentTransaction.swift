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
  ///
  /// Read and written through here, an open run of text edits (`TextRun`) is
  /// closed first, so every reader sees each edit whole, its event noted in the context,
  /// the event index and the entity's presence.
  public internal(set) var document: Document {
    // Yielded, not returned: a getter's copy retained and released every stored
    // reference of the document at each internal read.
    @inline(__always) mutating _read {
      closeTextRun()
      yield runningDocument
    }
    @inline(__always) _modify {
      closeTextRun()
      yield &runningDocument
    }
  }
  /// The document with an open run's later edits made in its text but their events not
  /// noted yet (see ``TextRun``): only the run's own edits and its closing use it, and
  /// `Replica.transact` to swap it in and out while no run is open.
  var runningDocument: Document
  /// The replica making the edits. In the (practically unreachable) case that its
  /// counter space runs out, the transaction continues under a fresh random id: a new id
  /// never reuses a dot.
  public internal(set) var replica: ReplicaID
  var clock: HybridLogicalClock
  var delta = DocumentDelta()
  /// Whether some text field of `delta` holds runs that are not in normal form yet.
  private var textRunsPending = false
  var recorder = ChangeRecorder()
  /// The text field the latest edit typed into, while nothing else has happened since:
  /// its later edits make no delta or change record an edit (see ``TextRun``).
  private var textRun = TextRun()
  /// The inverses of this transaction's edits, in the order made, when an
  /// ``UndoHistory`` records it; `nil` otherwise (then recording costs one check).
  var undoLog: UndoLog?

  @inline(__always)
  init(document: Document, replica: ReplicaID, clock: HybridLogicalClock) {
    self.runningDocument = document
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
    // Two calls in tail position: a call that returned to fall back kept every argument
    // for the fallback, 33 instructions of each insert of a run.
    if textRun.text != nil {
      insertContinuingHeldRun(string, at: position, in: field, of: key)
    } else {
      insertTextInGeneral(string, at: position, in: field, of: key)
    }
  }

  /// ``insertText(_:at:in:of:)`` but for ``insertContinuingHeldRun(_:at:in:of:)``: its own
  /// function, so that typing on does not set up this one's frame.
  @inline(never)
  private mutating func insertTextInGeneral(
    _ string: String, at position: Int, in field: String, of key: EntityKey
  ) {
    // The string's UTF-8 as it is, walked once for the scalars and their UTF-16 length
    // (counting either view on its own walks the string again, and the UTF-16 count of
    // a non-ASCII string allocates an index cache on it) and copied by the text. Read in
    // place, not through a copy's `withUTF8`: the copy retained and released the string
    // every keystroke.
    guard
      string.utf8.withContiguousStorageIfAvailable({ utf8 in
        insertText(utf8: utf8, at: position, in: field, of: key)
      }) != nil
    else {
      // Not contiguous UTF-8 (a bridged string): inserted as a native copy, which is.
      // The body below is inlined once, here: a second site stopped `editText` and its
      // closures being inlined into either, +7% an edit of a run.
      var native = string
      native.makeContiguousUTF8()
      insertTextInGeneral(native, at: position, in: field, of: key)
      return
    }
  }

  /// ``insertText(_:at:in:of:)`` of valid UTF-8 (a string's own storage). While a run is
  /// open (see `TextRun`) the bytes are only counted: typing on, its runs are read from
  /// the text when the run closes; an edit the run does not take (another field) decodes
  /// them then, a second walk. Otherwise they are decoded, and counted, in one walk (a
  /// note's whole body, walked twice, was 9% of `bench --library 1000`'s raw build).
  /// Which field the run is of, `editText` asks once.
  @inline(__always)
  private mutating func insertText(
    utf8: UnsafeBufferPointer<UInt8>, at position: Int, in field: String, of key: EntityKey
  ) {
    // `nil` while a run is open: the bytes are not decoded then.
    let scalars: [Unicode.Scalar]?
    let scalarCount: Int
    let utf16Count: Int
    if textRun.entity >= 0 {
      scalars = nil
      (scalarCount, utf16Count) = UTF8Scalars.counts(ofValid: utf8)
    } else {
      let decoded = UTF8Scalars.scalarsAndUTF16Count(ofValid: utf8)
      scalars = decoded.scalars
      scalarCount = decoded.scalars.count
      utf16Count = decoded.utf16Count
    }
    guard scalarCount > 0 else { return }
    @inline(__always)
    func insert(into text: inout RGA, firstDot: Dot, keepsRuns: Bool) -> (RGADelta?, TextChange) {
      let start = Swift.max(0, Swift.min(position, text.count))
      let change = Self.insertChange(at: start, scalars: scalarCount, utf16: utf16Count, in: &text)
      guard keepsRuns else {
        text.insert(
          utf8: utf8, length: scalarCount, utf16: utf16Count, at: start, firstDot: firstDot)
        return (nil, change)
      }
      // Counted only, if the run did not take the edit after all (another field, or
      // its counters ran out).
      // Two calls, not one through `scalars ?? decode(…)`: the autoclosure cost a
      // keystroke's transaction 0.29% more instructions (`bench --only deltas`).
      let delta: RGADelta
      if let scalars {
        delta = text.insert(scalars, content: (utf8, utf16Count), at: start, firstDot: firstDot)
      } else {
        delta = text.insert(
          UTF8Scalars.decode(valid: utf8).scalars, content: (utf8, utf16Count), at: start,
          firstDot: firstDot)
      }
      return (delta, change)
    }
    editText(
      field: field, of: key, dotCount: { _ in scalarCount }, undo: .deleteInserted,
      edit: insert)
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
    // Its runs are built even within a run, where they are dropped: the run reads them
    // from the text (see `TextRun`).
    func insert(into text: inout RGA, firstDot: Dot, keepsRuns: Bool) -> (RGADelta?, TextChange) {
      guard let (delta, start) = text.insert(scalars, after: item, firstDot: firstDot) else {
        return (nil, TextChange(kind: .insert, scalarRange: 0..<0, utf16Range: 0..<0))
      }
      // The text before `start` is as it was: its UTF-16 offset is the same.
      let change = Self.insertChange(at: start, scalars: scalarCount, utf16: utf16Count, in: &text)
      return (delta, change)
    }
    return editText(
      field: field, of: key,
      dotCount: { text in item.map(text.contains) ?? true ? scalarCount : 0 },
      undo: .deleteInserted, edit: insert)
  }

  /// Deletes the scalars in `range` (clamped to the text) from a text field.
  ///
  /// - Complexity: O(log n + k) for k deleted scalars in a text of n scalars.
  public mutating func deleteText(_ range: Range<Int>, in field: String, of key: EntityKey) {
    if textRun.text != nil {
      deleteContinuingHeldRun(range, in: field, of: key)
    } else {
      deleteTextInGeneral(range, in: field, of: key)
    }
  }

  /// ``deleteText(_:in:of:)`` but for ``deleteContinuingHeldRun(_:in:of:)``, as
  /// ``insertTextInGeneral(_:at:in:of:)``.
  @inline(never)
  private mutating func deleteTextInGeneral(
    _ range: Range<Int>, in field: String, of key: EntityKey
  ) {
    func clamped(_ text: inout RGA) -> Range<Int> { Self.clamped(range, to: text.count) }
    // An undo history takes a delete back from its runs, kept even within a run.
    let recordsUndo = undoLog != nil
    @inline(__always)
    func delete(from text: inout RGA, firstDot: Dot, keepsRuns: Bool) -> (RGADelta?, TextChange) {
      let deleted = clamped(&text)
      let change = Self.deleteChange(deleted, in: &text)
      guard keepsRuns || recordsUndo else {
        // Within a run: its dots were found fresh when it took the text.
        text.deleteLocally(deleted, firstDot: firstDot, dotsKnownFresh: true) { _ in }
        return (nil, change)
      }
      return (text.delete(deleted, firstDot: firstDot), change)
    }
    editText(
      field: field, of: key, dotCount: { clamped(&$0).count }, undo: .restoreDeleted,
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
  /// has equal offsets, found without a search. `inout`, only read: by value, the text's
  /// header was copied to read its two counts.
  private static func utf16Offset(ofScalarOffset offset: Int, in text: inout RGA) -> Int {
    text.utf16Count == text.count ? offset : text.utf16Offset(ofScalarOffset: offset)
  }

  /// The change of `scalars` scalars (`utf16` UTF-16 units) inserted at `start` of
  /// `text` (before the insert, or after: the text before `start` is the same).
  @inline(__always)
  private static func insertChange(at start: Int, scalars: Int, utf16: Int, in text: inout RGA)
    -> TextChange
  {
    let utf16Start = utf16Offset(ofScalarOffset: start, in: &text)
    return TextChange(
      kind: .insert, scalarRange: start..<start + scalars,
      utf16Range: utf16Start..<utf16Start + utf16)
  }

  /// The change of deleting `range` (clamped already) from `text`, in its coordinates.
  @inline(__always)
  private static func deleteChange(_ range: Range<Int>, in text: inout RGA) -> TextChange {
    let lower = utf16Offset(ofScalarOffset: range.lowerBound, in: &text)
    let upper = utf16Offset(ofScalarOffset: range.upperBound, in: &text)
    return TextChange(kind: .delete, scalarRange: range, utf16Range: lower..<upper)
  }

  /// `range` clamped to `0...count`.
  @inline(__always)
  private static func clamped(_ range: Range<Int>, to count: Int) -> Range<Int> {
    let lower = Swift.max(0, Swift.min(range.lowerBound, count))
    return lower..<Swift.max(lower, Swift.min(range.upperBound, count))
  }

  /// An insert into the text an open run holds already (its third edit on: typing on),
  /// when no undo history records the transaction: what the run branch of
  /// ``editText(field:of:dotCount:undo:edit:)`` does for it, in a function of its own.
  /// There, inlined into the general path, the frame and the spills of all its cases were
  /// about 60 instructions of every such insert. Anything else (another field, undo
  /// recorded, nothing to insert, dots that do not follow on, a string not stored as
  /// UTF-8) goes the general way, everything as it was.
  @inline(never)
  private mutating func insertContinuingHeldRun(
    _ string: String, at position: Int, in field: String, of key: EntityKey
  ) {
    guard undoLog == nil, textRun.holdsNames(field, of: key), let text = heldRunText(),
      let edit = string.utf8.withContiguousStorageIfAvailable({
        utf8 -> (first: Dot, count: Int, change: TextChange)? in
        let (scalarCount, utf16Count) = UTF8Scalars.counts(ofValid: utf8)
        guard scalarCount > 0, let first = textRun.nextDots(UInt64(scalarCount), of: replica)
        else { return nil }
        return text._withUnsafeGuaranteedRef { storage in
          let start = Swift.max(0, Swift.min(position, storage.decoded.count))
          let change = Self.insertChange(
            at: start, scalars: scalarCount, utf16: utf16Count, in: &storage.decoded)
          storage.decoded.insert(
            utf8: utf8, length: scalarCount, utf16: utf16Count, at: start, firstDot: first)
          return (first, scalarCount, change)
        }
      }) ?? nil
    else {
      insertTextInGeneral(string, at: position, in: field, of: key)
      return
    }
    textRun.add(
      edit.first.counter...edit.first.counter + UInt64(edit.count - 1), change: edit.change)
  }

  /// ``insertContinuingHeldRun(_:at:in:of:)`` for a delete of `range`.
  @inline(never)
  private mutating func deleteContinuingHeldRun(
    _ range: Range<Int>, in field: String, of key: EntityKey
  ) {
    guard undoLog == nil, textRun.holdsNames(field, of: key), let text = heldRunText() else {
      deleteTextInGeneral(range, in: field, of: key)
      return
    }
    let deleted = text._withUnsafeGuaranteedRef { Self.clamped(range, to: $0.decoded.count) }
    guard !deleted.isEmpty, let first = textRun.nextDots(UInt64(deleted.count), of: replica)
    else {
      deleteTextInGeneral(range, in: field, of: key)
      return
    }
    let change = text._withUnsafeGuaranteedRef { storage in
      let change = Self.deleteChange(deleted, in: &storage.decoded)
      storage.decoded.deleteLocally(deleted, firstDot: first, dotsKnownFresh: true) { _ in }
      return change
    }
    textRun.add(first.counter...first.counter + UInt64(deleted.count - 1), change: change)
  }

  /// The text the open run holds, unretained: `textRun.text` keeps it alive until the run
  /// puts it back (a strong reference was a retain and a release an edit).
  @inline(__always)
  private func heldRunText() -> Unmanaged<TextStorage>? {
    guard let held = textRun.text else { return nil }
    return .passUnretained(held)
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
  /// document while it is edited, so its storage is uniquely referenced (and decoded:
  /// the edit reaches `TextStorage.decoded` directly) and edited in place rather than
  /// copied. `undo` tells how an ``UndoHistory`` that records the edit
  /// takes it back: by deleting the items it inserted (typing that continues the previous
  /// insert joins its action) or by restoring the items its delta deletes.
  ///
  /// The one path of every local text edit (an insert or a delete into the text a run
  /// holds already, with no undo recorded, is the same step specialized:
  /// ``insertContinuingHeldRun(_:at:in:of:)``). An edit of the field of the open
  /// ``TextRun`` whose dots follow on continues it: the field is found where the run
  /// keeps it, `edit` is told (`keepsRuns` false) that its runs are not needed, and the
  /// edit makes no delta or change record and notes no event of its own:
  /// ``closeTextRun()`` does, once for the run. Any other edit is recorded whole, its
  /// runs to the delta and its change to the recorder, and opens a run of its field
  /// after closing any other. `edit` returns its runs, `nil` when it made none (an
  /// empty `RGADelta` releases two arrays), and its change.
  ///
  /// Inlined into its three callers, so that their `edit` and `dotCount` are inlined
  /// too: called, the closures' contexts and calls were about 5% of every edit of a run.
  ///
  /// - Returns: the edit's first dot, or `nil` if nothing was edited.
  @discardableResult
  @inline(__always)
  private mutating func editText(
    field: String, of key: EntityKey, dotCount: (inout RGA) -> Int,
    undo: TextInverse,
    edit: (inout RGA, Dot, _ keepsRuns: Bool) -> (RGADelta?, TextChange)
  ) -> Dot? {
    if textRun.holdsNames(field, of: key) || textRunHolds(field, of: key) {
      let entity = Int(textRun.entity)
      let slot = Int(textRun.slot)
      // The run holds the text from its second edit until it closes: taken out of the
      // document once, not at every edit, and handed back below if this edit does not
      // continue the run after all.
      let takesText = textRun.text == nil
      if takesText {
        guard let taken = runningDocument.entities.values[entity].takeText(at: slot) else {
          return nil
        }
        textRun.text = taken
      }
      // Edited through an unretained reference while `textRun.text` holds it (nothing
      // below replaces that before the edit is done): a strong one, or an unowned one,
      // was a retain and a release an edit.
      let text: Unmanaged<TextStorage>
      if let held = textRun.text { text = .passUnretained(held) } else { return nil }
      let count = text._withUnsafeGuaranteedRef { dotCount(&$0.decoded) }
      // The run's edits do not look their dots up: taking the text, it asks once
      // whether the text holds any id or delete dot of the run's replica from its next
      // dot on (a received delta's text may hold ones its context lacks), and only the
      // run's own edits change the text until it closes.
      if count > 0, let first = textRun.nextDots(UInt64(count), of: replica),
        !takesText
          || text._withUnsafeGuaranteedRef({
            $0.text.holdsNoEvent(of: first.replica, from: first.counter)
          })
      {
        let last = Dot(replica: first.replica, counter: first.counter + UInt64(count - 1))
        let (textDelta, textChange) = text._withUnsafeGuaranteedRef {
          edit(&$0.decoded, first, false)
        }
        if takesText { textRun.noteNames(of: runningDocument) }
        textRun.add(first.counter...last.counter, change: textChange)
        if undoLog != nil {
          // The run's first edit made the entity visible, and nothing happened since.
          recordTextUndo(
            undo, of: field, of: key, first: first, last: last, count: count,
            deletes: textDelta?.deletes ?? [], wasVisible: true)
        }
        return first
      }
      if takesText, let held = textRun.text.take() {
        runningDocument.entities.values[entity].fields.values[slot] = .text(held)
      }
      guard count > 0 else { return nil }
      // Dots that do not follow on (the counters ran out) or may not be fresh: an edit of
      // its own below, which looks its ids up.
    }
    closeTextRun()  // its events, runs and changes before this edit's
    let entity: Int
    let slot: Int
    if let found = runningDocument.entities.index(forKey: key),
      let fieldSlot = runningDocument.entities.values[found].fields.index(forKey: field)
    {
      entity = found
      slot = fieldSlot
    } else {
      // A new entity or field: created only by an edit that takes dots.
      var empty = RGA()
      guard dotCount(&empty) > 0 else { return nil }
      let found = runningDocument.entities.insertIfAbsent(key)
      runningDocument.entities.values[found].fields.set(
        .text(holding: RGA()), for: field, sharingNames: &runningDocument.fieldNames)
      guard let fieldSlot = runningDocument.entities.values[found].fields.index(forKey: field)
      else { return nil }
      entity = found
      slot = fieldSlot
    }
    guard let text = runningDocument.entities.values[entity].takeText(at: slot) else {
      return nil  // the field holds another kind; a text edit cannot apply to it
    }
    let count = dotCount(&text.decoded)
    guard count > 0 else {
      runningDocument.entities.values[entity].fields.values[slot] = .text(text)
      return nil
    }
    let dotCount = UInt64(count)
    let first = firstOfFreshDots(dotCount)
    let last = Dot(replica: first.replica, counter: first.counter + (dotCount - 1))
    let (runs, textChange) = edit(&text.decoded, first, true)
    var textDelta = runs ?? RGADelta()
    runningDocument.entities.values[entity].fields.values[slot] = .text(text)
    let visibility = runningDocument.entities.values[entity].noteLocalEvent(last)
    runningDocument.noteEvent(ofEntityAt: entity, last)
    let counters = first.counter...last.counter
    runningDocument.context.insert(replica: first.replica, counters: counters)
    if undoLog != nil {
      // A delete's runs as the edit made them: undo restores a run's items where they
      // lie, piece by piece.
      recordTextUndo(
        undo, of: field, of: key, first: first, last: last, count: count,
        deletes: textDelta.deletes, wasVisible: visibility.wasVisible)
    }
    // The delta's runs in normal form, as ``addToDelta(_:counters:last:field:of:)`` takes
    // them: a delete's runs over two pieces whose ids continue each other (an item
    // deleted before lies between them) join. An edit makes one insert run at most, and
    // one delete run is in normal form: checked here rather than by `normalize()`, whose
    // call cost every lone edit's transaction 11 instructions (+0.3%, and +0.4% inlined).
    if textDelta.deletes.count > 1 { textDelta.normalizeDeletes() }
    addToDelta(textDelta, counters: counters, last: last, field: field, of: key)
    let noted = recorder.noteSingleTextEdit(
      of: key, field: field, wasVisible: visibility.wasVisible,
      isVisible: visibility.isVisible, change: textChange)
    textRun.open(entity: entity, slot: slot, after: last, change: noted)
    return first
  }

  /// Records how an ``UndoHistory`` takes back a text edit whose dots are `first`
  /// through `last` (`count` of them): by deleting the items it inserted (typing that
  /// continues the previous insert joins its action) or by restoring `deletes`.
  private mutating func recordTextUndo(
    _ undo: TextInverse, of field: String, of key: EntityKey, first: Dot, last: Dot,
    count: Int, deletes: [RGADelta.Delete], wasVisible: Bool
  ) {
    noteRevival(of: key, wasVisible: wasVisible, by: last)
    switch undo {
    case .deleteInserted:
      recordUndo(.deleteItems(key, field: field, span: RGA.ItemSpan(first: first, count: count)))
    case .restoreDeleted:
      recordUndo(.restoreDeleted(key, field: field, deletes: deletes))
    }
  }

  /// Adds a local text edit's runs to the transaction's delta: the delta's one
  /// ``DocumentDelta/TextEdit`` while the transaction edits one text field and nothing
  /// else. Runs that follow the field's earlier runs in normal order (typing on) keep
  /// them in normal form; others join them unsorted, and ``finishDelta()`` brings them
  /// into normal form once, so a transaction of many edits does not re-sort its runs
  /// after each one.
  private mutating func addToDelta(
    _ textDelta: consuming RGADelta, counters: ClosedRange<UInt64>, last: Dot, field: String,
    of key: EntityKey
  ) {
    if delta.joinLocalTextEdit(
      textDelta, replica: last.replica, counters: counters, field: field, of: key)
    {
      textRunsPending = true
    }
  }

  /// The text edits of one field that follow each other in a transaction, nothing else
  /// between them. The first is an edit like any other: its runs join the delta and its
  /// change the recorder at once, so a transaction of one keystroke pays for nothing
  /// more. The ones after it, whose dots follow on (one range of one replica's
  /// counters), change the text and note their changes here, nothing else;
  /// ``closeTextRun()`` notes their events once (the counters in the context, the last
  /// in the entity's presence and the event index: the same as noting each in turn) and
  /// reads their runs from the text (``RGA/delta(of:counters:)``): the text's items and
  /// deletes of those counters, the same runs in normal form as their own deltas joined
  /// and normalized. Until then the document's events lack theirs and the run holds the
  /// field's text (the field a placeholder), so everything but those edits reaches the
  /// document through ``DocumentTransaction/document``, which closes the run first.
  /// Open while `entity` is not negative; the run's state stays in place, never
  /// optional, so that a keystroke's transaction sets and checks a few words.
  private struct TextRun {
    /// Where the field's entity and its slot were at the first edit; the run is checked
    /// against them (``DocumentTransaction/textRunHolds(_:of:)``), not trusting them.
    var entity: Int32 = -1
    var slot: Int32 = 0
    var replica = ReplicaID(rawValue: 0)
    /// The counter after the latest edit's.
    var next: UInt64 = 0
    /// The first counter of the edits after the first; 0 while there are none (no dot
    /// has the counter 0).
    var laterFrom: UInt64 = 0
    /// The changes of the run's edits, the first included, in the order made, each joined
    /// with the one before when it continues it (``TextChange/joined(with:)``, as the
    /// recorder joins them, so the same edits give the same changes in a run or not): all
    /// but the latest, `nil` until there is one, so that a keystroke's transaction
    /// releases no array and typing on (joined into the latest) touches none.
    var changes: [TextChange]?
    /// The latest of those changes.
    var lastChange = TextChange(kind: .insert, scalarRange: 0..<0, utf16Range: 0..<0)
    /// The field's text, taken out of the document by the second edit (the field holds
    /// a placeholder meanwhile) and put back when the run closes; `nil` before.
    var text: TextStorage?
    /// The raw bits of the entity's type and id and of the field's name as the document
    /// holds them, noted when the run takes the text and valid while it holds it (see
    /// ``holdsNames(_:of:)``). Bits, not strings: owning strings made every transaction
    /// retain and release them (a lone keystroke's +0.87%).
    var typeBits = StringBits()
    var idBits = StringBits()
    var fieldBits = StringBits()

    /// Opens the run with an edit of the field at `slot` of the entity at `entity`, whose
    /// last dot is `last`. Positions are kept in 32 bits: one cut short is found
    /// holding another entity or field, and the run is not continued.
    /// `change` is the field's latest change as the recorder holds it: the edit's own,
    /// or an earlier one it joined.
    mutating func open(entity: Int, slot: Int, after last: Dot, change: TextChange) {
      self.entity = Int32(truncatingIfNeeded: entity)
      self.slot = Int32(truncatingIfNeeded: slot)
      replica = last.replica
      next = last.counter &+ 1
      lastChange = change
    }

    /// The first of `count` dots of `current` (the transaction's replica) that follow
    /// on, or `nil` if they do not (another replica, or its counters ran out). Not
    /// looked up in the context, which lacks the run's later events until it closes:
    /// the run's first edit took the context's next dot, and nothing else took one since.
    func nextDots(_ count: UInt64, of current: ReplicaID) -> Dot? {
      guard current == replica, next != 0, count - 1 <= UInt64.max - next else { return nil }
      return Dot(replica: replica, counter: next)
    }

    /// Notes the bits of the names of the run's entity and field as `document` holds
    /// them: read from its entity table and the entity's field names, so that the
    /// strings they point to live as long as those are unchanged (while the run is open:
    /// everything else reaches the document through ``DocumentTransaction/document``,
    /// which closes the run).
    mutating func noteNames(of document: Document) {
      let held = document.entities.key(at: Int(entity))
      typeBits = StringBits(held.type)
      idBits = StringBits(held.id)
      fieldBits = StringBits(document.entities.values[Int(entity)].fields.keys[Int(slot)])
    }

    /// Whether the run holds the text of `field` of `key`, known from the strings' bits
    /// alone: equal to the bits of the document's own strings, which are alive while the
    /// run holds the text, they are those strings. `false` (not known) for equal strings
    /// stored elsewhere, which ``DocumentTransaction/textRunHolds(_:of:)`` compares in the
    /// document's tables.
    @inline(__always)
    func holdsNames(_ field: String, of key: EntityKey) -> Bool {
      StringBits.areStrings && text != nil && fieldBits == StringBits(field)
        && idBits == StringBits(key.id) && typeBits == StringBits(key.type)
    }

    /// Adds an edit after the first, of the counters `counters`. Inlined into every
    /// edit of a run.
    @inline(__always)
    mutating func add(_ counters: ClosedRange<UInt64>, change: TextChange) {
      next = counters.upperBound &+ 1
      if laterFrom == 0 { laterFrom = counters.lowerBound }
      if let joined = lastChange.joined(with: change) {
        lastChange = joined
      } else {
        addLastChange()
        lastChange = change
      }
    }

    /// Moves `lastChange` to `changes`: an edit that does not continue it came.
    private mutating func addLastChange() {
      if changes == nil {
        changes = [lastChange]
      } else {
        changes?.append(lastChange)
      }
    }

    /// The changes of the run's edits, in order (see ``changes``): the first starts with
    /// the first edit's, which the recorder holds already; none are left.
    mutating func takeChanges() -> [TextChange] {
      addLastChange()
      return changes.take() ?? []
    }
  }

  /// A string's representation, two words, read without retaining the string: equal bits
  /// are the same string, as long as one of the two strings is alive (small strings
  /// hold their UTF-8 in their bits; others point to their storage).
  struct StringBits: Equatable {
    private var low: UInt64 = 0
    private var high: UInt64 = 0

    /// Whether a string is two words, as on 64-bit platforms; elsewhere no bits are
    /// read (all zero) and none are compared.
    static var areStrings: Bool {
      MemoryLayout<String>.size == MemoryLayout<(UInt64, UInt64)>.size
    }

    init() {}

    @inline(__always)
    init(_ string: String) {
      guard Self.areStrings else { return }
      (low, high) = unsafeBitCast(string, to: (UInt64, UInt64).self)
    }
  }

  /// Whether the open ``TextRun`` is of `field` of `key`: the entity and the slot where
  /// the run saw them still hold them. Inlined: called on its own, a method of the
  /// transaction got a copy of the whole transaction, a `memcpy` every keystroke.
  @inline(__always)
  private func textRunHolds(_ field: String, of key: EntityKey) -> Bool {
    let entity = Int(textRun.entity)
    guard entity >= 0, runningDocument.entities.holds(key, at: entity) else { return false }
    let names = runningDocument.entities.values[entity].fields.keys
    let slot = Int(textRun.slot)
    return slot >= 0 && slot < names.count && names[slot] == field
  }

  /// Closes the open ``TextRun``: the events of its edits after the first are noted in
  /// the document, their runs join the delta, read from the text, and their changes the
  /// recorder, as their own would have. Every read or write of ``document`` calls this:
  /// inlined, the check costs it a compare.
  @inline(__always)
  mutating func closeTextRun() {
    if textRun.laterFrom != 0 {
      closeTextRunOfSeveralEdits()
    } else {
      textRun.entity = -1
    }
  }

  private mutating func closeTextRunOfSeveralEdits() {
    let entity = Int(textRun.entity)
    let slot = Int(textRun.slot)
    textRun.entity = -1
    let from = textRun.laterFrom
    textRun.laterFrom = 0
    if let held = textRun.text {
      runningDocument.entities.values[entity].fields.values[slot] = .text(held)
      textRun.text = nil
    }
    let counters = from...(textRun.next &- 1)
    let last = Dot(replica: textRun.replica, counter: counters.upperBound)
    _ = runningDocument.entities.values[entity].noteLocalEvent(last)
    runningDocument.noteEvent(ofEntityAt: entity, last)
    runningDocument.context.insert(replica: last.replica, counters: counters)
    let key = runningDocument.entities.key(at: entity)
    let field = runningDocument.entities.values[entity].fields.keys[slot]
    var runs = RGADelta()
    if case .text(let storage) = runningDocument.entities.values[entity].fields.values[slot] {
      runs = storage.text.delta(of: textRun.replica, counters: counters)
    }
    addToDelta(runs, counters: counters, last: last, field: field, of: key)
    // The run's first edit noted the entity, so this only sets its visibility after the
    // latest edit: the entity's now, nothing else having happened since.
    let isVisible = runningDocument.entities.values[entity].isVisible
    recorder.noteChange(of: key, wasVisible: isVisible, isVisible: isVisible)
    recorder.noteText(field, of: key, fromLastChange: textRun.takeChanges())
  }

  /// Closes the open ``TextRun`` and brings the text runs that
  /// ``addToDelta(_:counters:last:field:of:)`` appended into normal form. The delta is
  /// moved out, not copied: the transaction is done with it. Called while the transaction
  /// still holds its document: the open run's runs are read from its text.
  mutating func finishDelta() -> DocumentDelta {
    closeTextRun()
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
    closeTextRun()
    runningDocument.apply(event: dot, on: key, field: edit, recording: &recorder)
    delta.merge(event: dot, on: key, field: edit)
  }

  /// Records the event `dot` of `key` that changes `field` by `change`.
  mutating func commit(event dot: Dot, on key: EntityKey, field: String, _ change: FieldDelta) {
    commit(event: dot, on: key, edit: FieldEdit(name: field, change: change))
  }

  mutating func commit(_ change: DocumentDelta) {
    closeTextRun()
    runningDocument.apply(change, recording: &recorder)
    delta.merge(change)
  }

  /// A fresh dot of this transaction's replica.
  mutating func nextDot() -> Dot {
    nextDots(1)
  }

  /// The first of `count` consecutive fresh dots, switching to a fresh replica id if the
  /// current one cannot supply them.
  mutating func nextDots(_ count: UInt64) -> Dot {
    closeTextRun()  // the context lacks the open run's events until then
    return firstOfFreshDots(count)
  }

  /// ``nextDots(_:)`` while no run is open: inlined into a text edit, which closed it.
  @inline(__always)
  private mutating func firstOfFreshDots(_ count: UInt64) -> Dot {
    while true {
      if let first = runningDocument.context.nextDot(for: replica),
        count == 0 || first.counter <= UInt64.max - (count - 1)
      {
        return first
      }
      replica = .random()
    }
  }
}
