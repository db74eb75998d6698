import Converge
import ConvergeTestSupport
import ConvergeTraces
import Testing

/// Anchors through the whole automerge-paper trace: each resolves, at every check, to the
/// place a plain offset moved by every edit says it must be.
@Suite struct TextAnchorTraceTests {
  /// An anchor and the offset a model that knows nothing of ids keeps for it.
  struct Tracked {
    var anchor: TextAnchor
    var position: Int
    /// Whether its character is still there (a start or end anchor always is).
    var alive = true

    /// Moves the model's offset as `patch` (delete, then insert, at one position) moves
    /// the text around it. A deleted character's anchor sits in the gap it left, and text
    /// typed at that gap goes before the deleted characters, so after the anchor.
    mutating func apply(_ patch: TracePatch) {
      let (at, deleted, inserted) = (patch.position, patch.deleted, patch.inserted.count)
      let bound = anchor.affinity == .following ? position : position - 1
      if anchor.character == nil {
        if anchor.affinity == .following { position += inserted - deleted }
        return
      }
      if deleted > 0 {
        if alive, bound >= at, bound < at + deleted {
          alive = false
          position = at
        } else if alive {
          if bound >= at + deleted { position -= deleted }
        } else if at + deleted <= position {
          position -= deleted
        } else if at < position {
          position = at
        }
      }
      guard inserted > 0 else { return }
      let movesRight = alive && anchor.affinity == .preceding ? at < position : at <= position
      if movesRight { position += inserted }
    }
  }

  @Test func anchorsFollowEveryEditOfAutomergePaper() throws {
    let (patches, end) = try TraceReplayTests.load("automerge-paper.json.gz")
    var random = SeededGenerator(seed: baseSeed(0xA1C4))
    var text = SharedText(replica: ReplicaID(rawValue: 1))
    var tracked: [Tracked] = []
    for (step, patch) in patches.enumerated() {
      if step % 8_000 == 0 {
        for affinity in [TextAnchor.Affinity.following, .preceding] {
          let position = Int.random(in: 0...text.count, using: &random)
          tracked.append(
            Tracked(anchor: text.anchor(at: position, affinity: affinity), position: position))
        }
      }
      text.edit(at: patch.position, deleting: patch.deleted, inserting: patch.inserted)
      for index in tracked.indices { tracked[index].apply(patch) }
      guard step % 997 == 0 || step == patches.count - 1 else { continue }
      for item in tracked where text.position(of: item.anchor) != item.position {
        Issue.record(
          "seed \(random.seed) step \(step): \(item.anchor) at \(String(describing: text.position(of: item.anchor))), model \(item.position)"
        )
        return
      }
    }
    #expect(text.string == end)
    #expect(tracked.count == 2 * ((patches.count + 7_999) / 8_000))
  }
}
