import Converge

extension Oracle {
  /// Copies of `replicas`, each having forgotten by the stable cut of all their contexts:
  /// what replicas that forgot mid-run, each by the cuts it could compute, are compared
  /// as. Entities one replica forgot and another only holds deleted are then forgotten on
  /// both; one that a replica forgot while another shows it stays a difference.
  ///
  /// With `collectingLists`, each copy also collects its lists' slot tombstones at that
  /// cut, doubly stable once every replica holds the union of the contexts (replicas
  /// that collected mid-run at earlier cuts then hold what one collection at the final
  /// cut leaves; one that did not, too).
  static func forgettingByFinalCut(_ replicas: [Replica], collectingLists: Bool = false)
    -> [Replica]
  {
    let reports = replicas.map(\.document.context)
    var covering = CausalContext()
    for report in reports { covering.formUnion(report) }
    return replicas.map { replica in
      var copy = replica
      let cut = CausalContext.stableCut(of: reports, seenBy: replica.context)
      copy.forgetDeleted(stable: cut)
      if collectingLists,
        let doubly = DoublyStableCut(stable: cut, covering: covering, coveredBy: replica.context)
      {
        copy.collectListTombstones(at: doubly)
      }
      return copy
    }
  }

  /// What forgetting breaks on converged replicas: each forgets the deleted entities
  /// under the stable cut of all their contexts (``CausalContext/stableCut(of:seenBy:)``,
  /// their meet: every device's report is in), which must change nothing any API shows,
  /// leave the replicas equal byte for byte, and keep a replica that has not forgotten
  /// from bringing anything back, its whole state applied.
  ///
  /// Run on copies, after the convergence checks pass: the digests the verdict reports
  /// stay those of the replicas as the run left them.
  static func forgettingFailures(of replicas: [Replica]) -> [String] {
    guard let first = replicas.first else { return [] }
    let reports = replicas.map(\.document.context)
    let notes = first.all(SimulatedNote.self)
    let tasks = first.all(SimulatedTask.self)
    var failures: [String] = []
    var forgottenStates: [[UInt8]] = []
    var forgottenCount = 0
    for (index, replica) in replicas.enumerated() {
      var forgetting = replica
      let cut = CausalContext.stableCut(of: reports, seenBy: replica.document.context)
      forgottenCount = forgetting.forgetDeleted(stable: cut)
      forgetting.document._checkInvariants()
      if forgetting.document.keys != replica.document.keys
        || !forgetting.all(SimulatedNote.self).elementsEqual(
          notes, by: { $0.id == $1.id && $0.value == $1.value })
        || !forgetting.all(SimulatedTask.self).elementsEqual(
          tasks, by: { $0.id == $1.id && $0.value == $1.value })
      {
        failures.append(
          "replica \(index) (\(replica.id)) shows other notes or tasks once it forgot")
      }
      forgottenStates.append(forgetting.document.encoded())
      if index == 0 {
        // The last replica, not forgotten, sends its whole state: nothing comes back.
        var merged = forgetting
        merged.apply(replicas[replicas.count - 1].document.delta(since: CausalContext()))
        if merged.document.encoded() != forgottenStates[0] {
          failures.append(
            "replica \(replicas.count - 1)'s whole state brought forgotten data back "
              + "to replica 0 (\(forgottenCount) entities forgotten)")
        }
      }
    }
    if forgottenStates.contains(where: { $0 != forgottenStates[0] }) {
      failures.append("replicas differ once they forgot under one stable cut")
    }
    return failures
  }
}
