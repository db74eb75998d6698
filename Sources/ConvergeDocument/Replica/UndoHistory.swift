/// The undo and redo stacks of one replica's own edits.
///
/// Record local transactions with ``Replica/transact(recordingUndoIn:_:)`` (a
/// `DeviceReplica`, in `ConvergeStore`, records its transactions itself);
/// ``Replica/undo(_:)`` then takes back the latest step and ``Replica/redo(_:)`` makes it
/// again. Transactions recorded within ``groupingInterval`` of the previous one join its
/// step, so a typed word or a burst of field edits undoes at once; ``stopGrouping()`` ends
/// a step early (call it when the cursor moves or a text view loses focus).
///
/// Undo issues new operations, like any edit, so its commit is sent to peers as usual.
/// It takes back this replica's edits only:
/// - typed text is deleted by the ids of the characters typed, so text another device
///   typed inside it stays; deleted text comes back where its characters stood;
/// - a register gets its previous value back only while the write being undone is still
///   the winning one: a later write, from this device or another, is never overwritten;
/// - an added tag is removed by this replica's adds alone (another device's add of the
///   same tag keeps it), and a removed tag is added again;
/// - a deleted entity comes back with all its fields; a created one is hidden by
///   removing this replica's events on it, so another device's concurrent edit keeps it.
///
/// Remote edits are never recorded, and a step whose every inverse was superseded by
/// remote edits is skipped. The history holds the inverses of its steps (ids and register
/// values; deleted text is read back from its tombstones) in memory; it is not saved.
///
/// ```swift
/// var replica = Replica()
/// var history = UndoHistory()
/// let note = EntityKey(type: "note", id: "n1")
/// replica.transact(recordingUndoIn: &history) { tx in
///   tx.insertText("Hello", at: 0, in: "body", of: note)
/// }
/// history.stopGrouping()  // or wait longer than the grouping interval
/// replica.transact(recordingUndoIn: &history) { tx in
///   tx.insertText(" world", at: 5, in: "body", of: note)
/// }
/// let undone = replica.undo(&history)  // "Hello"; send undone?.delta like any commit
/// replica.redo(&history)  // "Hello world" again
/// ```
public struct UndoHistory: Sendable {
  /// Transactions recorded within this interval of the previous one join its step.
  public var groupingInterval: Duration {
    didSet { groupingMilliseconds = Self.milliseconds(groupingInterval) }
  }
  /// The most steps the history keeps, `nil` for no limit (the default, as
  /// Foundation's `UndoManager`): a new step beyond it forgets the oldest. Lowering it
  /// takes effect at the next new step.
  public var maximumSteps: Int?
  private let clock: WallClock
  /// The steps to undo, the latest last; it may still grow while grouping lasts.
  var undoSteps: [UndoLog] = []
  var redoSteps: [UndoLog] = []
  var substitutions = UndoSubstitutions()
  /// When the latest step was recorded, in the clock's milliseconds; `nil` once grouping
  /// stopped.
  private var lastRecorded: UInt64?
  /// When the step being recorded was opened, and whether it continues the latest one.
  private var openedAt: UInt64 = 0
  private var continuing = false

  /// An empty history that groups transactions recorded within `groupingInterval` of each
  /// other (500 ms by default, as Yjs's `captureTimeout`), timed by `clock` (pass one only
  /// in tests).
  public init(
    groupingInterval: Duration = .milliseconds(500), maximumSteps: Int? = nil,
    clock: WallClock = .system
  ) {
    self.groupingInterval = groupingInterval
    self.maximumSteps = maximumSteps
    self.clock = clock
    groupingMilliseconds = Self.milliseconds(groupingInterval)
  }

  /// ``groupingInterval`` in the clock's milliseconds.
  private var groupingMilliseconds: UInt64

  private static func milliseconds(_ interval: Duration) -> UInt64 {
    let parts = interval.components
    guard parts.seconds >= 0 else { return 0 }
    let (whole, overflow) = UInt64(parts.seconds).multipliedReportingOverflow(by: 1000)
    let (sum, carry) = whole.addingReportingOverflow(
      UInt64(clamping: parts.attoseconds / 1_000_000_000_000_000))
    return overflow || carry ? .max : sum
  }

