// A GTD task board on three devices. Each edits offline: status, priority, due dates,
// flags and tags; cards dragged within and across the board's columns (the same card
// into two columns at once); subtasks reordered and nested (one under the other on one
// device, the other way round on another); one device deletes a task that another
// edits. Then they sync pairwise (each sends what the other lacks, as bytes) and print
// the merged board, its subtask tree and what each device contributed.
import Converge
import ExampleModels
import Foundation

var devices = [
  ("phone", Replica(id: ReplicaID(rawValue: 1), wallClock: exampleClock(minutesAfter: 0))),
  ("laptop", Replica(id: ReplicaID(rawValue: 2), wallClock: exampleClock(minutesAfter: 1))),
  ("tablet", Replica(id: ReplicaID(rawValue: 3), wallClock: exampleClock(minutesAfter: 2))),
]
var contributions: [String: [String]] = [:]

let columns = ["inbox": "Inbox", "next": "Next", "waiting": "Waiting"]
func column(_ id: String) -> EntityKey { EntityKey(type: BoardColumn.entityType, id: id) }
func task(_ id: String) -> EntityKey { EntityKey(type: TaskItem.entityType, id: id) }

/// Records which fields a device's commit changed, for the final report.
@MainActor
func note(_ device: String, _ commit: Commit) {
  for change in commit.changes.entities where change.key.type == TaskItem.entityType {
    let what = change.kind == .updated ? change.fields.joined(separator: ", ") : "\(change.kind)"
    contributions[change.key.id, default: []].append("\(device): \(what)")
  }
}

/// Drags the card `id` into `columnID` at `row`: the card's column (a parent field) and
/// the column's card list, in one transaction.
@MainActor
func drag(_ id: String, to columnID: String, row: Int, on device: Int) -> Commit {
  devices[device].1.transact { tx in
    tx.move(task(id), under: column(columnID), at: row, in: "column", orderedBy: "cards")
  }
}

/// Brings `target` up to date with `source`, through encoded bytes.
@MainActor
func sync(_ source: Int, into target: Int) throws {
  let bytes = devices[source].1.delta(since: devices[target].1.context).encoded()
  try devices[target].1.apply(encodedDelta: bytes)
}

// The phone sets up the board and everyone syncs.
let setup = devices[0].1.transact { tx in
  for (id, title) in columns.sorted(by: { $0.key < $1.key }) {
    tx.create(BoardColumn(title: title), id: id)
  }
  tx.create(TaskItem(title: "File taxes", project: "Home"), id: "taxes")
  tx.create(TaskItem(title: "Renew passport", project: "Travel"), id: "passport")
  tx.create(TaskItem(title: "Call plumber", project: "Home"), id: "plumber")
  tx.create(TaskItem(title: "Take photos", project: "Travel"), id: "photos")
  tx.create(TaskItem(title: "Fill in the form", project: "Travel"), id: "form")
  for (row, id) in ["taxes", "passport", "plumber"].enumerated() {
    tx.move(task(id), under: column("inbox"), at: row, in: "column", orderedBy: "cards")
  }
  for (row, id) in ["photos", "form"].enumerated() {
    tx.move(task(id), under: task("passport"), at: row, in: "parent", orderedBy: "subtasks")
  }
}
note("phone", setup)
for target in 1...2 { try sync(0, into: target) }

// Offline edits.
note(
  "phone",
  try devices[0].1.update(TaskItem.self, id: "taxes") { $0.status = .next })
note("phone", drag("taxes", to: "next", row: 0, on: 0))
note("phone", devices[0].1.delete(TaskItem.self, id: "plumber"))
note(
  "phone",
  devices[0].1.transact { tx in
    tx.setParent(task("form"), of: task("photos"), in: "parent")
  })
note(
  "laptop",
  try devices[1].1.update(TaskItem.self, id: "taxes") {
    $0.priority = .high
    $0.due = Date(timeIntervalSince1970: 1_807_000_000)
    $0.tags.insert("money")
  })
note(
  "laptop",
  try devices[1].1.update(TaskItem.self, id: "plumber") {
    $0.flagged = true
    $0.notes = "kitchen sink drips"
  })
note("laptop", drag("plumber", to: "inbox", row: 0, on: 1))
note(
  "laptop",
  devices[1].1.transact { tx in
    tx.setParent(task("photos"), of: task("form"), in: "parent")
  })
note(
  "tablet",
  try devices[2].1.update(TaskItem.self, id: "passport") {
    $0.status = .waiting
    $0.context = "@errands"
  })
note("tablet", drag("passport", to: "waiting", row: 0, on: 2))
note("tablet", drag("taxes", to: "waiting", row: 1, on: 2))
note("tablet", try devices[2].1.update(TaskItem.self, id: "taxes") { $0.tags.insert("2026") })

// Back online: every pair syncs both ways.
for source in devices.indices {
  for target in devices.indices where target != source { try sync(source, into: target) }
}

let merged = devices[0].1
print("Board after merging three devices:")
for (id, title) in columns.sorted(by: { $0.key < $1.key }) {
  let cards = merged.document.children(of: column(id), in: "column", orderedBy: "cards")
  let titles = cards.compactMap { merged.get(TaskItem.self, id: $0.id)?.title }
  print("  \(title): \(titles.joined(separator: ", "))")
}
print("Tasks:")
for (id, item) in merged.all(TaskItem.self) {
  let due = item.due.map { "due \(Int($0.timeIntervalSince1970))" } ?? "no due date"
  let place = item.column.flatMap { columns[$0.id] } ?? "-"
  print(
    "- \(item.title) [\(place)] \(item.status.rawValue), "
      + "priority \(item.priority), \(due), flagged=\(item.flagged), "
      + "tags [\(item.tags.sorted().joined(separator: ", "))]"
      + (item.notes.isEmpty ? "" : ", notes \"\(item.notes)\""))
  for line in contributions[id] ?? [] { print("    \(line)") }
}
print("Subtasks:")
/// Prints `key` and its subtasks below it, indented by depth.
func printTree(_ key: EntityKey, depth: Int) {
  print(
    String(repeating: "  ", count: depth + 1)
      + (merged.get(TaskItem.self, id: key.id)?.title ?? key.id))
  for child in merged.document.children(of: key, in: "parent", orderedBy: "subtasks") {
    printTree(child, depth: depth + 1)
  }
}
for root in merged.document.forest(of: "parent").roots { printTree(root, depth: 0) }
print("(\"Call plumber\" was deleted on the phone while the laptop edited it: it stays, whole.)")
print("(\"File taxes\" was dragged into Next and into Waiting at once: it shows in one column.)")
print("(\"Take photos\" under \"Fill in the form\" and the reverse at once: no cycle, one tree.)")
let states = devices.map { $0.1.encodedState() }
let converged = states.allSatisfy { $0 == states[0] }
let trees = devices.map { $0.1.document.forest(of: "parent") }
let oneTree = trees.allSatisfy { $0 == trees[0] }
print(converged && oneTree ? "all three devices hold identical bytes" : "DIVERGED")
exit(converged && oneTree ? 0 : 1)
