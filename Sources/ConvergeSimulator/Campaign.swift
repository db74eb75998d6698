import Converge
import Foundation  // log, exp

/// Many simulations with random configurations, drawn from one seed, until a time or run
/// budget is spent or one fails; a failure comes back shrunk, ready to replay.
///
/// A single run proves one configuration; a campaign covers the space an app meets:
/// 2–16 replicas, every workload, loss, duplication and reordering from 0 to 0.5,
/// partitions, offline devices, frames on and off, live pushes on and off, anti-entropy
/// intervals from 0 to 200; and on the devices' side, in half the runs, restarts from
/// 0.0001 to 0.05 per operation (power cuts, torn tails, stale backups, and in half of
/// those runs lost or damaged files), group-commit
/// intervals of 0, 50 and 200 ms, undo presses, and in one run of six a library of 100
/// to 2,000 entities; and in half the runs that restart no device, stability during the
/// run: devices forget mid-run (0.01, 0.05 or 0.2 per operation) by the stable cut of
/// what their sessions told them, and in half of those devices leave (0.0005, 0.002 or
/// 0.01 per operation) for longer than a horizon of 2, 5 or 10 simulated seconds, are
/// retired, and rejoin when they return (such runs sync every commit), and in half of
/// the stability runs devices collect their lists' slot tombstones. The n-th
/// configuration depends only on the campaign's seed
/// and n, so a campaign replays with its seed (`converge simulate --campaign S --seed N`).
public struct Campaign: Sendable {
  /// The seed every configuration is drawn from.
  public var seed: UInt64
  /// The most operations one run makes (runs draw from 100 up to this).
  public var maximumOperations: Int
  public var hooks: SimulationHooks
  /// How the first failure is shrunk.
  public var shrinker: Shrinker

  public init(
    seed: UInt64, maximumOperations: Int = 3_000, hooks: SimulationHooks = .init(),
    shrinkRuns: Int = 300
  ) {
    self.seed = seed
    self.maximumOperations = Swift.max(100, maximumOperations)
    self.hooks = hooks
    shrinker = Shrinker(hooks: hooks, maximumRuns: shrinkRuns)
  }

  /// The `index`-th configuration of the campaign.
  public func configuration(_ index: Int) -> SimulationConfiguration {
    var random = SimulationRandom(seed: seed, stream: 0xCA_0000 + UInt64(index))
    func rate(_ upper: Double) -> Double {
      // Hundredths (of a thousandth for the per-operation rates) read well in a command.
      (Double.random(in: 0...upper, using: &random) * 100).rounded() / 100
    }
    let livePush = Int.random(in: 0..<4, using: &random) > 0
    var configuration = SimulationConfiguration(
      seed: random.next(), replicas: Int.random(in: 2...16, using: &random),
      operations: Int.random(in: 100...maximumOperations, using: &random),
      workload: WorkloadKind.allCases.randomElement(using: &random) ?? .mixed,
      faults: NetworkFaults(
        loss: rate(0.5), duplicate: rate(0.5), reorder: rate(0.5),
        partitions: rate(0.5) / 100, offline: rate(0.5) / 100),
      livePush: livePush, framedPushes: livePush && Bool.random(using: &random),
      antiEntropyInterval: Int.random(in: 0...200, using: &random))
    // Drawn last, so the draws above are those of campaigns before devices restarted.
    // Half the runs restart devices, at rates spread evenly in magnitude from one
    // restart in 10,000 operations to one in 20 (stale restores among them), so that
    // the store's path (power cuts, torn tails, stale backups, snapshot loads) is
    // explored as hard as the network's.
    if Bool.random(using: &random) {
      let magnitude = Double.random(in: log(0.0001)...log(0.05), using: &random)
      configuration.restarts = Swift.max(0.0001, (exp(magnitude) * 10_000).rounded() / 10_000)
    }
    configuration.syncInterval = [0, 0, 50, 200].randomElement(using: &random) ?? 0
    configuration.undo = [0, 0, 0.05, 0.2].randomElement(using: &random) ?? 0
    // In half the restarting runs, restarts also lose or damage a file now and then.
    if configuration.restarts > 0, Bool.random(using: &random) {
      configuration.fileLoss = [0.05, 0.2, 0.5].randomElement(using: &random) ?? 0.05
    }
    // One run in six starts from a long-lived library, so snapshots are large and
    // restarts load many texts.
    if Int.random(in: 0..<6, using: &random) == 0 {
      configuration.library = Int.random(in: 100...2_000, using: &random)
    }
    // Drawn after everything else, so the draws above are those of earlier campaigns: in
    // half the runs that restart no device (a restart can take back what a device
    // stated), devices forget mid-run, and sync every commit (one waiting for its sync is
    // left out of what a device states).
    if configuration.restarts == 0, Bool.random(using: &random) {
      configuration.forgetting = [0.01, 0.05, 0.2].randomElement(using: &random) ?? 0.05
      if Bool.random(using: &random) {
        configuration.horizon = [2_000, 5_000, 10_000].randomElement(using: &random) ?? 5_000
        configuration.leaves = [0.0005, 0.002, 0.01].randomElement(using: &random) ?? 0.002
      }
      configuration.syncInterval = 0
      // In half of those, devices also collect their lists' slot tombstones.
      configuration.collectsLists = Bool.random(using: &random)
    }
    return configuration
  }

