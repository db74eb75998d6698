import Converge

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A note as the simulated notes app declares it.
public struct SimulatedNote: EntityModel, Equatable {
  public static let entityType = "note"
  public var title = ""
  public var body = ""
  public var tags: Set<String> = []
  public var pinned = false

  public init() {}

  public static let schema = EntitySchema<SimulatedNote>(
    .register("title", \.title),
    .text("body", \.body),
    .set("tags", \.tags),
    .register("pinned", \.pinned))
}

/// A task's column on a board and its place in it: a nested record field.
public struct SimulatedBoardPosition: FieldValueConvertible, Equatable, Sendable {
  public var column: String
  public var x: Int
  public var y: Int

  public init(column: String, x: Int, y: Int) {
    self.column = column
    self.x = x
    self.y = y
  }

  public var fieldValue: FieldValue {
    .record(["column": .string(column), "x": .int(Int64(x)), "y": .int(Int64(y))])
  }

  public init?(fieldValue: FieldValue) {
    guard case .record(let fields) = fieldValue, case .string(let column)? = fields["column"],
      case .int(let x)? = fields["x"], case .int(let y)? = fields["y"],
      let exactX = Int(exactly: x), let exactY = Int(exactly: y)
    else { return nil }
    self.init(column: column, x: exactX, y: exactY)
  }
}

/// A task's status.
public enum SimulatedTaskStatus: String, FieldValueConvertible, CaseIterable, Sendable {
  case todo, doing, blocked, done
}

/// A task as the simulated tasks app declares it.
public struct SimulatedTask: EntityModel, Equatable {
  public static let entityType = "task"
  public var title = ""
  public var status = SimulatedTaskStatus.todo
  public var priority = 0
  public var due: Date?
  public var flagged = false
  public var tags: Set<String> = []
  public var position = SimulatedBoardPosition(column: "inbox", x: 0, y: 0)

  public init() {}

  public static let schema = EntitySchema<SimulatedTask>(
    .register("title", \.title),
    .register("status", \.status),
    .register("priority", \.priority),
    .register("due", \.due),
    .register("flagged", \.flagged),
    .set("tags", \.tags),
    .register("position", \.position))
}
