// How an app keeps its replica: restore it from disk at launch, persist it after every
// transaction, publish changes to the UI, and receive deltas from other devices.
// `ReplicaStore` is the observable, main-actor replica SwiftUI views read from.
import Converge
import ConvergeStore
import ExampleModels
import Foundation

let folder = FileManager.default.temporaryDirectory
  .appendingPathComponent("converge-app-\(ProcessInfo.processInfo.processIdentifier)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }
let stateFile = folder.appendingPathComponent("replica.state")

/// Writes the whole state atomically. An app calls it after local commits and after
/// applying deltas from other devices.
@MainActor
func save(_ store: ReplicaStore) {
  try? Data(store.replica.encodedState()).write(to: stateFile, options: .atomic)
}

/// Launches the "app": restores the saved state (under a fresh replica id, so a stale
/// backup can never reuse a dot) or starts empty, and persists after each commit.
@MainActor
func launch() throws -> ReplicaStore {
  let replica: Replica
  if let saved = try? Data(contentsOf: stateFile) {
    replica = try Replica(restoring: saved)
    print("launch: restored \(saved.count) bytes, \(replica.all(Note.self).count) notes")
  } else {
    replica = Replica()
    print("launch: first run, empty replica")
  }
  let store = ReplicaStore(replica: replica)
  // Persist after each local commit; an app would also queue `commit.delta` to send.
  store.onCommit = { [unowned store] _ in save(store) }
  return store
}

@MainActor
func run() async throws {
  // First session: the user writes two notes; a UI task listens to the change stream.
  let store = try launch()
  let updates = store.changes()
  let listener = Task { @MainActor in
    var seen = 0
    for await change in updates {
      seen += 1
      print("  ui: created \(change.created.map(\.id)), updated \(change.updated.map(\.id))")
      if seen == 3 { break }
    }
  }
  store.transact { $0.create(Note(title: "Groceries", body: "milk"), id: "groceries") }
  store.transact { $0.create(Note(title: "Ideas"), id: "ideas") }
  // A delta arrives from another device.
  var other = try Replica(restoring: store.replica.encodedState())
  let remote = try other.update(Note.self, id: "ideas") { $0.body = "a CRDT notes app" }
  try store.apply(DocumentDelta(decoding: remote.delta.encoded()))
  save(store)
  await listener.value

  // Second session: the app restarts and finds everything on disk.
  let relaunched = try launch()
  for (id, note) in relaunched.replica.all(Note.self) {
    print("  \(id): \(note.title) — \(note.body)")
  }
  let kept = relaunched.replica.document == store.replica.document
  print(kept ? "state survived the restart" : "STATE LOST")
  if !kept { exit(1) }
}

/// The same app with `DocumentStore`: each commit appends its delta to a log instead of
/// rewriting the whole state, deltas leave the device only once durable, and the device
/// keeps its replica id across launches.
func runWithDurableStore() throws {
  let directory = folder.appendingPathComponent("notes-store").path
  let first = try DocumentStore(directory: directory)
  var sent: [[UInt8]] = []
  first.onDurable = { sent += $0 }  // a real app sends these to its peers or relay
  first.transact { $0.create(Note(title: "Groceries", body: "milk"), id: "groceries") }
  first.transact { $0.create(Note(title: "Ideas"), id: "ideas") }
  print("store: \(first.pendingCount) notes pending, \(sent.count) deltas sent before the sync")
  try first.flush()
  print("store: \(sent.count) durable deltas sent after the sync")
  try first.recordAcknowledgement(first.replica.context, from: "relay")
  try first.close()
  let second = try DocumentStore(directory: directory)
  let sameID = second.replica.id == first.replica.id && second.recovery.identityChange == nil
  print(
    "store: relaunched with \(second.replica.all(Note.self).count) notes, pending \(second.pendingCount)"
  )
  print(sameID ? "store kept the replica id" : "STORE TOOK A NEW ID")
  try second.close()
  if !sameID || second.replica.document != first.replica.document { exit(1) }
}

try await run()
try runWithDurableStore()
