import Converge
import ConvergeTestSupport
import Testing

/// `Document.values(of:ofType:)`: one field of every visible entity of a type, as a list
/// view reads it.
@Suite struct FieldListingTests {
  @Test func listsTheFieldOfEveryVisibleEntityOfTheType() {
    var replica = Replica(id: ReplicaID(rawValue: 1))
    let milk = EntityKey(type: "note", id: "milk")
    let eggs = EntityKey(type: "note", id: "eggs")
    let gone = EntityKey(type: "note", id: "gone")
    let untitled = EntityKey(type: "note", id: "untitled")
    let task = EntityKey(type: "task", id: "milk")
    replica.transact { tx in
      tx.setValue(.string("Milk"), for: "title", of: milk)
      tx.setValue(.string("Eggs"), for: "title", of: eggs)
      tx.setValue(.string("Gone"), for: "title", of: gone)
      tx.create(untitled)
      tx.setValue(.string("Buy milk"), for: "title", of: task)
    }
    replica.transact { $0.delete(gone) }
    let document = replica.document

    let titles = document.values(of: "title", ofType: "note")
    let sorted = titles.sorted { $0.value < $1.value }  // as the list shows them
    #expect(sorted.map(\.key) == [eggs, milk])
    #expect(sorted.map(\.value) == [.string("Eggs"), .string("Milk")])
    #expect(document.values(of: "title", ofType: "task").map(\.key) == [task])
    #expect(document.values(of: "body", ofType: "note").isEmpty)
  }

  /// Entities of two types whose field lists vary (so some share a list and some do
  /// not), with the listed field sometimes missing, deleted or of another kind: the
  /// listing equals reading each visible entity's field one at a time.
  @Test func matchesReadingEachEntity() throws {
    let names = ["body", "due", "pinned", "tags", "title"]
    try forEachSeed(count: 60, base: 0xF1E7D) { random in
      var replica = Replica(id: ReplicaID(rawValue: 1))
      for _ in 0..<Int.random(in: 1...40, using: &random) {
        let key = EntityKey(
          type: Bool.random(using: &random) ? "note" : "task",
          id: "\(Int.random(in: 0..<25, using: &random))")
        replica.transact { tx in
          for name in names.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random)) {
            switch Int.random(in: 0..<4, using: &random) {
            case 0: tx.insert(.string("x"), into: name, of: key)
            case 1: tx.insertText("x", at: 0, in: name, of: key)
            default: tx.setValue(.int(Int64.random(in: 0..<9, using: &random)), for: name, of: key)
            }
          }
          tx.create(key)
          if Int.random(in: 0..<6, using: &random) == 0 { tx.delete(key) }
        }
      }
      let document = replica.document
      for type in ["note", "task"] {
        for field in names {
          let listed = document.values(of: field, ofType: type).sorted { $0.key < $1.key }
          let expected = document.keys(ofType: type).compactMap { key in
            document.value(of: field, in: key).map { (key: key, value: $0) }
          }
          guard listed.map(\.key) == expected.map(\.key),
            listed.map(\.value) == expected.map(\.value)
          else {
            throw ExpectationFailure("\(type).\(field): listed \(listed), read \(expected)")
          }
        }
      }
    }
  }
}