  /// Runs configurations in order until `shouldStop` (asked before each run) says so or
  /// one fails, which is then shrunk. `progress` is called after every run.
  public func run(
    shouldStop: (CampaignReport) -> Bool,
    progress: ((CampaignReport) -> Void)? = nil
  ) -> CampaignReport {
    var report = CampaignReport(seed: seed)
    while !shouldStop(report) {
      let configuration = configuration(report.runs)
      let result = Simulation(configuration, hooks: hooks).run()
      report.runs += 1
      report.operations += result.operations
      if configuration.restarts > 0 { report.restartingRuns += 1 }
      report.restarts += result.restarts
      report.staleRestores += result.staleRestores
      report.damagedFiles += result.damagedFiles
      report.identityChanges += result.identityChanges
      if configuration.hasStability { report.stabilityRuns += 1 }
      report.retirements += result.retirements
      report.rejoins += result.rejoins
      report.forgets += result.forgets
      report.forgottenEntities += result.forgottenEntities
      if result.strandedItemsDropped > 0 { report.strandedRuns += 1 }
      progress?(report)
      guard result.converged else {
        report.failure = result
        report.shrunk = shrinker.shrink(configuration)
        break
      }
    }
    return report
  }
}

/// What a campaign did, and its first failure if it found one.
public struct CampaignReport: Sendable {
  /// The campaign's seed.
  public var seed: UInt64
  /// Simulations run.
  public var runs = 0
  /// Operations made over every run.
  public var operations = 0
  /// Runs that restarted devices.
  public var restartingRuns = 0
  /// Devices killed and reopened over every run.
  public var restarts = 0
  /// Restarts from a stale backup over every run.
  public var staleRestores = 0
  /// Restarts that also lost or damaged a file, over every run.
  public var damagedFiles = 0
  /// Fresh replica ids the devices' stores took over every run.
  public var identityChanges = 0
  /// Runs with stability during the run, devices retired and rejoined, forgets made
  /// mid-run and the deleted entities they dropped, over every run.
  public var stabilityRuns = 0
  public var retirements = 0
  public var rejoins = 0
  public var forgets = 0
  public var forgottenEntities = 0
  /// Runs whose rejoins re-applied edits stranded on a retired device's lost events
  /// (``SimulationReport/strandedItemsDropped``).
  public var strandedRuns = 0
  /// The failing run, if one failed (the campaign stops there).
  public var failure: SimulationReport?
  /// The failure, shrunk.
  public var shrunk: ShrinkResult?

  public init(seed: UInt64) {
    self.seed = seed
  }

  /// Failures found: 0 or 1, as the campaign stops at the first.
  public var failures: Int { failure == nil ? 0 : 1 }

  /// A readable summary.
  public var text: String {
    var lines = [
      "converge simulate --campaign: seed \(seed), \(runs) runs, \(operations) operations, "
        + "\(failures) failures",
      "  stores: \(restartingRuns) runs restarting devices, \(restarts) restarts, "
        + "\(staleRestores) from a stale backup, \(damagedFiles) with a file lost or damaged, "
        + "\(identityChanges) fresh replica ids",
      "  stability: \(stabilityRuns) runs forgetting mid-run, \(forgets) forgets dropped "
        + "\(forgottenEntities) deleted entities, \(retirements) devices retired, "
        + "\(rejoins) rejoined, \(strandedRuns) runs re-applying edits stranded on a "
        + "retired device's lost events",
    ]
    if let failure {
      lines.append("first failure: " + failure.configuration.command)
      lines += failure.verdict.failures.prefix(3).map { "  - " + $0 }
    }
    if let shrunk { lines.append(shrunk.summary) }
    return lines.joined(separator: "\n")
  }

  /// One JSON object.
  public var json: String {
    var fields = [
      ("seed", "\(seed)"), ("runs", "\(runs)"), ("operations", "\(operations)"),
      ("failures", "\(failures)"), ("restarting_runs", "\(restartingRuns)"),
      ("restarts", "\(restarts)"), ("stale_restores", "\(staleRestores)"),
      ("damaged_files", "\(damagedFiles)"),
      ("identity_changes", "\(identityChanges)"),
      ("stability_runs", "\(stabilityRuns)"), ("retirements", "\(retirements)"),
      ("rejoins", "\(rejoins)"), ("forgets", "\(forgets)"),
      ("forgotten_entities", "\(forgottenEntities)"), ("stranded_runs", "\(strandedRuns)"),
    ]
    if let failure { fields.append(("failure", jsonString(failure.configuration.command))) }
    if let shrunk {
      fields.append(("shrunk_replay", jsonString(shrunk.shrunk.command)))
      if !shrunk.shrunk.cuts.isEmpty {
        fields.append(("shrunk_schedule", jsonString(shrunk.schedule)))
      }
    }
    return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
  }
}
