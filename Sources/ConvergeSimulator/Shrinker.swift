import Converge

/// A failing configuration reduced to a smaller one that still fails.
public struct ShrinkResult: Sendable {
  /// The configuration that failed first.
  public var original: SimulationConfiguration
  /// The smallest failing configuration found.
  public var shrunk: SimulationConfiguration
  /// The report of the shrunk run.
  public var report: SimulationReport
  /// Simulations run while shrinking.
  public var runs: Int

  /// The seed, the shrunk sizes and the command that replays the failure.
  public var summary: String {
    let kept = shrunk.operations - shrunk.cuts.skippedOperations.count
    let dropped = shrunk.cuts.droppedMessages.count
    let restarts =
      report.restarts > 0
      ? ", \(report.restarts) restarts (\(report.staleRestores) from a stale backup)" : ""
    return [
      "seed \(shrunk.seed): shrunk from \(original.replicas) replicas × \(original.operations) "
        + "operations to \(shrunk.replicas) × \(kept) operations"
        + (dropped > 0 ? " and \(dropped) dropped sends" : "") + restarts + " in \(runs) runs",
      shrunk.cuts.isEmpty
        ? "replay: " + shrunk.command
        : "replay: converge simulate --replay FILE, FILE holding this schedule:\n" + schedule,
    ].joined(separator: "\n")
  }

  /// The shrunk run as a ``SimulationSchedule`` file's text.
  public var schedule: String { SimulationSchedule.text(of: shrunk) }
}

/// Reduces a failing simulation to the fewest replicas, operations and deliveries that
/// still fail, greedily, one dimension at a time:
///
/// 1. operations: halve while it still fails, then take smaller steps off the end;
/// 2. replicas: the smallest count from 2 up that still fails;
/// 3. faults: each of loss, duplication, reordering, partitions and offline devices set
///    to zero if it still fails; then restarts, undo, leaves, mid-run forgetting, the library and group commit off,
///    then live pushes off, then mid-run anti-entropy off;
/// 4. deliveries: the smallest message limit that still fails, by halving;
/// 5. the schedule: delta debugging over the operations, then the sends, then the
///    restarts and the stale restores among them, that remain (``ScheduleCuts``), until
///    removing any one of them makes the failure disappear.
///
/// The passes repeat while one of them makes progress, within ``maximumRuns`` runs and
/// ``timeLimit``. Every replica's workload, the
/// schedule and the network draw from separate streams of the seed, so shrinking one
/// dimension leaves the others' choices as they were and failures tend to survive it.
public struct Shrinker: Sendable {
  public let hooks: SimulationHooks
  /// The most simulations one shrink runs.
  public let maximumRuns: Int
  /// The wall-clock time after which shrinking stops with the best found so far.
  public let timeLimit: Duration

  public init(
    hooks: SimulationHooks = SimulationHooks(),
    maximumRuns: Int = 1_000, timeLimit: Duration = .seconds(300)
  ) {
    self.hooks = hooks
    self.maximumRuns = maximumRuns
    self.timeLimit = timeLimit
  }

  /// Shrinks `failing`; if it does not actually fail, returns it unchanged.
  public func shrink(_ failing: SimulationConfiguration) -> ShrinkResult {
    var state = ShrinkState(shrinker: self)
    guard let firstReport = state.failingReport(failing) else {
      let report = Simulation(failing, hooks: hooks).run()
      return ShrinkResult(original: failing, shrunk: failing, report: report, runs: state.runs + 1)
    }
    var best = failing
    var bestReport = firstReport
    var progressed = true
    while progressed, !state.exhausted {
      progressed = false
      for candidate in state.passes(from: best, report: bestReport) {
        if let report = state.failingReport(candidate()) {
          best = report.configuration
          bestReport = report
          progressed = true
          break
        }
        if state.exhausted { break }
      }
    }
    bestReport = state.minimizeSchedule(bestReport)
    return ShrinkResult(
      original: failing, shrunk: bestReport.configuration, report: bestReport, runs: state.runs)
  }
}

struct ShrinkState {
  let shrinker: Shrinker
  let deadline: ContinuousClock.Instant
  var runs = 0
  var tried: [SimulationConfiguration] = []

  init(shrinker: Shrinker) {
    self.shrinker = shrinker
    deadline = ContinuousClock.now + shrinker.timeLimit
  }

  var exhausted: Bool { runs >= shrinker.maximumRuns || ContinuousClock.now >= deadline }

  mutating func failingReport(_ configuration: SimulationConfiguration) -> SimulationReport? {
    guard !exhausted, !tried.contains(configuration) else { return nil }
    tried.append(configuration)
    runs += 1
    let report = Simulation(configuration, hooks: shrinker.hooks)
      .run()
    return report.converged ? nil : report
  }

  /// Smaller candidates of `best`, in the order they are tried; the first that fails wins.
  func passes(from best: SimulationConfiguration, report: SimulationReport)
    -> [() -> SimulationConfiguration]
  {
    var candidates: [() -> SimulationConfiguration] = []
    func with(_ change: @escaping (inout SimulationConfiguration) -> Void) {
      candidates.append {
        var next = best
        change(&next)
        return next
      }
    }
    let operations = best.operations
    var step = operations / 2
    while step > 0 {
      let target = operations - step
      with { $0.operations = target }
      step /= 2
    }
    if best.replicas > 2 {
      for count in 2..<best.replicas { with { $0.replicas = count } }
    }
    if best.faults.loss > 0 { with { $0.faults.loss = 0 } }
    if best.faults.duplicate > 0 { with { $0.faults.duplicate = 0 } }
    if best.faults.reorder > 0 { with { $0.faults.reorder = 0 } }
    if best.faults.partitions > 0 { with { $0.faults.partitions = 0 } }
    if best.faults.offline > 0 { with { $0.faults.offline = 0 } }
    if best.restarts > 0 { with { $0.restarts = 0 } }
    if best.fileLoss > 0 { with { $0.fileLoss = 0 } }
    if best.undo > 0 { with { $0.undo = 0 } }
    if best.leaves > 0 { with { $0.leaves = 0 } }
    if best.forgetting > 0 { with { $0.forgetting = 0 } }
    if best.library > 0 { with { $0.library = 0 } }
    if best.syncInterval > 0 { with { $0.syncInterval = 0 } }
    if best.livePush { with { $0.livePush = false } }
    if best.antiEntropyInterval > 0 { with { $0.antiEntropyInterval = 0 } }
    let sent = Swift.min(report.network.sent, best.messageLimit ?? Int.max)
    var limit = sent / 2
    while limit > 0 {
      let target = limit
      with { $0.messageLimit = target }
      limit /= 2
    }
    if sent > 0 { with { $0.messageLimit = sent - 1 } }
    return candidates
  }
}
