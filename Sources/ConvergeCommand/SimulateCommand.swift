import ConvergeSimulator
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `converge simulate`: forks replicas, runs an app-like workload over a hostile simulated
/// network, checks that every replica converges, and on a failure prints the seed and a
/// shrunk command that replays it.
enum SimulateCommand {
  static let usage = """
    usage: converge simulate [--replicas N] [--operations N] [--seed S]
                             [--workload notes|tasks|mixed|boards] [--loss P]
                             [--duplicate P]
                             [--reorder P] [--partitions P] [--offline P]
                             [--anti-entropy N] [--no-live-push] [--frames]
                             [--message-limit N] [--library N]
                             [--restarts P] [--file-loss P] [--sync-interval MS]
                             [--undo P] [--stability] [--forget P]
                             [--horizon MS] [--leave P]
                             [--collect-lists | --no-collect-lists]
                             [--no-shrink] [--json]
           converge simulate --campaign SECONDS [--seed S] [--json]
           converge simulate --replay FILE [--no-shrink] [--json]
      With no options: 5 replicas, 5,000 operations of the mixed workload, seed 1, over a
      lossy, duplicating, reordering network with partitions and offline devices.
      Rates are probabilities: per message (loss, duplicate, reorder) or per operation
      (partitions, offline, restarts). --anti-entropy N: a handshake every N operations
      (0: none). --library N: the origin also holds N notes and tasks (a long-lived
      library), which the edits spread over. Every device keeps its replica in a
      DeviceReplica on a simulated disk, sends only durable edits, and pushes an edit
      once it is durable; --sync-interval MS lets commits wait that
      long for their sync (group commit; 0: each commit syncs). --restarts P kills a
      device without closing its store (P per operation) and reopens it from what a
      power cut left, sometimes from a stale backup; the oracle also checks that no dot
      was made durable twice and that nothing durable was lost. --file-loss P: with P per
      restart the device's newest log or snapshot is also lost, or a byte of its newest log
      flipped; the store must report it and take a fresh replica id. --undo P: with P per
      operation the user presses Undo (or, one time in three, Redo) on its own recorded
      edits instead of editing, while remote edits keep arriving.
      --stability: devices forget deleted entities during the run, collect their lists'
      slot tombstones and leave past a horizon and rejoin: --forget 0.05 --horizon 5000
      --leave 0.002 --collect-lists unless given (--no-collect-lists: no collection).
      --forget P: with P per operation a device computes the stable cut from what its
      sessions told it every member has seen and forgets by it (it cannot while a member
      has not been heard since the last retirement). --horizon MS: a device away that
      long (virtual ms) is retired by all; when it returns it rejoins on a peer's state
      under a fresh id, its offline edits re-applied. --leave P: with P per operation a
      device leaves for longer than the horizon, editing offline. --collect-lists: each
      device also collects its lists' slot tombstones at the doubly stable cuts its
      forgets find, and the oracle at the final cut. Stability runs restart
      no device and sync every commit (--restarts, --file-loss and --sync-interval are
      refused with them).
      --campaign SECONDS: random configurations drawn from the seed until the time is up:
      2-16 replicas, 100-3,000 operations, every workload, --loss, --duplicate and
      --reorder 0-0.5, --partitions and --offline 0-0.005, live pushes on and off,
      --frames on and off, --anti-entropy 0-200; in half the runs --restarts
      0.0001-0.05 (stale restores among them; in half of those --file-loss 0.05, 0.2 or
      0.5), --sync-interval 0, 50 or 200, --undo 0,
      0.05 or 0.2, in one run of six --library 100-2,000, and in half the runs without
      restarts --forget 0.01, 0.05 or 0.2 (in half of those --horizon 2000, 5000 or
      10000 with --leave 0.0005, 0.002 or 0.01; in half --collect-lists) and
      --sync-interval 0. It stops at the
      first
      failure and prints it shrunk, and counts the runs that restarted devices.
      A failure is shrunk to few replicas, operations and deliveries; when operations or
      sends were cut, the reproduction is written to converge-schedule-SEED.txt, which
      --replay FILE runs again exactly (format: SimulationSchedule, version 2: cut operations,
      sends and restarts, and stale restores made plain; version 1 files still replay).
      On a terminal, long runs show a progress line on standard error.
      Exit status 0 when every replica converged, 1 when not, 2 on a usage error.
    """

  struct Options {
    var configuration = SimulationConfiguration(
      seed: 1, replicas: 5, operations: 5_000, workload: .mixed, faults: .hostile)
    var json = false
    var shrink = true
    /// Seconds of campaign, if one was asked for.
    var campaign: Int?
    /// A schedule file to replay instead of the configuration's options.
    var replay: String?
    /// Whether `--stability` asked for forgetting and retirement at the default rates.
    var stability = false
    /// Whether `--stability` may turn list collection on (`--no-collect-lists`: not).
    var collectsLists = true
  }