  /// Whether there is a step to undo.
  public var canUndo: Bool { !undoSteps.isEmpty }
  /// Whether there is an undone step to redo.
  public var canRedo: Bool { !redoSteps.isEmpty }

  /// Ends the current step: the next recorded transaction starts a new one.
  public mutating func stopGrouping() { lastRecorded = nil }

  /// Forgets every step.
  public mutating func removeAll() {
    undoSteps = []
    redoSteps = []
    substitutions = UndoSubstitutions()
    lastRecorded = nil
  }

  /// The step the next local transaction records into: the current one (taken out, so
  /// that it grows in place) if the previous recording is recent enough, else a new one.
  mutating func openStep() -> UndoLog {
    let now = clock.now()
    openedAt = now
    if let last = lastRecorded, now >= last, now - last < groupingMilliseconds,
      let current = undoSteps.popLast()
    {
      continuing = true
      return current
    }
    continuing = false
    return UndoLog()
  }

  /// Puts back the step ``openStep()`` gave out. A transaction that recorded something
  /// starts the grouping interval again and clears the redo stack (a new edit forks the
  /// history).
  mutating func close(_ log: consuming UndoLog) {
    let recorded = log.recorded
    if continuing || recorded { undoSteps.append(log) }
    guard recorded else { return }
    if !continuing, let maximumSteps, undoSteps.count > Swift.max(0, maximumSteps) {
      undoSteps.removeFirst(undoSteps.count - Swift.max(0, maximumSteps))
    }
    lastRecorded = openedAt
    if !redoSteps.isEmpty { redoSteps.removeAll() }
  }
}

extension Replica {
  /// Runs `body` as one transaction, as ``transact(_:)`` does, and records how to undo it
  /// in `history`.
  ///
  /// - Complexity: that of the edits, plus O(1) per edit.
  @discardableResult
  public mutating func transact(
    recordingUndoIn history: inout UndoHistory, _ body: (inout DocumentTransaction) -> Void
  ) -> Commit {
    var log: UndoLog? = history.openStep()
    let commit = transact(undoLog: &log, body)
    // Moved, not copied: a copy of the step would retain and release its strings and
    // actions on every keystroke.
    history.close(log.take() ?? UndoLog())
    return commit
  }

  /// Takes back the latest step of `history` with new operations and moves it to the
  /// redo stack; `nil` if there was nothing left to undo. Steps that no longer change
  /// anything (every edit in them superseded) are dropped on the way.
  ///
  /// - Returns: the commit to send, like any local transaction's.
  @discardableResult
  public mutating func undo(_ history: inout UndoHistory) -> Commit? {
    replay(&history, from: \.undoSteps, onto: \.redoSteps)
  }

  /// Makes the latest undone step of `history` again and moves it back to the undo
  /// stack; `nil` if there was nothing to redo.
  ///
  /// - Returns: the commit to send, like any local transaction's.
  @discardableResult
  public mutating func redo(_ history: inout UndoHistory) -> Commit? {
    replay(&history, from: \.redoSteps, onto: \.undoSteps)
  }

  /// Carries out the latest step of `source`, its inverses latest first, in one
  /// transaction, and pushes what that transaction recorded onto `target`. Steps that no
  /// longer change anything are dropped on the way.
  private mutating func replay(
    _ history: inout UndoHistory, from source: WritableKeyPath<UndoHistory, [UndoLog]>,
    onto target: WritableKeyPath<UndoHistory, [UndoLog]>
  ) -> Commit? {
    while let step = history[keyPath: source].popLast() {
      var log: UndoLog? = UndoLog()
      let commit = transact(undoLog: &log) { transaction in
        for action in step.finished.reversed() {
          transaction.perform(action, substitutions: &history.substitutions)
        }
      }
      history.stopGrouping()
      guard !commit.delta.isEmpty else { continue }
      history[keyPath: target].append(log ?? UndoLog())
      return commit
    }
    return nil
  }
}
