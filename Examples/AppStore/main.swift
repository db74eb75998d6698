// How an app keeps its data: one `DeviceReplica` in a folder, opened at launch with the
// same replica id as last time, edited through `transact`, observed by the UI through its
// change stream, synced with another device through a `SyncSession` that only attaches
// to it, and closed cleanly at the end. Each commit appends its delta to the folder's log;
// nothing rewrites the whole state.
import Converge
import ConvergeStore
import ExampleModels
import Foundation

let folder = FileManager.default.temporaryDirectory
  .appendingPathComponent("converge-app-\(ProcessInfo.processInfo.processIdentifier)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }
let directory = folder.appendingPathComponent("notes").path

/// Launches the "app": opens the device's replica where the last run left it.
@MainActor
func launch() throws -> DeviceReplica {
  let notes = try DeviceReplica(directory: directory)
  if notes.recovery.identityChange == .firstLaunch {
    print("launch: first run, empty replica")
  } else {
    let count = notes.replica.all(Note.self).count
    print("launch: reopened \(count) notes, pending \(notes.pendingCount)")
  }
  return notes
}

/// One sync with the laptop: messages both ways until both sides are quiet.
@MainActor
func sync(_ notes: DeviceReplica, with laptop: inout Replica, _ sessions: inout [SyncSession])
  throws
{
  while true {
    let outgoing = notes.makeMessage(for: &sessions[0])
    if let outgoing { sessions[1].receive(outgoing, into: &laptop) }
    let incoming = sessions[1].makeMessage(for: laptop)
    if let incoming { try notes.receive(incoming, through: &sessions[0], from: "laptop") }
    if outgoing == nil && incoming == nil { return }
  }
}

@MainActor
func run() async throws {
  // First session: the user writes two notes; a UI task listens to the change stream.
  let notes = try launch()
  let updates = notes.changes()
  let listener = Task { @MainActor in
    var seen = 0
    for await change in updates {
      seen += 1
      print("  ui: created \(change.created.map(\.id)), updated \(change.updated.map(\.id))")
      if seen == 3 { break }
    }
  }
  notes.transact { $0.create(Note(title: "Groceries", body: "milk"), id: "groceries") }
  notes.transact { $0.create(Note(title: "Ideas"), id: "ideas") }
  print("pending \(notes.pendingCount) notes")

  // The laptop connects. Edits leave the device only once durable: before the group
  // commit syncs them, the handshake carries none.
  var laptop = Replica()
  var sessions = [SyncSession(), SyncSession()]
  try sync(notes, with: &laptop, &sessions)
  print("laptop before the sync: \(laptop.all(Note.self).count) notes")
  try notes.flush()  // or wait for the group commit (200 ms)
  try sync(notes, with: &laptop, &sessions)
  let count = laptop.all(Note.self).count
  print("laptop after the sync: \(count) notes, pending \(notes.pendingCount)")

  // The laptop edits a note; its push arrives through the same session.
  let remote = try laptop.update(Note.self, id: "ideas") { $0.body = "a CRDT notes app" }
  try notes.receive(sessions[1].push(remote, from: laptop), through: &sessions[0], from: "laptop")
  await listener.value
  let firstID = notes.id
  let firstDocument = notes.replica.document
  try notes.close()

  // Second session: the app restarts and finds everything in the folder, under its id.
  let relaunched = try launch()
  for (id, note) in relaunched.replica.all(Note.self) {
    print("  \(id): \(note.title) — \(note.body)")
  }
  let kept = relaunched.replica.document == firstDocument
  print(kept ? "state survived the restart" : "STATE LOST")
  let sameID = relaunched.id == firstID && relaunched.identityChanges.isEmpty
  print(sameID ? "kept the replica id" : "TOOK A NEW ID")
  try relaunched.close()
  if !kept || !sameID { exit(1) }
}

try await run()
