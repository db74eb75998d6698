import Converge
import ConvergeStore

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// One replica's user: makes one app-like transaction per operation.
///
/// Each replica has its own workload with its own random stream, so its edits do not
/// depend on how many replicas there are or what the network does. A typist keeps a
/// cursor in one note and types runs of several characters there, as people do, moving
/// elsewhere now and then; the tasks user changes a task's fields through the typed
/// facade.
public struct Workload: Sendable {
  /// The app imitated.
  public let kind: WorkloadKind
  var random: SimulationRandom
  /// Entity ids this user knows of, refreshed from the document now and then, so that
  /// choosing a target does not list the document on every operation.
  private var knownNotes: [String] = []
  private var knownTasks: [String] = []
  private var operationsSinceRefresh = Int.max
  /// The note being typed in and the cursor, in Unicode scalars.
  private var typingNote: String?
  private var cursor = 0
  /// Undo or Redo presses that took back or made again a step.
  public private(set) var undoPresses = 0
  /// The cards the last operation created and deleted (boards workload), for the
  /// oracle's lost-card check (``Oracle/boardFailures(of:created:deleted:lostChecked:)``).
  public internal(set) var lastCardEvents = CardEvents()
  /// Whether a create now and then takes a well-known id that others create too (a daily
  /// journal), re-creating it after a delete. Off when devices forget during the run: an
  /// app must not create a key again once its delete may be stable (a replica that forgot
  /// it starts the new one with no fields; see the Merge Semantics article).
  public var reusesIDs = true
  /// The cards whose subtask-tree node a device deleted (boards workload; only an Undo
  /// of the move that created the node deletes one when ``reusesIDs`` is off). With
  /// ``reusesIDs`` off, tree edits leave these nodes alone: a move of one, or under one,
  /// would create its key again, and a replica that forgot the node would start it with
  /// no fields, its subtasks list waiting for ever for the slots it dropped. The
  /// simulation tells every device's workload at once, as an app never reusing a deleted
  /// key would know.
  public internal(set) var deletedNodes: Set<String> = []

  /// A workload of `kind` drawing from `random`.
  public init(kind: WorkloadKind, random: SimulationRandom) {
    self.kind = kind
    self.random = random
  }

  /// The words typists type, in runs.
  public static var vocabulary: [String] { words }

  static let words = [
    "the ", "milk ", "call ", "Mom ", "buy ", "eggs", ", ", ". ", "café ", "naïve ", "中文",
    "👩‍💻 ", "todo: ", "\n", "- [ ] ", "meeting ", "at ", "3pm ", "résumé ", "😀",
  ]
  static let tags = ["home", "work", "urgent", "later", "idea", "errand", "🙂"]
  static let columns = ["inbox", "next", "waiting", "done"]
  static let sharedNoteIDs = ["note-inbox", "note-journal"]
  static let sharedTaskIDs = ["task-today", "task-weekly-review"]
  static let noteCap = 24
  static let taskCap = 40

  /// Makes one transaction on `replica` and returns it (its delta may be empty).
  @discardableResult
  public mutating func perform(on replica: inout Replica) -> Commit {
    refreshIfStale(replica.document)
    return perform { replica.transact($0) }
  }

  /// Makes one transaction through `device`, as an app whose data lives in a
  /// ``DeviceReplica`` does, and returns it (its delta may be empty).
  @discardableResult
  public mutating func perform(on device: DeviceReplica) -> Commit {
    refreshIfStale(device.replica.document)
    return perform { device.transact($0) }
  }

  /// Presses Undo or Redo with probability `undoRate` (Undo two times in three), else
  /// makes one transaction, through `device` and its undo history. A press with nothing
  /// to take back makes an edit instead.
  @discardableResult
  public mutating func perform(on device: DeviceReplica, undoRate: Double) -> Commit {
    if random.chance(undoRate) {
      let undoing = random.chance(2.0 / 3)
      let before = kind == .boards ? Self.cardColumns(in: device.replica.document) : [:]
      let pressed = undoing ? device.undo() : device.redo()
      if let pressed {
        undoPresses += 1
        lastCardEvents = CardEvents()
        if kind == .boards {
          lastCardEvents.deleted = Self.deletedCards(
            before: before, after: Self.cardColumns(in: device.replica.document))
        }
        return pressed
      }
    }
    refreshIfStale(device.replica.document)
    return perform { device.transact($0) }
  }

