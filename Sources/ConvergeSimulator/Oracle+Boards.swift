import Converge

extension Oracle {
  /// The boards workload's checks, beside the convergence checks (which already compare
  /// every replica's encoded state and document).
  ///
  /// What the movable list guarantees, and so what is checked:
  ///
  /// - within one list no value shows twice (a list holds each value once; an item moved
  ///   concurrently on two devices ends in the slot of the later move only);
  /// - every replica shows the same cards in the same order in every column;
  /// - every card shown was created by some operation (no phantom item);
  /// - with `lostChecked`, no lost card: a card created and never deleted (see
  ///   ``CardEvents``) shows in some column on every replica. The argument: a card's
  ///   presence in a list is add-wins, and a remove takes out only the events it
  ///   observed. If a card shows nowhere, every event of it was removed; take a remove
  ///   no other remove of it follows causally. A move across columns that removed it
  ///   also inserted it elsewhere, an event some later remove must have observed, so
  ///   that last remove is a deletion.
  ///
  /// A card *may* show in two columns of one replica: the columns are separate list
  /// CRDTs, so a card moved from one column into two different ones on two devices at
  /// once is inserted into both (and a move within a column concurrent with a move out
  /// of it keeps it in both). That is the documented outcome, not checked as a failure.
  /// (Undo also leaves a card in two columns today, on one device: a known defect of the
  /// list undo, see `SimulatorBoardsTests`.)
  ///
  /// Not checked when the run lost edits for good (a stale restore, a damaged file):
  /// a card created in an edit nobody received is then absent everywhere, rightly.
  public static func boardFailures(
    of replicas: [Replica], created: Set<String>, deleted: Set<String>, lostChecked: Bool
  ) -> [String] {
    var failures: [String] = []
    let keys = Workload.boardColumns.map(Workload.columnKey)
    let reference = replicas.first.map { first in
      keys.map { first.document.list(of: Workload.cardsField, in: $0) }
    }
    for (index, replica) in replicas.enumerated() {
      let lists = keys.map { replica.document.list(of: Workload.cardsField, in: $0) }
      var shown: Set<String> = []
      for (key, list) in zip(keys, lists) {
        if Set(list).count != list.count {
          failures.append("replica \(index) (\(replica.id)): \(key.id) shows a card twice")
        }
        for value in list {
          guard case .string(let card) = value, created.contains(card) else {
            failures.append(
              "replica \(index) (\(replica.id)): \(key.id) shows \(value), never created")
            continue
          }
          shown.insert(card)
        }
      }
      if let reference, lists != reference {
        failures.append("replica \(index) (\(replica.id)) shows other columns than replica 0")
      }
      guard lostChecked else { continue }
      let lost = created.subtracting(deleted).subtracting(shown).sorted()
      if !lost.isEmpty {
        failures.append(
          "replica \(index) (\(replica.id)) lost \(lost.count) cards never deleted: "
            + lost.prefix(5).joined(separator: ", "))
      }
    }
    return failures
  }
}
