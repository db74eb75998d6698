import Converge
import ConvergeTestSupport
import Testing

#if canImport(Observation)
  import Foundation
  import Observation

  /// A flag an observation callback may set from any thread.
  final class ChangeFlag: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var raised = false
    func raise() { lock.withLock { raised = true } }
    var isRaised: Bool { lock.withLock { raised } }
  }

  @MainActor
  @Suite struct ReplicaStoreTests {
    /// The store records its transactions: undo and redo take back its own edits, publish
    /// the change and hand the commit to `onCommit` like any transaction.
    @Test func undoAndRedoGoThroughTheStore() {
      let note = EntityKey(type: "note", id: "n1")
      let store = ReplicaStore(
        replica: Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0)),
        undoHistory: UndoHistory(groupingInterval: .zero))
      var committed: [Commit] = []
      store.onCommit = { committed.append($0) }
      #expect(!store.canUndo)
      store.transact { $0.insertText("milk", at: 0, in: "body", of: note) }
      var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(0))
      laptop.apply(committed[0].delta)
      store.apply(laptop.transact { $0.insertText(" and eggs", at: 4, in: "body", of: note) }.delta)
      #expect(store.canUndo)
      let undone = store.undo()
      #expect(store.replica.document.text(of: "body", in: note) == " and eggs")
      #expect(committed.count == 2 && committed.last?.delta == undone?.delta)
      #expect(store.lastChanges[note]?.fields == ["body"])
      #expect(store.isPending(note))
      #expect(store.canRedo && !store.canUndo)
      store.redo()
      #expect(store.replica.document.text(of: "body", in: note) == "milk and eggs")
      #expect(committed.count == 3)
      #expect(store.undo() != nil)
      store.stopUndoGrouping()
      #expect(store.undo() == nil)
    }

    @Test func changesAreStreamedCommittedAndObserved() async {
      var random = SeededGenerator(seed: 4)
      let store = ReplicaStore(replica: .seeded(using: &random))
      var committed: [Commit] = []
      store.onCommit = { committed.append($0) }
      let stream = store.changes()
      let observedChange = ChangeFlag()
      withObservationTracking {
        _ = store.replica.document.keys
      } onChange: {
        observedChange.raise()
      }
      let key = EntityKey(type: "note", id: "n1")
      store.transact { $0.create(key) }
      var other = Replica.seeded(using: &random)
      let remote = other.transact { $0.setValue(.string("Hi"), for: "title", of: key) }
      store.apply(remote.delta)

      var iterator = stream.makeAsyncIterator()
      let first = await iterator.next()
      let second = await iterator.next()
      #expect(first?.created == [key])
      #expect(second?.updated == [key])
      #expect(committed.count == 1)
      #expect(observedChange.isRaised)
      #expect(store.lastChanges[key]?.fields == ["title"])
    }

    @Test func framesFromAPeerArePublished() throws {
      let phone = ReplicaStore(replica: Replica(id: ReplicaID(rawValue: 1)))
      let laptop = ReplicaStore(replica: Replica(id: ReplicaID(rawValue: 2)))
      var phoneSession = SyncSession()
      var laptopSession = SyncSession()
      var frames: [[UInt8]] = []
      phone.onCommit = { frames.append(phoneSession.pushEncoded($0, from: phone.replica)) }
      let key = EntityKey(type: "note", id: "n1")
      for (offset, scalar) in "Hey".unicodeScalars.enumerated() {
        phone.transact { $0.insertText(String(scalar), at: offset, in: "body", of: key) }
      }
      for frame in frames { try laptop.receive(encoded: frame, through: &laptopSession) }
      #expect(laptop.replica.document.text(of: "body", in: key) == "Hey")
      #expect(laptop.lastChanges[key] != nil)
      // A repeated frame is recognised and changes nothing.
      try laptop.receive(encoded: frames[1], through: &laptopSession)
      #expect(laptop.replica.document.text(of: "body", in: key) == "Hey")
      var stranger = SyncSession()
      #expect(throws: ConvergeDecodingError.frameOutOfSequence) {
        try laptop.receive(encoded: frames[1], through: &stranger)
      }
    }

    @Test func aHandshakeClearsThePendingBadge() {
      let phone = ReplicaStore(replica: Replica(id: ReplicaID(rawValue: 1)))
      let laptop = ReplicaStore(replica: Replica(id: ReplicaID(rawValue: 2)))
      var phoneSession = SyncSession()
      var laptopSession = SyncSession()
      let groceries = EntityKey(type: "note", id: "groceries")
      let journal = EntityKey(type: "note", id: "journal")
      phone.transact { $0.setValue(.string("Groceries"), for: "title", of: groceries) }
      phone.transact { $0.setValue(.string("Journal"), for: "title", of: journal) }
      #expect(phone.pendingCount == 2)
      #expect(phone.isPending(groceries) && phone.isPending(journal))

      // The handshake until quiet: each side states its context and sends what the other
      // lacks; the laptop's answer states a context that holds both notes.
      var message = phone.makeMessage(for: &phoneSession)
      var towardsLaptop = true
      while let current = message {
        if towardsLaptop {
          laptop.receive(current, through: &laptopSession)
          message = laptop.makeMessage(for: &laptopSession)
        } else {
          phone.receive(current, through: &phoneSession)
          message = phone.makeMessage(for: &phoneSession)
        }
        towardsLaptop.toggle()
      }
      #expect(laptop.replica.document == phone.replica.document)
      #expect(phone.pendingCount == 0)
      #expect(!phone.isPending(groceries))
      // What the laptop received is the phone's, so nothing is pending there either.
      #expect(laptop.pendingCount == 0)

      // A later edit is pending again until the next acknowledgement; a pushed delta from
      // the peer does not acknowledge it.
      phone.transact { $0.setValue(.string("Groceries!"), for: "title", of: groceries) }
      #expect(phone.pendingEntities == [groceries])
      let laptopEdit = laptop.transact {
        $0.setValue(.string("Journal, 25 Nov"), for: "title", of: journal)
      }
      phone.receive(laptopSession.push(laptopEdit, from: laptop.replica), through: &phoneSession)
      #expect(phone.pendingEntities == [groceries])
      phone.recordAcknowledgement(phone.replica.context)
      #expect(phone.pendingCount == 0)
    }

    @Test func anAcknowledgedContextFromAnEarlierLaunchIsKept() {
      var replica = Replica(id: ReplicaID(rawValue: 1))
      let synced = EntityKey(type: "note", id: "synced")
      let unsynced = EntityKey(type: "note", id: "unsynced")
      replica.transact { $0.create(synced) }
      let acknowledged = replica.context
      replica.transact { $0.create(unsynced) }
      let store = ReplicaStore(replica: replica, acknowledged: acknowledged)
      #expect(store.pendingEntities == [unsynced])
    }
  }
#endif