  /// Chooses the next edit and makes it through `transact`. (The document is read
  /// before, not held across the transaction, which would copy it.)
  private mutating func perform(through transact: ((inout DocumentTransaction) -> Void) -> Commit)
    -> Commit
  {
    lastCardEvents = CardEvents()
    let notes: Bool
    switch kind {
    case .notes: notes = true
    case .tasks: notes = false
    case .mixed: notes = random.chance(0.5)
    case .boards: return transact { tx in self.boardEdit(&tx) }
    }
    return transact { tx in
      if notes { self.noteEdit(&tx) } else { self.taskEdit(&tx) }
    }
  }

  /// Seeds the origin replica with a few entities every fork starts from, plus a
  /// long-lived library of `library` more (notes, tasks or both, as the workload's app
  /// keeps them), created 500 to a transaction.
  public mutating func seedOrigin(_ replica: inout Replica, library: Int = 0) {
    seedOrigin(library: library) { replica.transact($0) }
  }

  /// Seeds the origin entities through `device`, as ``seedOrigin(_:library:)`` does (for
  /// a device that starts the shared document, such as `converge-relay simulate`'s
  /// first).
  public mutating func seedOrigin(_ device: DeviceReplica, library: Int = 0) {
    seedOrigin(library: library) { device.transact($0) }
  }

  private mutating func seedOrigin(
    library: Int, through transact: ((inout DocumentTransaction) -> Void) -> Commit
  ) {
    if kind == .boards {
      // A board of a few columns, three cards each; `library` does not apply.
      _ = transact { tx in
        for column in Self.boardColumns {
          for index in 0..<3 {
            tx.insert(
              .string(self.newID("card")), at: index, intoList: Self.cardsField,
              of: Self.columnKey(column))
          }
        }
      }
      return
    }
    _ = transact { tx in
      for _ in 0..<3 {
        if self.kind != .tasks { self.createNote(&tx) }
        if self.kind != .notes { self.createTask(&tx) }
      }
    }
    var remaining = library
    while remaining > 0 {
      let batch = Swift.min(remaining, 500)
      remaining -= batch
      _ = transact { tx in
        for index in 0..<batch {
          if self.kind == .tasks || (self.kind == .mixed && index % 2 == 1) {
            self.createTask(&tx)
          } else {
            self.createNote(&tx)
          }
        }
      }
    }
  }

  // MARK: Notes

  private mutating func noteEdit(_ tx: inout DocumentTransaction) {
    guard
      let (roll, id) = rollEdit(
        \.knownNotes, type: SimulatedNote.entityType, cap: Self.noteCap, lifecycle: 5..<8, &tx,
        create: { $0.createNote(&$1) }, delete: { $0.deleteNote(&$1) })
    else { return }
    switch roll {
    case 8..<18:
      let title = newTitle()
      tx.update(SimulatedNote.self, id: id) { $0.title = title }
    case 18..<28:
      retag(SimulatedNote.self, id: id, tags: \.tags, fallback: "home", &tx)
    case 28..<30:
      let pinned = random.chance(0.5)
      tx.update(SimulatedNote.self, id: id) { $0.pinned = pinned }
    case 30..<82:
      typeRun(&tx)
    default:
      deleteRun(&tx)
    }
  }

  private mutating func createNote(_ tx: inout DocumentTransaction) {
    var note = SimulatedNote()
    note.title = newTitle()
    if random.chance(0.5) { note.tags.insert(Self.tags.randomElement(using: &random) ?? "idea") }
    create(note, prefix: "note", sharedIDs: Self.sharedNoteIDs, known: \.knownNotes, &tx)
  }

  private mutating func deleteNote(_ tx: inout DocumentTransaction) {
    if let id = delete(SimulatedNote.self, known: \.knownNotes, &tx), typingNote == id {
      typingNote = nil
    }
  }

  /// Types a run of a few words at the cursor, moving the cursor (or note) sometimes.
  private mutating func typeRun(_ tx: inout DocumentTransaction) {
    let key = typingKey(&tx)
    guard let key else { return }
    var run = ""
    for _ in 0..<Int.random(in: 1...3, using: &random) {
      run += Self.words.randomElement(using: &random) ?? "a"
    }
    let length = tx.document.sequence(of: "body", in: key)?.count ?? 0
    cursor = Swift.min(cursor, length)
    tx.insertText(run, at: cursor, in: "body", of: key)
    cursor += run.unicodeScalars.count
  }

