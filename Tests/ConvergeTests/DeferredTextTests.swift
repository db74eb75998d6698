import Converge
import ConvergeTestSupport
import Testing

/// Snapshots loaded with their tag (``Document/init(decoding:tag:key:)``) defer their
/// texts, and are the documents a checked load gives, before and after edits.
@Suite struct DeferredTextTests {
  @Test func aTaggedLoadDefersTextsAndEqualsACheckedLoad() throws {
    var deferred = 0
    try forEachSeed(count: 60, base: 0xDEF_E000) { random in
      let network = DocumentNetwork(replicaCount: 3, rounds: 14, using: &random)
      for (replica, tagged) in try network.taggedLoads(using: &random) {
        let bytes = replica.document.encoded()
        let checked = try Document(decoding: bytes)
        var loaded = tagged
        deferred += loaded.deferredTextCount
        #expect(loaded == checked)
        #expect(loaded.encoded() == bytes)
        #expect(loaded.hasPendingChanges == checked.hasPendingChanges)
        // What a peer lacks, read from deferred texts' summaries where they have one.
        for known in network.replicas.map(\.context) + [CausalContext()] {
          #expect(loaded.delta(since: known) == checked.delta(since: known))
        }
        for key in checked.keys {
          for name in checked.fieldNames(of: key) {
            #expect(loaded.sequence(of: name, in: key) == checked.sequence(of: name, in: key))
            #expect(loaded.text(of: name, in: key) == checked.text(of: name, in: key))
          }
        }
        // Edits reach deferred texts through the one path edits take; the documents
        // stay equal, and what waits is still known.
        var edited = checked
        for delta in network.deltas {
          loaded.apply(delta)
          edited.apply(delta)
        }
        #expect(loaded == edited)
        #expect(loaded.encoded() == edited.encoded())
        #expect(loaded.hasPendingChanges == edited.hasPendingChanges)
      }
    }
    #expect(deferred > 0)
  }

  @Test func aTagOfAnotherKeyOrOtherBytesIsACheckedLoad() throws {
    try forEachSeed(count: 20, base: 0xDEF_E100) { random in
      let network = DocumentNetwork(replicaCount: 2, rounds: 10, using: &random)
      let key = SnapshotKey(using: &random)
      let other = SnapshotKey(low: key.low, high: key.high ^ 1)
      let bytes = network.replicas[0].document.encoded()
      let loaded = try Document(decoding: bytes, tag: other.tag(of: bytes), key: key)
      #expect(loaded.deferredTextCount == 0)
      #expect(loaded == network.replicas[0].document)
      // Damaged bytes with the tag of the undamaged ones fail as a checked load fails.
      guard
        let damaged = mutateBody(
          of: bytes, splicingWith: network.replicas[1].document.encoded(), using: &random)
      else { return }
      let tag = key.tag(of: bytes)
      #expect(
        throwsAlike(
          { try Document(decoding: damaged) },
          { try Document(decoding: damaged, tag: tag, key: key) }))
    }
  }

  /// Bytes a key holder tagged are trusted for their content only: damaged anywhere else
  /// they fail as in a checked load, and damaged content never traps, whether read,
  /// edited or saved. What a checked load accepts, a tagged load accepts equally
  /// (``DecodeProperty/checkTagged(_:)``, on damaged libraries of notes).
  @Test func taggedDamageNeverTraps() throws {
    var trusted = 0
    try forEachSeed(count: 300, base: 0xDEF_E200) { random in
      let network = DocumentNetwork(replicaCount: 2, rounds: 10, using: &random)
      let bytes = network.replicas[0].document.encoded()
      guard
        let damaged = mutateBody(
          of: bytes, splicingWith: network.replicas[1].document.encoded(), using: &random)
      else { return }
      if try DecodeProperty.checkTagged(damaged) { trusted += 1 }
    }
    // Some damage fell in content, which only the tag vouched for.
    #expect(trusted > 0)
  }

  /// Whether both calls throw equal errors, or return equal documents.
  func throwsAlike(_ first: () throws -> Document, _ second: () throws -> Document) -> Bool {
    switch (Result(catching: first), Result(catching: second)) {
    case (.success(let a), .success(let b)): a == b
    case (.failure(let a), .failure(let b)): "\(a)" == "\(b)"
    default: false
    }
  }
}
