import Converge
import Testing

// The README's samples, kept compiling and passing. Edit both together:
// `DocumentationSampleCoverageTests` fails when a sample is missing here.

struct Note: EntityModel {
  static let entityType = "note"
  var title = ""
  var body = ""
  var tags: Set<String> = []

  static let schema = EntitySchema<Note>(
    .register("title", \.title), .text("body", \.body), .set("tags", \.tags))
}

@Test func readmeTwoDeviceNoteMerge() throws {
  var phone = Replica()
  var laptop = Replica()

  // The phone creates a note and the laptop receives it.
  let (id, created) = phone.create(Note(title: "Groceries", body: "milk"))
  laptop.apply(created.delta)

  // Both devices go offline and edit the same note.
  let onPhone = try phone.update(Note.self, id: id) {
    $0.title = "Shopping"
    $0.body += ", eggs"
  }
  let onLaptop = try laptop.update(Note.self, id: id) {
    $0.tags.insert("home")
    $0.body = "oat " + $0.body
  }

  // Back online: each applies the other's delta. No conflict to resolve.
  phone.apply(onLaptop.delta)
  laptop.apply(onPhone.delta)
  // Both now hold: title "Shopping", body "oat milk, eggs", tags ["home"].

  let note = try #require(phone.get(Note.self, id: id))
  #expect(note.title == "Shopping")
  #expect(note.body == "oat milk, eggs")
  #expect(note.tags == ["home"])
  #expect(laptop.get(Note.self, id: id)?.body == note.body)

  // "Saving and sending bytes", on a laptop that has not yet seen the phone's edit.
  laptop = Replica()
  laptop.apply(created.delta)
  let saved = phone.encodedState()  // a snapshot to store
  let restored = try Replica(restoring: saved)  // next launch: same document, fresh id
  let message = onPhone.delta.encoded()  // send it through any channel
  try laptop.apply(encodedDelta: message)  // all or nothing

  #expect(restored.document == phone.document && restored.id != phone.id)
  #expect(laptop.get(Note.self, id: id)?.title == "Shopping")
}

@Test func readmeLiveTypingFrames() throws {
  var phone = Replica()
  var laptop = Replica()
  var phoneSession = SyncSession()
  var laptopSession = SyncSession()
  let (id, _) = phone.create(Note(title: "Groceries"))
  while true {
    let a = phoneSession.makeMessage(for: phone)
    if let a { laptopSession.receive(a, into: &laptop) }
    let b = laptopSession.makeMessage(for: laptop)
    if let b { phoneSession.receive(b, into: &phone) }
    if a == nil && b == nil { break }
  }
  let commit = try phone.update(Note.self, id: id) { $0.body = "m" }

  let frame = phoneSession.pushEncoded(commit, from: phone)  // send it
  try laptopSession.receive(encoded: frame, into: &laptop)  // in order, on the laptop

  #expect(laptop.get(Note.self, id: id)?.body == "m")
}
