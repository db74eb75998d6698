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
  }
#endif