  static func parse(_ arguments: [String]) -> Options? {
    CommandOption.parse(
      arguments, into: Options(),
      [
        .flag("--json", \.json),
        .flag("--no-shrink", \.shrink, false),
        .flag("--no-live-push", \.configuration.livePush, false),
        .flag("--frames", \.configuration.framedPushes),
        .flag("--stability", \.stability),
        .value("--forget", \.configuration.forgetting, .rate),
        .value("--horizon", \.configuration.horizon, .number),
        .value("--leave", \.configuration.leaves, .rate),
        .flag("--collect-lists", \.configuration.collectsLists),
        .flag("--no-collect-lists", \.collectsLists, false),
        .value("--replay", \.replay, .text),
        .value("--campaign", \.campaign, .count(minimum: 1)),
        .value("--replicas", \.configuration.replicas, .count(minimum: 1)),
        .value("--operations", \.configuration.operations, .count(minimum: 0)),
        .value("--anti-entropy", \.configuration.antiEntropyInterval, .count(minimum: 0)),
        .value("--library", \.configuration.library, .count(minimum: 0)),
        .value("--restarts", \.configuration.restarts, .rate),
        .value("--undo", \.configuration.undo, .rate),
        .value("--file-loss", \.configuration.fileLoss, .rate),
        .value("--sync-interval", \.configuration.syncInterval, .number),
        .value("--message-limit", \.configuration.messageLimit, .count(minimum: 0)),
        .value("--seed", \.configuration.seed, .number),
        .value("--workload", \.configuration.workload, .init(WorkloadKind.init(rawValue:))),
        .value("--loss", \.configuration.faults.loss, .rate),
        .value("--duplicate", \.configuration.faults.duplicate, .rate),
        .value("--reorder", \.configuration.faults.reorder, .rate),
        .value("--partitions", \.configuration.faults.partitions, .rate),
        .value("--offline", \.configuration.faults.offline, .rate),
      ])?.options
  }

  static func run(_ arguments: [String]) -> Int32 {
    guard var options = parse(arguments) else {
      write(usage + "\n", to: .standardError)
      return 2
    }
    if options.stability {
      // The preset fills what the options did not set.
      var preset = options.configuration
      preset.enableStability()
      if options.configuration.forgetting == 0 {
        options.configuration.forgetting = preset.forgetting
      }
      if options.configuration.horizon == 0 { options.configuration.horizon = preset.horizon }
      if options.configuration.leaves == 0 { options.configuration.leaves = preset.leaves }
      if options.collectsLists { options.configuration.collectsLists = preset.collectsLists }
    }
    let c = options.configuration
    if c.hasStability && (c.restarts > 0 || c.fileLoss > 0 || c.syncInterval > 0) {
      write(
        "converge simulate: --restarts, --file-loss and --sync-interval cannot be combined "
          + "with forgetting or leaving devices (a restart can take back what a device "
          + "stated, and a commit waiting for its sync is left out of it)\n"
          + usage + "\n", to: .standardError)
      return 2
    }
    if let seconds = options.campaign { return runCampaign(seconds: seconds, options: options) }
    if let path = options.replay {
      do {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        options.configuration = try SimulationSchedule.configuration(parsing: text)
      } catch {
        write("converge simulate: cannot replay \(path): \(error)\n", to: .standardError)
        return 2
      }
    }
    let line = ProgressLine(enabled: !options.json)
    let report = Simulation(options.configuration).run { progress in
      line.update(
        "\(progress.operations)/\(progress.total) operations, \(progress.messages) messages",
        operations: progress.operations)
    }
    line.clear()
    var shrunk: ShrinkResult?
    if !report.converged, options.shrink {
      if !options.json { write("did not converge; shrinking…\n", to: .standardError) }
      shrunk = Shrinker().shrink(options.configuration)
    }
    let replay = shrunk.map(replayCommand)
    if options.json {
      var json = report.json
      if let shrunk {
        json.removeLast()
        json += ",\"shrunk_replay\":\"\(replay ?? shrunk.shrunk.command)\"}"
      }
      write(json + "\n", to: .standardOutput)
    } else {
      write(report.text + "\n", to: .standardOutput)
      if let shrunk {
        write(
          "seed \(options.configuration.seed) fails; shrunk reproduction:\n", to: .standardOutput)
        write(shrunk.summary + "\n", to: .standardOutput)
        for failure in shrunk.report.verdict.failures.prefix(3) {
          write("  - " + failure + "\n", to: .standardOutput)
        }
        if let replay { write(replay + "\n", to: .standardOutput) }
      }
    }
    return report.converged ? 0 : 1
  }

  static func runCampaign(seconds: Int, options: Options) -> Int32 {
    let line = ProgressLine(enabled: !options.json)
    let deadline = ContinuousClock.now + .seconds(seconds)
    let report = Campaign(seed: options.configuration.seed).run(
      shouldStop: { _ in ContinuousClock.now >= deadline },
      progress: { report in
        line.update(
          "\(report.runs) runs, \(report.operations) operations", operations: report.operations)
      })
    line.clear()
    write((options.json ? report.json : report.text) + "\n", to: .standardOutput)
    return report.failures == 0 ? 0 : 1
  }

  /// The command that replays `shrunk`: its options, or `--replay` of a schedule file
  /// written to the current directory when operations or sends were cut.
  static func replayCommand(_ shrunk: ShrinkResult) -> String {
    guard !shrunk.shrunk.cuts.isEmpty else { return shrunk.shrunk.command }
    let path = "converge-schedule-\(shrunk.shrunk.seed).txt"
    do {
      try shrunk.schedule.write(toFile: path, atomically: true, encoding: .utf8)
      return "converge simulate --replay \(path)"
    } catch {
      return "(could not write \(path): \(error); the schedule is printed above)"
    }
  }

  private static func write(_ text: String, to handle: FileHandle) {
    handle.write(Data(text.utf8))
  }
}
