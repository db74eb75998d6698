import Converge
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
}
