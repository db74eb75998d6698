import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// A note's list row: three of the note's fields, read without its body.
struct SampleNoteRow: EntityModel, Equatable {
  static let entityType = SampleNote.entityType
  var title = ""
  var tags: Set<String> = []
  var pinned = false

  static let schema = EntitySchema<SampleNoteRow>(
    .register("title", \.title), .set("tags", \.tags), .register("pinned", \.pinned))
}

/// The typed write path records what the raw transaction records, and a projection model
/// reads some of an entity's fields.
@Suite struct ModelWriteTests {
  let key = EntityKey(type: "note", id: "n1")

  /// A replica holding note `n1`, its clock fixed so that two copies of it hand out the
  /// same dots and timestamps.
  func replicaWithNote() -> Replica {
    var random = SeededGenerator(seed: 45)
    var replica = Replica.seeded(using: &random)
    replica.create(
      SampleNote(title: "Groceries", body: "milk, eggs 🥚 and bread", tags: ["home", "later"]),
      id: "n1")
    return replica
  }

  @Test func anUpdateRecordsTheBytesOfTheSameTransactionByHand() throws {
    var typed = replicaWithNote()
    var raw = typed
    let edited = try typed.update(SampleNote.self, id: "n1") {
      $0.title = "Shopping"
      $0.body = "milk, two eggs 🥚🥚 and bread"
      $0.tags.remove("later")
      $0.tags.insert("errand")
      $0.pinned = true
    }
    // In schema order: title, body (the changed range), tags (removes, then adds), pinned.
    let byHand = raw.transact { tx in
      tx.setValue(.string("Shopping"), for: "title", of: key)
      tx.deleteText(6..<11, in: "body", of: key)
      tx.insertText("two eggs 🥚", at: 6, in: "body", of: key)
      tx.remove(.string("later"), from: "tags", of: key)
      tx.insert(.string("errand"), into: "tags", of: key)
      tx.setValue(.bool(true), for: "pinned", of: key)
    }
    #expect(edited.delta.encoded() == byHand.delta.encoded())
    #expect(typed.document == raw.document)
    #expect(typed.get(SampleNote.self, id: "n1")?.body == "milk, two eggs 🥚🥚 and bread")
  }

  @Test func anUpdateWritesOnlyTheFieldsThatChanged() throws {
    var typed = replicaWithNote()
    var raw = typed
    let edited = try typed.update(SampleNote.self, id: "n1") { $0.tags.insert("errand") }
    let byHand = raw.transact { $0.insert(.string("errand"), into: "tags", of: key) }
    #expect(edited.delta.encoded() == byHand.delta.encoded())
    let unchanged = try typed.update(SampleNote.self, id: "n1") { $0.title = "Groceries" }
    #expect(unchanged.delta.context.isEmpty)
  }

  @Test func aCreateRecordsTheBytesOfTheSameTransactionByHand() {
    var random = SeededGenerator(seed: 46)
    var typed = Replica.seeded(using: &random)
    var raw = typed
    let created = typed.create(
      SampleNote(title: "Groceries", body: "milk", tags: ["b", "a"]), id: "n1")
    // Defaults (pinned, archived, folder) are not written; set elements go in order.
    let byHand = raw.transact { tx in
      tx.create(key)
      tx.setValue(.string("Groceries"), for: "title", of: key)
      tx.insertText("milk", at: 0, in: "body", of: key)
      tx.insert(.string("a"), into: "tags", of: key)
      tx.insert(.string("b"), into: "tags", of: key)
    }
    #expect(created.commit.delta.encoded() == byHand.delta.encoded())
  }

