import Converge
import ConvergeTraces

/// The trace typed one transaction per edit, without and with an ``UndoHistory``
/// recording it (what recording costs a keystroke), then every recorded step undone and
/// redone (the text must come back empty, then whole).
enum UndoBench {
  struct Report {
    var typingMicrosecondsPerEdit: Double
    var recordingMicrosecondsPerEdit: Double
    var steps: Int
    var undoAllMilliseconds: Double
    var redoAllMilliseconds: Double
    var roundTrip: Bool

    var overheadPercent: Double {
      (recordingMicrosecondsPerEdit / Swift.max(typingMicrosecondsPerEdit, 1e-9) - 1) * 100
    }
  }

  /// A clock the history reads: 10 ms pass per edit and a second after every 50th, so
  /// the default 500 ms grouping makes a step of every 50 edits, as a typist who pauses
  /// every few seconds would.
  final class StepClock: @unchecked Sendable {  // read and advanced on one thread
    var milliseconds: UInt64 = 0
  }

  static func run(_ trace: SequentialTrace, runs: Int) -> Report {
    let clock = ContinuousClock()
    var plain: [Double] = []
    var recorded: [Double] = []
    var last: (Replica, UndoHistory)?
    // Alternating, so that both see the same machine load.
    for _ in 0..<Swift.max(1, runs) {
      let start = clock.now
      let replica = typePlain(trace)
      plain.append(milliseconds(clock.now - start))
      let recordingStart = clock.now
      let typed = typeRecording(trace)
      recorded.append(milliseconds(clock.now - recordingStart))
      if replica.document != typed.0.document { return failed }
      last = typed
    }
    guard var (replica, history) = last else { return failed }
    let key = SequentialTrace.benchKey
    let field = SequentialTrace.benchField
    var steps = 0
    let undoStart = clock.now
    while replica.undo(&history) != nil { steps += 1 }
    let undoTime = milliseconds(clock.now - undoStart)
    let emptied = replica.document.text(of: field, in: key).isEmpty
    let redoStart = clock.now
    while replica.redo(&history) != nil {}
    let redoTime = milliseconds(clock.now - redoStart)
    let restored = replica.document.text(of: field, in: key) == trace.endContent
    let edits = Double(Swift.max(1, trace.patches.count))
    return Report(
      typingMicrosecondsPerEdit: (plain.min() ?? 0) * 1000 / edits,
      recordingMicrosecondsPerEdit: (recorded.min() ?? 0) * 1000 / edits,
      steps: steps, undoAllMilliseconds: undoTime, redoAllMilliseconds: redoTime,
      roundTrip: emptied && restored)
  }

  private static let failed = Report(
    typingMicrosecondsPerEdit: 0, recordingMicrosecondsPerEdit: 0, steps: 0,
    undoAllMilliseconds: 0, redoAllMilliseconds: 0, roundTrip: false)

  /// One transaction per edit, nothing recorded.
  @inline(never)
  static func typePlain(_ trace: SequentialTrace) -> Replica {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    for patch in trace.patches {
      replica.transact { SequentialTrace.edit(patch, in: &$0) }
    }
    return replica
  }

  /// One transaction per edit, each recorded in an undo history (the profiler's part:
  /// `converge bench TRACE --only undo`).
  @inline(never)
  static func typeRecording(_ trace: SequentialTrace) -> (Replica, UndoHistory) {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    let stepClock = StepClock()
    var history = UndoHistory(clock: WallClock { stepClock.milliseconds })
    for (index, patch) in trace.patches.enumerated() {
      stepClock.milliseconds += index % 50 == 0 ? 1_000 : 10
      replica.transact(recordingUndoIn: &history) { SequentialTrace.edit(patch, in: &$0) }
    }
    return (replica, history)
  }
}