  /// Backspaces a few characters before the cursor, or deletes a selected range.
  private mutating func deleteRun(_ tx: inout DocumentTransaction) {
    guard let key = typingKey(&tx) else { return }
    let length = tx.document.sequence(of: "body", in: key)?.count ?? 0
    guard length > 0 else { return }
    cursor = Swift.min(cursor, length)
    if random.chance(0.7), cursor > 0 {
      let count = Swift.min(cursor, Int.random(in: 1...8, using: &random))
      tx.deleteText(cursor - count..<cursor, in: "body", of: key)
      cursor -= count
    } else {
      let start = Int.random(in: 0..<length, using: &random)
      let end = Swift.min(length, start + Int.random(in: 1...30, using: &random))
      tx.deleteText(start..<end, in: "body", of: key)
      cursor = start
    }
  }

  /// The note being typed in: the same as last time mostly, sometimes another one.
  private mutating func typingKey(_ tx: inout DocumentTransaction) -> EntityKey? {
    let moving = random.chance(0.1)
    if let typingNote, !moving,
      tx.document.contains(EntityKey(type: SimulatedNote.entityType, id: typingNote))
    {
      return EntityKey(type: SimulatedNote.entityType, id: typingNote)
    }
    guard
      let id = pick(\.knownNotes, in: tx.document, type: SimulatedNote.entityType)
    else {
      return nil
    }
    let key = EntityKey(type: SimulatedNote.entityType, id: id)
    typingNote = id
    let length = tx.document.sequence(of: "body", in: key)?.count ?? 0
    cursor = random.chance(0.5) ? length : Int.random(in: 0...length, using: &random)
    return key
  }

  // MARK: Tasks

  private mutating func taskEdit(_ tx: inout DocumentTransaction) {
    guard
      let (roll, id) = rollEdit(
        \.knownTasks, type: SimulatedTask.entityType, cap: Self.taskCap, lifecycle: 6..<10, &tx,
        create: { workload, tx in
          // Tasks stop growing at their cap even when the roll asks for a new one.
          if workload.knownTasks.count < Self.taskCap {
            workload.createTask(&tx)
          } else {
            workload.deleteTask(&tx)
          }
        }, delete: { $0.deleteTask(&$1) })
    else { return }
    switch roll {
    case 10..<25:
      let status = SimulatedTaskStatus.allCases.randomElement(using: &random) ?? .todo
      tx.update(SimulatedTask.self, id: id) { $0.status = status }
    case 25..<35:
      let priority = Int.random(in: 0...3, using: &random)
      tx.update(SimulatedTask.self, id: id) { $0.priority = priority }
    case 35..<45:
      let due =
        random.chance(0.2)
        ? nil
        : Date(
          timeIntervalSinceReferenceDate: Double(Int.random(in: 0..<400, using: &random)) * 86_400)
      tx.update(SimulatedTask.self, id: id) { $0.due = due }
    case 45..<53:
      let flagged = random.chance(0.5)
      tx.update(SimulatedTask.self, id: id) { $0.flagged = flagged }
    case 53..<68:
      retag(SimulatedTask.self, id: id, tags: \.tags, fallback: "work", &tx)
    case 68..<90:
      let position = SimulatedBoardPosition(
        column: Self.columns.randomElement(using: &random) ?? "inbox",
        x: Int.random(in: 0..<8, using: &random), y: Int.random(in: 0..<40, using: &random))
      tx.update(SimulatedTask.self, id: id) { $0.position = position }
    default:
      let title = newTitle()
      tx.update(SimulatedTask.self, id: id) { $0.title = title }
    }
  }

  private mutating func createTask(_ tx: inout DocumentTransaction) {
    var task = SimulatedTask()
    task.title = newTitle()
    task.priority = Int.random(in: 0...3, using: &random)
    create(task, prefix: "task", sharedIDs: Self.sharedTaskIDs, known: \.knownTasks, &tx)
  }

  private mutating func deleteTask(_ tx: inout DocumentTransaction) {
    delete(SimulatedTask.self, known: \.knownTasks, &tx)
  }

  // MARK: Creating and deleting

