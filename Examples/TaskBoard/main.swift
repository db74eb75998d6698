// A GTD task board on three devices. Each edits offline: status, priority, due dates,
// flags, tags and board positions; one device deletes a task that another edits. Then
// they sync pairwise (each sends what the other lacks, as bytes) and print the merged
// board with what each device contributed.
import Converge
import ExampleModels
import Foundation

var devices = [
  ("phone", Replica(id: ReplicaID(rawValue: 1), wallClock: exampleClock(minutesAfter: 0))),
  ("laptop", Replica(id: ReplicaID(rawValue: 2), wallClock: exampleClock(minutesAfter: 1))),
  ("tablet", Replica(id: ReplicaID(rawValue: 3), wallClock: exampleClock(minutesAfter: 2))),
]
var contributions: [String: [String]] = [:]

/// Records which fields a device's commit changed, for the final report.
@MainActor
func note(_ device: String, _ commit: Commit) {
  for change in commit.changes.entities {
    let what = change.kind == .updated ? change.fields.joined(separator: ", ") : "\(change.kind)"
    contributions[change.key.id, default: []].append("\(device): \(what)")
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
  tx.create(
    TaskItem(
      title: "File taxes", project: "Home", position: BoardPosition(column: "Inbox", row: 0)),
    id: "taxes")
  tx.create(
    TaskItem(
      title: "Renew passport", project: "Travel", position: BoardPosition(column: "Inbox", row: 1)),
    id: "passport")
  tx.create(
    TaskItem(
      title: "Call plumber", project: "Home", position: BoardPosition(column: "Inbox", row: 2)),
    id: "plumber")
}
note("phone", setup)
for target in 1...2 { try sync(0, into: target) }

// Offline edits.
note(
  "phone",
  try devices[0].1.update(TaskItem.self, id: "taxes") {
    $0.status = .next
    $0.position = BoardPosition(column: "Next", row: 0)
  })
note("phone", devices[0].1.delete(TaskItem.self, id: "plumber"))
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
note(
  "tablet",
  try devices[2].1.update(TaskItem.self, id: "passport") {
    $0.status = .waiting
    $0.context = "@errands"
    $0.position = BoardPosition(column: "Waiting", row: 0)
  })
note("tablet", try devices[2].1.update(TaskItem.self, id: "taxes") { $0.tags.insert("2026") })

// Back online: every pair syncs both ways.
for source in devices.indices {
  for target in devices.indices where target != source { try sync(source, into: target) }
}

print("Board after merging three devices:")
for (id, task) in devices[0].1.all(TaskItem.self) {
  let due = task.due.map { "due \(Int($0.timeIntervalSince1970))" } ?? "no due date"
  print(
    "- \(task.title) [\(task.position?.description ?? "-")] \(task.status.rawValue), "
      + "priority \(task.priority), \(due), flagged=\(task.flagged), "
      + "tags [\(task.tags.sorted().joined(separator: ", "))]"
      + (task.notes.isEmpty ? "" : ", notes \"\(task.notes)\""))
  for line in contributions[id] ?? [] { print("    \(line)") }
}
print("(\"Call plumber\" was deleted on the phone while the laptop edited it: it stays, whole.)")
let states = devices.map { $0.1.encodedState() }
let converged = states.allSatisfy { $0 == states[0] }
print(converged ? "all three devices hold identical bytes" : "DIVERGED")
exit(converged ? 0 : 1)
