import Converge
import Observation
import Testing

@testable import ConvergeStore

/// A note as an app declares it, and the row a list view reads of it.
private struct Card: EntityModel {
  static let entityType = "card"
  var title = ""
  var body = ""
  var tags: Set<String> = []
  var pinned = false

  static let schema = EntitySchema<Card>(
    .register("title", \.title), .text("body", \.body), .set("tags", \.tags),
    .register("pinned", \.pinned))
}

private struct CardRow: EntityModel {
  static let entityType = "card"
  var title = ""
  var pinned = false

  static let schema = EntitySchema<CardRow>(
    .register("title", \.title), .register("pinned", \.pinned))
}

/// The typed calls on the one owner (`create`, `update`, `delete`, `get`, `all`) are its
/// transactions: recorded for undo, saved, counted as pending and published like any other.
@MainActor
@Suite struct DeviceReplicaModelTests {
  @Test func theTypedCallsAreTransactionsOfTheOwner() throws {
    let owner = try DeviceReplica.inMemory()
    let (id, created) = owner.create(Card(title: "Groceries", body: "milk"))
    #expect(created.changes.created == [EntityKey(type: "card", id: id)])
    #expect(owner.pendingCount == 1 && owner.canUndo)
    #expect(owner.get(Card.self, id: id)?.body == "milk")

    // An update writes only what changed: the same delta as the raw transaction's.
    let fixed = WallClock { 1_800_000_000_000 }
    let document = owner.replica.document
    var raw = Replica(document: document, id: ReplicaID(rawValue: 77), wallClock: fixed)
    let rawCommit = raw.transact {
      $0.setValue(.bool(true), for: "pinned", of: EntityKey(type: "card", id: id))
    }
    var typed = Replica(document: document, id: ReplicaID(rawValue: 77), wallClock: fixed)
    let typedCommit = try typed.update(CardRow.self, id: id) { $0.pinned = true }
    #expect(typedCommit.delta.encoded() == rawCommit.delta.encoded())

    owner.stopUndoGrouping()  // the update is an undo step of its own
    let updated = try owner.update(CardRow.self, id: id) { $0.pinned = true }
    #expect(updated.delta.keys == [EntityKey(type: "card", id: id)])
    #expect(owner.all(CardRow.self).map(\.value.pinned) == [true])
    #expect(owner.get(Card.self, id: id)?.body == "milk")  // the row left the body alone

    owner.undo()
    #expect(owner.get(Card.self, id: id)?.pinned == false)
    owner.redo()
    #expect(owner.get(Card.self, id: id)?.pinned == true)

    owner.delete(Card.self, id: id)
    #expect(owner.get(Card.self, id: id) == nil && owner.all(CardRow.self).isEmpty)
  }

  @Test func anUpdateOfAMissingEntityThrowsAndChangesNothing() throws {
    let owner = try DeviceReplica.inMemory()
    let (id, _) = owner.create(Card(title: "Kept"))
    owner.delete(Card.self, id: id)
    let before = owner.replica.encodedState()
    let commits = owner.durableCommits
    let undoDepth = owner.undoHistory
    let woken = ObservedFlag()
    withObservationTracking {
      _ = (owner.replica, owner.pendingCount)
    } onChange: {
      woken.raise()
    }
    for missing in [id, "never-created"] {
      #expect(throws: ReplicaError.entityNotFound(EntityKey(type: "card", id: missing))) {
        try owner.update(Card.self, id: missing) { $0.title = "Lost" }
      }
    }
    #expect(owner.replica.encodedState() == before)
    #expect(owner.durableCommits == commits)
    #expect(owner.undoHistory.canUndo == undoDepth.canUndo)
    #expect(!woken.isRaised)
  }

  @Test func typedEditsSurviveAReopen() throws {
    let fileSystem = MemoryFileSystem()
    var settings = DocumentStore.Configuration()
    settings.fileSystem = fileSystem
    let owner = try DeviceReplica(directory: "/cards", configuration: settings)
    let (id, _) = owner.create(Card(title: "Draft", tags: ["work"]))
    try owner.update(Card.self, id: id) {
      $0.title = "Final"
      $0.tags.insert("done")
    }
    try owner.close()
    let reopened = try DeviceReplica(directory: "/cards", configuration: settings)
    let card = try #require(reopened.get(Card.self, id: id))
    #expect(card.title == "Final" && card.tags == ["work", "done"])
    #expect(reopened.id == owner.id && reopened.pendingCount == 1)
  }
}
