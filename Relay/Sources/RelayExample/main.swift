// Two devices, a phone and a laptop, syncing one note through a relay on loopback.
//
// Run it with `swift run --package-path Relay relay-example`. It starts a relay in this
// process (SQLite in a temporary folder, a random port), then runs two devices as an app
// wires one: a main-actor view model holding the device's replica on disk
// (`DeviceReplica`) with a `RelayClient` attached to it. Both type while connected; it
// prints the note each device ends with, and exits with status 1 if they do not agree
// within ten seconds.
import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayNIO
import ConvergeRelayTestSupport
import ConvergeStore
import Foundation
import Logging
import Observation

var logger = Logger(label: "relay-example")
logger.logLevel = .warning
let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
  "converge-relay-example-\(UInt64.random(in: 0 ... .max))")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }

// The relay (the server side): a store, a token authority and the server.
let store = try await SQLiteRelayStore.open(
  path: folder.appendingPathComponent("relay.sqlite").path)
let authority = try await RelayTokenAuthority(secret: "example-secret-of-at-least-32-bytes!")
let relay = try await LocalRelay.start(store: store, authority: authority, logger: logger)
/// What the app's backend would do: a token that lets a device write as its replica id.
@Sendable func relayToken(for id: ReplicaID) async throws -> String {
  try await authority.sign(
    RelayTokenClaims(
      space: "groceries", scope: .write, expiry: Date(timeIntervalSinceNow: 3600), replicas: [id]))
}

// The app's wiring: a UI model, a disk and a relay (the 12 lines between the markers).
// wiring: begin
@MainActor @Observable final class NotesModel {
  let notes: DeviceReplica
  @ObservationIgnored let relay: RelayClient

  init(folder: String, relayURL: String) throws {
    notes = try DeviceReplica(directory: folder)
    relay = RelayClient(url: relayURL, token: relayToken(for:))
  }

  func sync() async { await relay.run(owner: notes) }
  var badge: Int { notes.pendingCount }
}
// wiring: end

let note = EntityKey(type: "note", id: "list")
let (phone, laptop) = try await MainActor.run {
  (
    try NotesModel(
      folder: folder.appendingPathComponent("phone").path, relayURL: relay.url(space: "groceries")),
    try NotesModel(
      folder: folder.appendingPathComponent("laptop").path, relayURL: relay.url(space: "groceries"))
  )
}
let syncing = [Task { await phone.sync() }, Task { await laptop.sync() }]

await MainActor.run {
  phone.notes.transact { tx in
    tx.create(note)
    tx.setValue(.string("Groceries"), for: "title", of: note)
    tx.insertText("milk\n", at: 0, in: "body", of: note)
  }
  laptop.notes.transact { tx in
    tx.create(note)
    tx.insertText("eggs\n", at: 0, in: "body", of: note)
  }
}

// Wait until both devices hold the same document with both edits, and no badge shows.
let deadline = ContinuousClock.now + .seconds(10)
var agreed = false
while ContinuousClock.now < deadline {
  agreed = await MainActor.run {
    let (a, b) = (phone.notes.replica.document, laptop.notes.replica.document)
    let body = a.text(of: "body", in: note)
    return a == b && body.contains("milk") && body.contains("eggs") && phone.badge == 0
      && laptop.badge == 0
  }
  if agreed { break }
  try await Task.sleep(for: .milliseconds(20))
}
await MainActor.run {
  for (name, model) in [("phone", phone), ("laptop", laptop)] {
    let document = model.notes.replica.document
    let title = document.value(of: "title", in: note).map { "\($0)" } ?? "untitled"
    print("\(name): \(title) \(document.text(of: "body", in: note).debugDescription)")
  }
}
print(agreed ? "both devices agree" : "the devices did not agree within ten seconds")

for task in syncing { task.cancel() }
for task in syncing { await task.value }
try await MainActor.run {
  try phone.notes.close()
  try laptop.notes.close()
}
await relay.stop()
try? await store.close()
if !agreed { exit(1) }
