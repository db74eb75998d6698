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
    logged(transacting { $0.transact(recordingUndoIn: &history, body) })
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
}
