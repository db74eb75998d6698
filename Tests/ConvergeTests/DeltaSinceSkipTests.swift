import ConvergeTestSupport
import Testing

@testable import Converge

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
            for case .text(let text) in record.fields.values {
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
          for case .text(let text) in record.fields.values where text.pendingCount == 0 {
            try ensure(!text.mayHaveEvents(unknownTo: prefix), "its own events looked unknown")
          }
        }
      }
    }
    #expect(skipped > 100, "the skip was hardly exercised: \(skipped)")
  }
}
