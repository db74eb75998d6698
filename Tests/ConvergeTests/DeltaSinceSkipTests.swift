import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// `Document.delta(since:)` skips a text without walking it when its latest events are
/// all below the peer's gap-free prefix; the skip must never hide an event.
@Suite struct DeltaSinceSkipTests {
  @Test func aSkippedTextHasNothingThePeerLacks() throws {
    var skipped = 0
    try forEachSeed(count: 300, base: 0x5_1CE) { random in
      let network = DocumentNetwork(replicaCount: 3, rounds: 12, using: &random)
      for replica in network.replicas {
        for peer in network.replicas {
          let known = peer.context
          let prefix = known.versionVector
          for record in replica.document.entities.values {
            for case .text(let storage) in record.fields.values {
              let text = storage.text
              let missing = text.delta(since: known)
              if !text.mayHaveEvents(unknownTo: prefix) {
                skipped += 1
                try ensure(missing.isEmpty, "a skipped text held \(missing)")
              }
            }
          }
        }
      }
      // Against a context without gaps that holds all its events, a text is skipped.
      for replica in network.replicas where !replica.context.hasGaps {
        let prefix = replica.context.versionVector
        for record in replica.document.entities.values {
          for case .text(let storage) in record.fields.values where storage.text.pendingCount == 0 {
            try ensure(
              !storage.text.mayHaveEvents(unknownTo: prefix), "its own events looked unknown")
          }
        }
      }
    }
    #expect(skipped > 100, "the skip was hardly exercised: \(skipped)")
  }

  /// A deferred text answers `mayHaveEvents(unknownTo:)` from its summary as its decoded
  /// text does, for every peer's prefix.
  @Test func aDeferredTextAnswersAsItsDecodedText() throws {
    var deferred = 0
    try forEachSeed(count: 200, base: 0x5_1D1) { random in
      let network = DocumentNetwork(replicaCount: 3, rounds: 12, using: &random)
      for (_, document) in try network.taggedLoads(using: &random) {
        for known in network.replicas.map(\.context) + [CausalContext()] {
          let prefix = known.versionVector
          for record in document.entities.values {
            for case .text(let storage) in record.fields.values where storage.isDeferred {
              deferred += 1
              let summary = storage.mayHaveEvents(unknownTo: prefix)
              let decoded = storage.text.mayHaveEvents(unknownTo: prefix)
              try ensure(summary == decoded, "summary \(summary), decoded text \(decoded)")
            }
          }
        }
      }
    }
    #expect(deferred > 500, "hardly any text was deferred: \(deferred)")
  }

  /// `keys(withEventsUnknownTo:)` (a store's pending entities at open) names exactly the
  /// entities of `delta(since:)`, for peers, for the empty context and for a document's
  /// own, whether its texts are deferred or not.
  @Test func keysWithEventsUnknownToAreTheDeltasEntities() throws {
    var named = 0
    try forEachSeed(count: 200, base: 0x5_1D0) { random in
      let network = DocumentNetwork(replicaCount: 3, rounds: 12, using: &random)
      for (replica, deferred) in try network.taggedLoads(using: &random) {
        for known in network.replicas.map(\.context) + [CausalContext(), replica.context] {
          let expected = Set(replica.document.delta(since: known).keys)
          named += expected.count
          for document in [replica.document, deferred] {
            let keys = document.keys(withEventsUnknownTo: known)
            try ensure(Set(keys) == expected, "\(Set(keys)) against \(expected)")
          }
        }
      }
    }
    #expect(named > 500, "hardly any entity was named: \(named)")
  }

  /// The entities the event index lists for a peer are every entity whose presence may
  /// hold an event the peer lacks, so the index never hides one; on a document whose
  /// stale entries were rebuilt, too.
  @Test func theEventIndexListsEveryEntityAPeerMayLack() throws {
    var listed = 0
    try forEachSeed(count: 200, base: 0x5_1CF) { random in
      let network = DocumentNetwork(replicaCount: 3, rounds: 12, using: &random)
      for replica in network.replicas {
        let document = replica.document
        document.events.checkCovers(document.entities)
        for peer in network.replicas {
          let prefix = peer.context.versionVector
          let lacking = document.entities.values.indices.filter {
            document.entities.values[$0].presence.mayHaveEvents(unknownTo: prefix)
          }
          let listing = document.events.entities(withEventsAbove: prefix, limit: .max)
          try ensure(listing != nil, "no list without a limit")
          let touched = listing ?? []
          listed += touched.count
          try ensure(
            touched == touched.sorted() && Set(touched).count == touched.count, "\(touched)")
          try ensure(
            Set(lacking).isSubset(of: touched),
            "the index hid \(Set(lacking).subtracting(touched))")
          let rebuilt = EventIndex(document.entities)
          try ensure(
            rebuilt.entities(withEventsAbove: prefix, limit: .max) == lacking,
            "a rebuilt index lists exactly the entities a peer may lack")
        }
      }
    }
    #expect(listed > 100)
  }
}
