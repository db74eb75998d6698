import Converge
import Testing

// The README's opening example, kept compiling and passing. Edit both together.

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

  let note = try #require(phone.get(Note.self, id: id))
  #expect(note.title == "Shopping")
  #expect(note.body == "oat milk, eggs")
  #expect(note.tags == ["home"])
  #expect(laptop.get(Note.self, id: id)?.body == note.body)
}
