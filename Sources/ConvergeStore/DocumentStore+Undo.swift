import Converge

extension DocumentStore {
  /// Runs a local transaction as ``transact(_:)`` does (logged, group-committed, sent once
  /// durable) and records how to undo it in `history`.
  ///
  /// The history is the app's, kept in memory beside the store: undo takes back this
  /// device's own edits only (see ``UndoHistory``).
  @discardableResult
  public func transact(
    recordingUndoIn history: inout UndoHistory, _ body: (inout DocumentTransaction) -> Void
  ) -> Commit {
    checkOutsideTransaction()
    isTransacting = true
    let commit = storedReplica.transact(recordingUndoIn: &history, body)
    isTransacting = false
    return logged(commit)
  }

  /// Takes back the latest step of `history` with new operations, logged like any local
  /// transaction; `nil` if there was nothing to undo.
  @discardableResult
  public func undo(_ history: inout UndoHistory) -> Commit? {
    checkOutsideTransaction()
    return storedReplica.undo(&history).map(logged)
  }

  /// Makes the latest undone step of `history` again, logged like any local transaction;
  /// `nil` if there was nothing to redo.
  @discardableResult
  public func redo(_ history: inout UndoHistory) -> Commit? {
    checkOutsideTransaction()
    return storedReplica.redo(&history).map(logged)
  }

  private func logged(_ commit: Commit) -> Commit {
    if !commit.delta.isEmpty { append(commit.delta, local: true) }
    return commit
  }
}
