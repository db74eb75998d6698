/// Delta debugging over a failing run's schedule, after the counts are shrunk: which
/// operations must happen and which sends must arrive for the failure to remain.
///
/// The counts passes of ``Shrinker`` keep a prefix of the run; a bug that needs three
/// edits out of thousands survives them at thousands. ddmin (Zeller and Hildebrandt,
/// "Simplifying and isolating failure-inducing input", 2002) removes chunks of ever
/// finer size, keeping each removal after which the run still fails, until no single
/// operation or send can go: the result is 1-minimal, within the shrinker's budget.
extension ShrinkState {
  /// `best` with as many operations skipped, then as many sends dropped, then as many
  /// restarts skipped and stale restores made plain, as still fail.
  mutating func minimizeSchedule(_ best: SimulationReport) -> SimulationReport {
    var report = best
    let steps = (0..<report.configuration.operations).filter {
      !report.configuration.cuts.skippedOperations.contains($0)
    }
    _ = DeltaDebugging.minimize(steps) { kept in
      guard !exhausted else { return nil }
      var next = report.configuration
      // Steps after the last kept one would only advance time: end the run there.
      next.operations = (kept.last ?? -1) + 1
      let keptSet = Set(kept)
      next.cuts.skippedOperations = Set((0..<next.operations).filter { !keptSet.contains($0) })
      guard let failing = failingReport(next) else { return false }
      report = failing
      return true
    }
    let sends = report.network.sent
    let delivered = (0..<sends).filter { !report.configuration.cuts.droppedMessages.contains($0) }
    _ = DeltaDebugging.minimize(delivered) { kept in
      guard !exhausted else { return nil }
      var next = report.configuration
      let keptSet = Set(kept)
      next.cuts.droppedMessages = Set((0..<sends).filter { !keptSet.contains($0) })
      guard let failing = failingReport(next) else { return false }
      report = failing
      return true
    }
    // Restarts: which must happen, then which of those must restore a stale backup.
    if !report.restartNumbers.isEmpty {
      let restarts = report.restartNumbers
      _ = DeltaDebugging.minimize(restarts) { kept in
        guard !exhausted else { return nil }
        var next = report.configuration
        next.cuts.keptRestarts = Set(kept)
        guard let failing = failingReport(next) else { return false }
        report = failing
        return true
      }
    }
    let stale = report.staleRestoreNumbers
    if !stale.isEmpty {
      _ = DeltaDebugging.minimize(stale) { kept in
        guard !exhausted else { return nil }
        var next = report.configuration
        let keptSet = Set(kept)
        next.cuts.plainRestarts.formUnion(stale.filter { !keptSet.contains($0) })
        guard let failing = failingReport(next) else { return false }
        report = failing
        return true
      }
    }
    return report
  }
}

/// ddmin over a list of steps, for the schedule shrinker.
package enum DeltaDebugging {
  /// The smallest subsequence of `items` found for which `fails` holds, assuming it
  /// holds for `items`: 1-minimal (no single item can go) unless `fails` returns `nil`,
  /// which means the budget is spent and ends the search with the best found.
  package static func minimize(_ items: [Int], fails: ([Int]) -> Bool?) -> [Int] {
    var current = items
    var granularity = 2
    if fails([]) == true { return [] }
    while current.count >= 2 {
      let chunks = split(current, into: granularity)
      var reduced = false
      for chunk in chunks {
        guard let failed = fails(chunk) else { return current }
        if failed {
          current = chunk
          granularity = 2
          reduced = true
          break
        }
      }
      // With two chunks each complement is the other chunk, tried already.
      if !reduced, granularity > 2 {
        for index in chunks.indices {
          let complement = chunks.indices.filter { $0 != index }.flatMap { chunks[$0] }
          guard let failed = fails(complement) else { return current }
          if failed {
            current = complement
            granularity = Swift.max(granularity - 1, 2)
            reduced = true
            break
          }
        }
      }
      if !reduced {
        guard granularity < current.count else { break }
        granularity = Swift.min(granularity * 2, current.count)
      }
    }
    return current
  }

  /// `items` in `count` contiguous chunks of nearly equal size, in order.
  static func split(_ items: [Int], into count: Int) -> [[Int]] {
    var chunks: [[Int]] = []
    var start = 0
    for index in 0..<count {
      let end = items.count * (index + 1) / count
      if end > start { chunks.append(Array(items[start..<end])) }
      start = end
    }
    return chunks
  }
}