  /// Creates `model` under a new id or, now and then, a well-known one, such as a daily
  /// journal that several devices create concurrently (and re-create after a delete): one
  /// entity, one body.
  private mutating func create<Model: EntityModel>(
    _ model: Model, prefix: String, sharedIDs: [String],
    known: WritableKeyPath<Workload, [String]>, _ tx: inout DocumentTransaction
  ) {
    var id = newID(prefix)
    if random.chance(0.2), reusesIDs { id = sharedIDs.randomElement(using: &random) ?? id }
    tx.create(model, id: id)
    insertSorted(id, into: &self[keyPath: known])
  }

  /// Deletes a random entity of `known` and returns its id (nil when none is known).
  @discardableResult
  private mutating func delete<Model: EntityModel>(
    _ type: Model.Type, known: WritableKeyPath<Workload, [String]>,
    _ tx: inout DocumentTransaction
  ) -> String? {
    guard !self[keyPath: known].isEmpty else { return nil }
    let index = Int.random(in: self[keyPath: known].indices, using: &random)
    let id = self[keyPath: known].remove(at: index)
    tx.delete(type, id: id)
    return id
  }

  // MARK: Choosing

  private mutating func refreshIfStale(_ document: Document) {
    operationsSinceRefresh &+= 1
    guard operationsSinceRefresh >= 32 else { return }
    operationsSinceRefresh = 0
    knownNotes = document.keys(ofType: SimulatedNote.entityType).map(\.id)
    knownTasks = document.keys(ofType: SimulatedTask.entityType).map(\.id)
  }

  /// Adds a random tag to entity `id` or, two times in five, removes it.
  private mutating func retag<Model: EntityModel>(
    _ type: Model.Type, id: String, tags: WritableKeyPath<Model, Set<String>>, fallback: String,
    _ tx: inout DocumentTransaction
  ) {
    let tag = Self.tags.randomElement(using: &random) ?? fallback
    let adding = random.chance(0.6)
    tx.update(type, id: id) { model in
      if adding { model[keyPath: tags].insert(tag) } else { model[keyPath: tags].remove(tag) }
    }
  }

  /// Rolls 0..<100 for a change to the entities of `known`. A roll under `lifecycle`, or any
  /// roll while none is visible, creates an entity (deletes one at `cap`); a roll in it
  /// deletes one (its first two rolls, while more than three are known) or creates one.
  /// Both return nil; any other roll returns with a random visible entity to edit.
  private mutating func rollEdit(
    _ known: WritableKeyPath<Workload, [String]>, type: String, cap: Int, lifecycle: Range<Int>,
    _ tx: inout DocumentTransaction, create: (inout Workload, inout DocumentTransaction) -> Void,
    delete: (inout Workload, inout DocumentTransaction) -> Void
  ) -> (roll: Int, id: String)? {
    let roll = Int.random(in: 0..<100, using: &random)
    guard let id = pick(known, in: tx.document, type: type), roll >= lifecycle.lowerBound else {
      if self[keyPath: known].count < cap { create(&self, &tx) } else { delete(&self, &tx) }
      return nil
    }
    guard !lifecycle.contains(roll) else {
      if roll < lifecycle.lowerBound + 2, self[keyPath: known].count > 3 {
        delete(&self, &tx)
      } else {
        create(&self, &tx)
      }
      return nil
    }
    return (roll, id)
  }

  /// A random visible entity of `known`, forgetting ids deleted meanwhile.
  private mutating func pick(
    _ known: WritableKeyPath<Workload, [String]>, in document: Document, type: String
  ) -> String? {
    while !self[keyPath: known].isEmpty {
      let index = Int.random(in: self[keyPath: known].indices, using: &random)
      let id = self[keyPath: known][index]
      if document.contains(EntityKey(type: type, id: id)) { return id }
      self[keyPath: known].remove(at: index)
    }
    return nil
  }

  private func insertSorted(_ id: String, into ids: inout [String]) {
    let index = ids.firstIndex { !($0 < id) } ?? ids.count
    if index == ids.count || ids[index] != id { ids.insert(id, at: index) }
  }

  mutating func newID(_ prefix: String) -> String {
    prefix + "-" + String(random.next() >> 16, radix: 36)
  }

  private mutating func newTitle() -> String {
    let first = ["Groceries", "Trip", "Ideas", "Q3 plan", "Réunion", "Books", "待办", "Garden"]
    let second = ["", " list", " notes", " 2", " (draft)", " ✅"]
    return (first.randomElement(using: &random) ?? "Note")
      + (second.randomElement(using: &random) ?? "")
  }
}
