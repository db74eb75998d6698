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

/// A column of a board: its title and its cards in order, as a movable list of the
/// tasks' keys. Which column a card is in is the card's own `column` parent field
/// (``TaskItem``), so a card dragged into two columns on two devices at once ends in one;
/// the list orders the cards the forest puts under the column
/// (`Document.children(of:in:orderedBy:)`).
public struct BoardColumn: EntityModel, Equatable {
  public static let entityType = "column"
  public var title = ""
  public var cards: [EntityKey] = []

  public static let schema = EntitySchema<BoardColumn>(
    .register("title", \.title),
    .list("cards", \.cards))

  public init() {}

  public init(title: String) { self.title = title }
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
  /// The board column the card is in (a parent field: one column, whatever two devices
  /// drag at once).
  public var column: EntityKey?
  /// The task this one is a subtask of (a parent field: the subtasks form a forest
  /// without cycles).
  public var parent: EntityKey?
  /// The subtasks' order (the forest says which tasks are subtasks).
  public var subtasks: [EntityKey] = []

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
    .parent("column", \.column),
    .parent("parent", \.parent),
    .list("subtasks", \.subtasks))

  public init() {}

  public init(title: String, project: String? = nil) {
    self.title = title
    self.project = project
  }
}

/// A deterministic wall clock for the examples, so their output repeats exactly.
public func exampleClock(minutesAfter base: UInt64) -> WallClock {
  .fixed(1_800_000_000_000 + base * 60_000)
}