  @Test func aProjectionReadsSomeFieldsAndItsUpdateKeepsTheRest() throws {
    var replica = replicaWithNote()
    replica.create(SampleNote(title: "Taxes", body: "receipts", pinned: true), id: "n0")
    #expect(
      replica.all(SampleNoteRow.self).map(\.value) == [
        SampleNoteRow(title: "Taxes", tags: [], pinned: true),
        SampleNoteRow(title: "Groceries", tags: ["home", "later"], pinned: false),
      ])
    #expect(replica.all(SampleNoteRow.self).map(\.id) == ["n0", "n1"])
    try replica.update(SampleNoteRow.self, id: "n1") { $0.pinned = true }
    let note = try #require(replica.get(SampleNote.self, id: "n1"))
    #expect(note.pinned && note.body == "milk, eggs 🥚 and bread")
  }

  @Test func allSortsIdsByTheirBytes() {
    var random = SeededGenerator(seed: 47)
    var replica = Replica.seeded(using: &random)
    let ids = [
      "b", "a", "ab", "abcdefgh", "abcdefghi", "abcdefgg", "", "é", "z", "10", "9", "a\u{0}",
    ]
    for id in ids { replica.create(SampleNoteRow(title: id), id: id) }
    let expected = ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    #expect(replica.all(SampleNoteRow.self).map(\.id) == expected)
    #expect(replica.document.keys(ofType: "note").map(\.id) == expected)
    // Ids sharing a long prefix are ordered by the bytes after it.
    var shared = Replica.seeded(using: &random)
    let long = ["note-0000-b", "note-0000-a", "note-0000-ab", "note-0000-", "note-0000-abcdefghij"]
    for id in long { shared.create(SampleNoteRow(title: id), id: id) }
    #expect(
      shared.all(SampleNoteRow.self).map(\.id)
        == long.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
  }

  /// The edit found on UTF-8 is the one a scalar-by-scalar comparison finds.
  @Test func theScalarEditMatchesAScalarComparison() {
    var random = SeededGenerator(seed: 48)
    let alphabet: [Character] = ["a", "b", "é", "🥚", "🥛", "\u{0301}", "ж", " "]
    func draw() -> String {
      String(
        (0..<Int.random(in: 0..<8, using: &random)).map { _ in
          alphabet.randomElement(using: &random) ?? "a"
        })
    }
    for _ in 0..<2_000 {
      let (old, new) = (draw(), draw())
      let edit = ScalarEdit(from: old, to: new)
      let (oldScalars, newScalars) = (Array(old.unicodeScalars), Array(new.unicodeScalars))
      var prefix = 0
      let limit = min(oldScalars.count, newScalars.count)
      while prefix < limit, oldScalars[prefix] == newScalars[prefix] { prefix += 1 }
      var suffix = 0
      while suffix < limit - prefix,
        oldScalars[oldScalars.count - 1 - suffix] == newScalars[newScalars.count - 1 - suffix]
      {
        suffix += 1
      }
      var inserted = String.UnicodeScalarView()
      inserted.append(contentsOf: newScalars[prefix..<(newScalars.count - suffix)])
      #expect(edit.deleted == prefix..<(oldScalars.count - suffix), "\(old) → \(new)")
      #expect(edit.inserted.unicodeScalars.elementsEqual(inserted), "\(old) → \(new)")
    }
  }
}

extension ModelWriteTests {
  @Test func aCreatedEntityWithoutAnIDIsNamedByItsCreationEvent() throws {
    var phone = Replica(id: ReplicaID(rawValue: 0x0123_4567_89AB_CDEF), wallClock: .fixed(1))
    var laptop = Replica(id: ReplicaID(rawValue: 0x0123_4567_89AB_CDEE), wallClock: .fixed(1))
    let first = phone.create(SampleNote(title: "a")).id
    let second = phone.create(SampleNote(title: "b")).id
    let elsewhere = laptop.create(SampleNote(title: "c")).id
    // The replica's 64 bits from the top, six at a time, then the counter in four digits.
    #expect(first == "-3YGLT8ewrj---0")
    // Event 2 wrote the first note's title: the second note is event 3.
    #expect(second == "-3YGLT8ewrj---2" && elsewhere != first)
    // A replica's ids sort as it created them.
    var ids = [first, second]
    for index in 0..<70 { ids.append(phone.create(SampleNote(title: "\(index)")).id) }
    #expect(ids.sorted() == ids && ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } == ids)
    #expect(phone.get(SampleNote.self, id: second)?.title == "b")
    // Naming takes no event of its own: the creation takes the dot the name shows.
    var named = ""
    #expect(phone.transact { named = $0.newEntityID() }.delta.context.isEmpty)
    #expect(named == phone.create(SampleNote(title: "d")).id)
  }
}
