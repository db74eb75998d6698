import Converge
import ConvergeTestSupport
import Foundation
import Testing

/// A note as a notes app stores it.
struct SampleNote: EntityModel, Equatable {
  static let entityType = "note"
  var title = ""
  var body = ""
  var tags: Set<String> = []
  var pinned = false
  var archived = false
  var folder: String?

  static let schema = EntitySchema<SampleNote>(
    .register("title", \.title),
    .text("body", \.body),
    .set("tags", \.tags),
    .register("pinned", \.pinned),
    .register("archived", \.archived),
    .register("folder", \.folder))
}

/// The same note as a later app version declares it, with a field the first lacks.
struct NoteV2: EntityModel, Equatable {
  static let entityType = "note"
  var title = ""
  var color: String?

  static let schema = EntitySchema<NoteV2>(.register("title", \.title), .register("color", \.color))
}

/// Where a card sits on a board: stored as a small nested record.
struct BoardPosition: FieldValueConvertible, Equatable {
  var column: String
  var x: Double
  var y: Double

  var fieldValue: FieldValue {
    .record(["column": .string(column), "x": .double(x), "y": .double(y)])
  }

  init(column: String, x: Double, y: Double) {
    self.column = column
    self.x = x
    self.y = y
  }

  init?(fieldValue: FieldValue) {
    guard case .record(let fields) = fieldValue,
      case .string(let column)? = fields["column"],
      case .double(let x)? = fields["x"], case .double(let y)? = fields["y"]
    else { return nil }
    self.init(column: column, x: x, y: y)
  }
}

/// A task as a GTD app stores it.
struct TaskItem: EntityModel, Equatable {
  enum Status: String, FieldValueConvertible { case inbox, next, waiting, done }
  enum Priority: Int, FieldValueConvertible { case none, low, medium, high }

  static let entityType = "task"
  var title = ""
  var notes = ""
  var status = Status.inbox
  var priority = Priority.none
  var due: Date?
  var flagged = false
  var tags: Set<String> = []
  var project: String?
  var context: String?
  var position: BoardPosition?

  static let schema = EntitySchema<TaskItem>(
    .register("title", \.title),
    .text("notes", \.notes),
    .register("status", \.status),
    .register("priority", \.priority),
    .register("due", \.due),
    .register("flagged", \.flagged),
    .set("tags", \.tags),
    .register("project", \.project),
    .register("context", \.context),
    .register("position", \.position))
}

@Suite struct ModelTests {
  func devices() -> (Replica, Replica) {
    var random = SeededGenerator(seed: 21)
    return (Replica.seeded(using: &random), Replica.seeded(using: &random))
  }

  @Test func aNoteRoundTripsThroughTheDocument() throws {
    var (phone, _) = devices()
    let note = SampleNote(
      title: "Groceries", body: "milk, eggs 🥚", tags: ["home"], pinned: true, folder: "Errands")
    let (id, commit) = phone.create(note, id: "n1")
    #expect(commit.changes.created == [EntityKey(type: "note", id: "n1")])
    #expect(phone.get(SampleNote.self, id: id) == note)
    #expect(phone.all(SampleNote.self).map(\.id) == ["n1"])
  }

  @Test func twoDevicesEditDifferentPropertiesOfflineAndBothSurvive() throws {
    var (phone, laptop) = devices()
    let created = phone.create(SampleNote(title: "Groceries", body: "milk"), id: "n1")
    laptop.apply(created.commit.delta)
    let a = try phone.update(SampleNote.self, id: "n1") {
      $0.title = "Shopping"
      $0.body += ", eggs"
    }
    let b = try laptop.update(SampleNote.self, id: "n1") {
      $0.tags.insert("home")
      $0.body = "oat " + $0.body
      $0.pinned = true
    }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    let merged = try #require(phone.get(SampleNote.self, id: "n1"))
    #expect(laptop.get(SampleNote.self, id: "n1") == merged)
    #expect(merged.title == "Shopping")
    #expect(merged.tags == ["home"])
    #expect(merged.pinned)
  }

  @Test func aTaskBoardMergesFieldByField() throws {
    var (phone, laptop) = devices()
    let due = Date(timeIntervalSince1970: 1_800_000_000)
    let created = phone.create(TaskItem(title: "File taxes", due: due), id: "t1")
    laptop.apply(created.commit.delta)
    let a = try phone.update(TaskItem.self, id: "t1") {
      $0.status = .next
      $0.position = BoardPosition(column: "Next", x: 1, y: 2)
    }
    let b = try laptop.update(TaskItem.self, id: "t1") {
      $0.priority = .high
      $0.flagged = true
      $0.tags = ["money"]
    }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    let task = try #require(laptop.get(TaskItem.self, id: "t1"))
    #expect(phone.get(TaskItem.self, id: "t1") == task)
    #expect(task.status == .next && task.priority == .high && task.flagged)
    #expect(task.position == BoardPosition(column: "Next", x: 1, y: 2))
    #expect(task.due == due && task.tags == ["money"])
  }

  @Test func updatingAMissingEntityThrows() {
    var (phone, _) = devices()
    #expect(throws: ReplicaError.entityNotFound(EntityKey(type: "note", id: "nope"))) {
      try phone.update(SampleNote.self, id: "nope") { $0.title = "x" }
    }
  }

  @Test func aFieldFromANewerAppVersionSurvivesAnOlderVersionsMergeAndResend() throws {
    var random = SeededGenerator(seed: 3)
    var newer = Replica.seeded(using: &random)
    var older = Replica.seeded(using: &random)
    var third = Replica.seeded(using: &random)
    let created = newer.create(NoteV2(title: "Draft", color: "blue"), id: "n1")
    older.apply(created.commit.delta)
    // The older app edits the note knowing nothing of `color` …
    try older.update(SampleNote.self, id: "n1") { $0.title = "Final" }
    // … and re-sends everything it has to a device that saw nothing yet.
    third.apply(older.delta(since: third.context))
    #expect(third.get(NoteV2.self, id: "n1") == NoteV2(title: "Final", color: "blue"))
    #expect(older.document.fieldNames(of: EntityKey(type: "note", id: "n1")).contains("color"))
  }

  @Test func aStoredValueOfTheWrongKindReadsAsTheDefault() throws {
    var (phone, _) = devices()
    let key = EntityKey(type: "task", id: "t1")
    phone.transact { tx in
      tx.create(key)
      tx.setValue(.string("not a number"), for: "priority", of: key)
      tx.setValue(.string("someday"), for: "status", of: key)
    }
    let task = try #require(phone.get(TaskItem.self, id: "t1"))
    #expect(task.priority == .none && task.status == .inbox)
  }
}
