import Converge
import ConvergeTestSupport
import ConvergeTraces
import Testing

/// Undo through a real editing trace: the first 8,000 edits of the automerge-paper trace
/// typed one transaction per edit, with a pause every 50 edits; undoing each step must
/// give back exactly the text before it, and redoing each step the text after it. (The
/// whole trace's round trip runs in `converge bench`, as `undo_redo_round_trip`.)
@Suite struct UndoTraceTests {
  /// A clock the history reads, advanced by the test (one thread).
  final class StepClock: @unchecked Sendable {
    var milliseconds: UInt64 = 0
  }

  @Test func undoingEveryStepOfATraceRetracesItsTexts() throws {
    let patches = try TraceReplayTests.load("automerge-paper.json.gz").0.prefix(8_000)
    let key = EntityKey(type: "trace", id: "document")
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    let clock = StepClock()
    var history = UndoHistory(clock: WallClock { clock.milliseconds })
    var before: [String] = []
    for (index, patch) in patches.enumerated() {
      if index % 50 == 0 {
        clock.milliseconds += 1_000
        before.append(replica.document.text(of: "text", in: key))
      } else {
        clock.milliseconds += 10
      }
      replica.transact(recordingUndoIn: &history) { tx in
        if patch.deleted > 0 {
          tx.deleteText(patch.position..<patch.position + patch.deleted, in: "text", of: key)
        }
        if !patch.inserted.isEmpty {
          var inserted = String.UnicodeScalarView()
          inserted.append(contentsOf: patch.inserted)
          tx.insertText(String(inserted), at: patch.position, in: "text", of: key)
        }
      }
    }
    before.append(replica.document.text(of: "text", in: key))
    var step = before.count - 1
    while replica.undo(&history) != nil {
      step -= 1
      guard step >= 0, replica.document.text(of: "text", in: key) == before[step] else {
        Issue.record("undo of step \(step) gave another text than the one before it")
        return
      }
    }
    #expect(step == 0)
    while replica.redo(&history) != nil {
      step += 1
      guard step < before.count, replica.document.text(of: "text", in: key) == before[step] else {
        Issue.record("redo of step \(step) gave another text than the one after it")
        return
      }
    }
    #expect(step == before.count - 1)
  }
}
