import Converge
import Foundation

/// A note as a notes app stores it: title, body text, tags, pinned, archived, folder.
public struct Note: EntityModel, Equatable {
  public static let entityType = "note"
  public var title = ""
  public var body = ""
  public var tags: Set<String> = []
  public var pinned = false
  public var archived = false
  public var folder: String?

  public static let schema = EntitySchema<Note>(
    .register("title", \.title),
    .text("body", \.body),
    .set("tags", \.tags),
    .register("pinned", \.pinned),
    .register("archived", \.archived),
    .register("folder", \.folder))

  public init() {}

  public init(title: String, body: String = "", tags: Set<String> = [], folder: String? = nil) {
    self.title = title
    self.body = body
    self.tags = tags
    self.folder = folder
  }
}

/// Where a card sits on a board, stored as a small nested record.
public struct BoardPosition: FieldValueConvertible, Equatable, CustomStringConvertible {
  public var column: String
  public var row: Int

  public init(column: String, row: Int) {
    self.column = column
    self.row = row
  }

  public var fieldValue: FieldValue {
    .record(["column": .string(column), "row": .int(Int64(row))])
  }

  public init?(fieldValue: FieldValue) {
    guard case .record(let fields) = fieldValue, case .string(let column)? = fields["column"],
      case .int(let row)? = fields["row"], let exact = Int(exactly: row)
    else { return nil }
    self.init(column: column, row: exact)
  }

  public var description: String { "\(column)#\(row)" }
}

/// A task as a GTD app stores it.
public struct TaskItem: EntityModel, Equatable {
  public enum Status: String, FieldValueConvertible, Sendable { case inbox, next, waiting, done }
  public enum Priority: Int, FieldValueConvertible, Sendable { case none, low, medium, high }

  public static let entityType = "task"
  public var title = ""
  public var notes = ""
  public var status = Status.inbox
  public var priority = Priority.none
  public var due: Date?
  public var flagged = false
  public var tags: Set<String> = []
  public var project: String?
  public var context: String?
  public var position: BoardPosition?

  public static let schema = EntitySchema<TaskItem>(
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

  public init() {}

  public init(title: String, project: String? = nil, position: BoardPosition? = nil) {
    self.title = title
    self.project = project
    self.position = position
  }
}

/// A deterministic wall clock for the examples, so their output repeats exactly.
public func exampleClock(minutesAfter base: UInt64) -> WallClock {
  .fixed(1_800_000_000_000 + base * 60_000)
}
