// Two devices type into the same note at the same time over a live connection (a
// WebSocket, say; here two in-memory queues that keep order). A sync session per peer
// first exchanges what each device lacks, then sends every keystroke as a frame of its
// stream: a few bytes each, because both ends remember the note, the field and the
// device, and predict where the next character goes. The phone's cursor, an anchor,
// stays after the word it was at. Then the connection drops with
// frames in flight; on reconnect, one handshake brings both devices level again. Last,
// the phone undoes its own typing: the laptop's words, typed in between, stay.
//
// Both type through the note body's text handle, an `EntityText`: each keystroke is an
// O(log n) insert at a scalar position, where assigning `note.body` would rebuild and
// compare the whole string.
import Converge
import ExampleModels
import Foundation

/// One device: its replica, its session with the other device, and the bytes it sent.
struct Device {
  var replica: Replica
  var session = SyncSession()
  var outbox: [[UInt8]] = []
  var bytesSent = 0
  /// What this device typed, for undo: keystrokes within half a second form one step.
  var history = UndoHistory()

  init(id: UInt64) { replica = Replica(id: ReplicaID(rawValue: id)) }

  /// Types one character as its own transaction and queues the frame for the peer.
  mutating func type(_ scalar: Unicode.Scalar, at position: Int, in body: EntityText) {
    let commit = replica.transact(recordingUndoIn: &history) {
      $0.insertText(String(scalar), at: position, in: body)
    }
    send(session.pushEncoded(commit, from: replica))
  }

  /// Takes back this device's latest step of typing and queues the frame for the peer.
  mutating func undo() {
    guard let commit = replica.undo(&history) else { return }
    send(session.pushEncoded(commit, from: replica))
  }

  mutating func send(_ bytes: [UInt8]) {
    outbox.append(bytes)
    bytesSent += bytes.count
  }

  /// Hands everything queued to `peer`, in order.
  mutating func flush(to peer: inout Device) throws {
    for bytes in outbox { try peer.session.receive(encoded: bytes, into: &peer.replica) }
    outbox = []
  }

  func text(of body: EntityText) -> String { replica.document.string(of: body) }

  /// The length of `body` in scalars, where typing at the end goes: O(1).
  func end(of body: EntityText) -> Int { replica.document.count(of: body) }
}

/// Runs the handshake until both sides fall quiet.
func handshake(_ a: inout Device, _ b: inout Device) throws {
  while true {
    let fromA = a.session.makeEncodedMessage(for: a.replica)
    if let fromA { a.send(fromA) }
    try a.flush(to: &b)
    let fromB = b.session.makeEncodedMessage(for: b.replica)
    if let fromB { b.send(fromB) }
    try b.flush(to: &a)
    if fromA == nil && fromB == nil { return }
  }
}

var phone = Device(id: 0xA11CE)
var laptop = Device(id: 0xB0B)
phone.replica.create(Note(title: "Standup"), id: "standup")
let note = try EntityText(\Note.body, of: "standup")
phone.replica.transact { $0.insertText("Standup\n", at: 0, in: note) }
try handshake(&phone, &laptop)
print("connected: the laptop reads \(laptop.text(of: note).debugDescription)")
phone.bytesSent = 0
laptop.bytesSent = 0
// The phone's user has the cursor right after "Standup": an anchor keeps it there
// whatever the laptop types before it.
let cursor = phone.replica.document.anchor(at: 7, affinity: .preceding, in: note)

// Both type at once, one character per transaction: the phone appends an item, the
// laptop types a heading above everything. Frames reach the other side a few
// keystrokes late, so the edits are truly concurrent.
let item = Array("- ship the sync fix\n".unicodeScalars)
let heading = Array("Monday ".unicodeScalars)
for step in 0..<max(item.count, heading.count) {
  if step < item.count {
    phone.type(item[step], at: phone.end(of: note), in: note)
  }
  if step < heading.count { laptop.type(heading[step], at: step, in: note) }
  if step % 4 == 3 {
    try phone.flush(to: &laptop)
    try laptop.flush(to: &phone)
  }
}
try phone.flush(to: &laptop)
try laptop.flush(to: &phone)
phone.history.stopGrouping()  // the item is one step; what comes next, another
for (name, device, typed) in [("phone", phone, item.count), ("laptop", laptop, heading.count)] {
  let each = String(format: "%.1f", Double(device.bytesSent) / Double(typed))
  print("\(name) typed \(typed) characters in \(device.bytesSent) bytes (\(each) per keystroke)")
}
print("live: identical = \(phone.replica.encodedState() == laptop.replica.encodedState())")
let held = phone.replica.document.position(of: cursor, in: note) ?? -1
let word = phone.text(of: note).unicodeScalars.prefix(held).suffix(7)
print(
  "cursor: 7 -> \(held), still after \(String(String.UnicodeScalarView(word)).debugDescription)")

// The connection drops while the phone types: those frames never arrive.
for scalar in "- lunch at 12\n".unicodeScalars {
  phone.type(scalar, at: phone.end(of: note), in: note)
}
phone.outbox = []
print("dropped: identical = \(phone.replica.encodedState() == laptop.replica.encodedState())")

// On reconnect both sessions start over; the handshake carries what the laptop lacks.
phone.session.reset()
laptop.session.reset()
try handshake(&phone, &laptop)
let same = phone.replica.encodedState() == laptop.replica.encodedState()
print("reconnected: identical = \(same)")
print(laptop.text(of: note), terminator: "")

// The phone's user presses Undo twice: first the lunch line, then the item typed while
// the laptop typed its heading. Only the phone's characters go; "Monday " stays.
phone.undo()
phone.undo()
try phone.flush(to: &laptop)
let undone = phone.replica.encodedState() == laptop.replica.encodedState()
print("undo: the laptop reads \(laptop.text(of: note).debugDescription), identical = \(undone)")
exit(same && undone ? 0 : 1)
