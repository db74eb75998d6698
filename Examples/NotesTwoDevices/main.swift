// A phone and a laptop edit the same notes offline, then sync through a folder that
// stands in for a cloud drive: each device writes its encoded deltas as files and reads
// the other's. The folder only stores opaque bytes, like iCloud Drive, Dropbox or an
// HTTP bucket would; no server runs Swift.
import Converge
import ExampleModels
import Foundation

let drive = FileManager.default.temporaryDirectory
  .appendingPathComponent("converge-notes-\(ProcessInfo.processInfo.processIdentifier)")
try FileManager.default.createDirectory(at: drive, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: drive) }

/// A device: a replica, and the names of the drive files it has read already.
struct Device {
  var name: String
  var replica: Replica
  var read: Set<String> = []
  var written = 0

  /// Writes a commit's delta to the shared folder as a file of its own.
  mutating func upload(_ commit: Commit) throws {
    written += 1
    let file = drive.appendingPathComponent("\(name)-\(written).delta")
    try Data(commit.delta.encoded()).write(to: file)
  }

  /// Reads every delta file it has not read yet, in any order, and applies it.
  mutating func download() throws -> Int {
    let files = try FileManager.default.contentsOfDirectory(atPath: drive.path).sorted()
    var applied = 0
    for file in files where !read.contains(file) {
      let bytes = try Data(contentsOf: drive.appendingPathComponent(file))
      try replica.apply(encodedDelta: bytes)
      read.insert(file)
      applied += 1
    }
    return applied
  }
}

var phone = Device(
  name: "phone",
  replica: Replica(id: ReplicaID(rawValue: 1), wallClock: exampleClock(minutesAfter: 0)))
var laptop = Device(
  name: "laptop",
  replica: Replica(id: ReplicaID(rawValue: 2), wallClock: exampleClock(minutesAfter: 5)))

// The phone starts two notes and syncs once.
let groceries = phone.replica.create(
  Note(title: "Groceries", body: "milk", tags: ["home"]), id: "groceries")
try phone.upload(groceries.commit)
let trip = phone.replica.create(
  Note(title: "Trip", body: "book train", folder: "Travel"), id: "trip")
try phone.upload(trip.commit)
_ = try laptop.download()

// Offline, both edit. The phone renames the list and adds to its body; the laptop tags it,
// types at the start of the body, and archives the trip note, which the phone edits.
try phone.upload(
  phone.replica.update(Note.self, id: "groceries") {
    $0.title = "Shopping"
    $0.body += ", eggs"
  })
try phone.upload(phone.replica.update(Note.self, id: "trip") { $0.body += ", pack charger" })
try laptop.upload(
  laptop.replica.update(Note.self, id: "groceries") {
    $0.tags.insert("weekly")
    $0.body = "oat " + $0.body
  })
try laptop.upload(laptop.replica.update(Note.self, id: "trip") { $0.archived = true })

// Back online: each reads what the other wrote.
print("phone read \(try phone.download()) files, laptop read \(try laptop.download()) files")

for (id, note) in phone.replica.all(Note.self) {
  let tags = note.tags.sorted().joined(separator: ", ")
  print("\(id): \"\(note.title)\" [\(tags)] archived=\(note.archived) body=\"\(note.body)\"")
}
let same = phone.replica.encodedState() == laptop.replica.encodedState()
print(same ? "phone and laptop hold identical bytes" : "DIVERGED")
// `exit` skips the `defer` above.
try? FileManager.default.removeItem(at: drive)
exit(same ? 0 : 1)
