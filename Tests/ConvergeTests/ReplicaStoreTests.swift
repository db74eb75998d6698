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
  }
#endif
