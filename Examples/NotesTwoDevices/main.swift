// A phone and a laptop edit the same notes offline, then sync through a folder that
// stands in for a cloud drive: each device writes what the drive lacks of its edits as a
// file and reads the other's. The folder only stores opaque bytes, like iCloud Drive,
// Dropbox or an HTTP bucket would; no server runs Swift.
//
// Each device keeps its notes in a `DeviceReplica`, and the folder exchange only attaches
// to it: it takes the device's outbox for the drive (durable edits only) and records what
// the drive now holds, so the pending badge clears; it keeps no replica of its own.
import Converge
import ConvergeStore
import ExampleModels
import Foundation

let base = FileManager.default.temporaryDirectory
  .appendingPathComponent("converge-notes-\(ProcessInfo.processInfo.processIdentifier)")
let drive = base.appendingPathComponent("drive")
try FileManager.default.createDirectory(at: drive, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: base) }

/// A device: its replica, kept in a folder of its own, and the drive files it has read.
final class Device {
  let name: String
  let notes: DeviceReplica
  var read: Set<String> = []
  var written = 0

  init(name: String, id: UInt64, clock: WallClock) throws {
    self.name = name
    var configuration = DocumentStore.Configuration()
    configuration.freshID = { ReplicaID(rawValue: id) }
    configuration.wallClock = clock
    notes = try DeviceReplica(
      directory: base.appendingPathComponent(name).path, configuration: configuration)
  }

  /// Writes what the drive lacks of this device's edits to the shared folder as a file of
  /// its own, and records that the drive holds it.
  func upload() throws {
    // A sync point (the app goes to the background): the store syncs what is buffered,
    // and the outbox holds only what is durable.
    try notes.flush()
    let delta = notes.outbox(for: "drive")
    guard !delta.isEmpty else { return }
    written += 1
    let file = drive.appendingPathComponent("\(name)-\(written).delta")
    try Data(delta.encoded()).write(to: file)
    try notes.recordAcknowledgement(delta.context, from: "drive")
  }

  /// Reads every file of the other device it has not read yet, in any order, and applies
  /// it; the drive holds what it read, so the next upload leaves it out.
  func download() throws -> Int {
    let files = try FileManager.default.contentsOfDirectory(atPath: drive.path).sorted()
    var held = CausalContext()
    var applied = 0
    for file in files where !read.contains(file) && !file.hasPrefix(name + "-") {
      let bytes = try Data(contentsOf: drive.appendingPathComponent(file))
      let delta = try DocumentDelta(decoding: bytes)
      notes.apply(delta)
      held.formUnion(delta.context)
      read.insert(file)
      applied += 1
    }
    if !held.isEmpty { try notes.recordAcknowledgement(held, from: "drive") }
    return applied
  }

  /// Edits a note through the device's replica.
  func update(_ id: String, _ body: (inout Note) -> Void) {
    notes.transact { $0.update(Note.self, id: id, body) }
  }
}

let phone = try Device(name: "phone", id: 1, clock: exampleClock(minutesAfter: 0))
let laptop = try Device(name: "laptop", id: 2, clock: exampleClock(minutesAfter: 5))

// The phone starts two notes and syncs once.
phone.notes.transact {
  $0.create(Note(title: "Groceries", body: "milk", tags: ["home"]), id: "groceries")
}
phone.notes.transact {
  $0.create(Note(title: "Trip", body: "book train", folder: "Travel"), id: "trip")
}
print("phone: \(phone.notes.pendingCount) notes not on the drive")
try phone.upload()
print("phone: \(phone.notes.pendingCount) notes not on the drive after the upload")
_ = try laptop.download()

// Offline, both edit. The phone renames the list and adds to its body; the laptop tags it,
// types at the start of the body, and archives the trip note, which the phone edits.
phone.update("groceries") {
  $0.title = "Shopping"
  $0.body += ", eggs"
}
phone.update("trip") { $0.body += ", pack charger" }
laptop.update("groceries") {
  $0.tags.insert("weekly")
  $0.body = "oat " + $0.body
}
laptop.update("trip") { $0.archived = true }

// Back online: each writes what the drive lacks, then reads what the other wrote.
try phone.upload()
try laptop.upload()
print("phone read \(try phone.download()) files, laptop read \(try laptop.download()) files")
// What each read is on the drive already: nothing is pending, and nothing is sent back.
try phone.upload()
try laptop.upload()
print("pending: phone \(phone.notes.pendingCount), laptop \(laptop.notes.pendingCount)")

for (id, note) in phone.notes.replica.all(Note.self) {
  let tags = note.tags.sorted().joined(separator: ", ")
  print("\(id): \"\(note.title)\" [\(tags)] archived=\(note.archived) body=\"\(note.body)\"")
}
let same = phone.notes.replica.encodedState() == laptop.notes.replica.encodedState()
print(same ? "phone and laptop hold identical bytes" : "DIVERGED")
print("files on the drive: \(phone.written + laptop.written)")
try phone.notes.close()
try laptop.notes.close()
// `exit` skips the `defer` above.
try? FileManager.default.removeItem(at: base)
exit(same ? 0 : 1)
