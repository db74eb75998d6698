// Two devices, a phone and a laptop, syncing one note through a relay on loopback.
//
// Run it with `swift run --package-path Relay relay-example`. It starts a relay in this
// process (SQLite in a temporary folder, a random port), connects two `RelayClient`s with
// their own tokens, types on both while they are connected, and prints the note each
// device ends with. It exits with status 1 if they do not agree within ten seconds.
import Converge
import ConvergeRelay
import ConvergeRelayClient
import Foundation
import Logging

var logger = Logger(label: "relay-example")
logger.logLevel = .warning
let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
  "converge-relay-example-\(UInt64.random(in: 0 ... .max))")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }

// The relay: a store, a token authority and the server, on a free loopback port.
let store = try await SQLiteRelayStore.open(
  path: folder.appendingPathComponent("relay.sqlite").path)
let authority = try await RelayTokenAuthority(secret: "example-secret-of-at-least-32-bytes!")
let relay = try await LocalRelay.start(store: store, authority: authority, logger: logger)
let url = relay.url(space: "groceries")

// Each device has its own replica id, and a token that lets it write as that id only.
func device(_ id: UInt64) async throws -> RelayClient {
  let replica = ReplicaID(rawValue: id)
  let token = try await authority.sign(
    RelayTokenClaims(
      space: "groceries", scope: .write, expiry: Date(timeIntervalSinceNow: 3600),
      replicas: [replica]))
  return try await RelayClient(
    url: url, token: token, store: InMemoryRelayClientStore(replica: Replica(id: replica)))
}
let phone = try await device(0xA1)
let laptop = try await device(0xB2)
let syncing = [Task { await phone.run() }, Task { await laptop.run() }]

let note = EntityKey(type: "note", id: "list")
try await phone.transact { tx in
  tx.create(note)
  tx.setValue(.string("Groceries"), for: "title", of: note)
  tx.insertText("milk\n", at: 0, in: "body", of: note)
}
try await laptop.transact { tx in
  tx.create(note)
  tx.insertText("eggs\n", at: 0, in: "body", of: note)
}

// Wait until both devices hold the same document with both edits.
let deadline = ContinuousClock.now + .seconds(10)
var agreed = false
while ContinuousClock.now < deadline {
  let (a, b) = (await phone.replica.document, await laptop.replica.document)
  let body = a.text(of: "body", in: note)
  if a == b, body.contains("milk"), body.contains("eggs") {
    agreed = true
    break
  }
  try await Task.sleep(for: .milliseconds(20))
}
for (name, client) in [("phone", phone), ("laptop", laptop)] {
  let document = await client.replica.document
  let title = document.value(of: "title", in: note).map { "\($0)" } ?? "untitled"
  print("\(name): \(title) \(document.text(of: "body", in: note).debugDescription)")
}
print(agreed ? "both devices agree" : "the devices did not agree within ten seconds")

for task in syncing { task.cancel() }
await relay.stop()
try? await store.close()
if !agreed { exit(1) }
