import Converge
import ConvergeStore

/// The outcome of a run: the verdict and what it took to get there.
public struct SimulationReport: Sendable {
  /// The configuration that replays the run.
  public var configuration: SimulationConfiguration
  /// The oracle's verdict.
  public var verdict: OracleVerdict
  /// What the network did during the run.
  public var network: NetworkStatistics
  /// Wall-clock seconds the run took (simulation and oracle).
  public var seconds: Double
  let statistics: RunStatistics

  init(
    configuration: SimulationConfiguration, verdict: OracleVerdict, statistics: RunStatistics,
    network: NetworkStatistics, seconds: Double
  ) {
    self.configuration = configuration
    self.verdict = verdict
    self.statistics = statistics
    self.network = network
    self.seconds = seconds
  }

  /// A run whose devices' stores did not open (the simulated disk never fails by
  /// itself, so this is a bug in the store).
  init(notStarted configuration: SimulationConfiguration, because error: StoreError) {
    self.init(
      configuration: configuration,
      verdict: OracleVerdict(
        failures: ["a device's store did not open: \(error)"], stateDigests: [], entityCount: 0,
        textLength: 0),
      statistics: RunStatistics(), network: NetworkStatistics(), seconds: 0)
  }

  /// Whether every replica ended in the same state and passed its checks.
  public var converged: Bool { verdict.converged }
  /// Transactions made.
  public var operations: Int { statistics.operations }
  /// Anti-entropy handshakes started during the run (some are cut or lost).
  public var handshakes: Int { statistics.handshakes }
  /// Handshakes of the final quiescence phase, and its rounds.
  public var finalHandshakes: Int { statistics.finalHandshakes }
  public var finalRounds: Int { statistics.finalRounds }
  /// The most replicas that held pending (causally early) text at a sample.
  public var maxReplicasWithPendingChanges: Int { statistics.maxReplicasWithPending }
  /// Messages (not frames) that the receiving session could not decode.
  public var undecodableMessages: Int { statistics.undecodable }
  /// With framed pushes: frames refused because the network lost, repeated or reordered
  /// the frames of their stream (each one starts a repairing handshake).
  public var refusedFrames: Int { statistics.refusedFrames }
  /// Deltas dropped by ``SimulationHooks/applyFilter``.
  public var filteredDeltas: Int { statistics.filtered }
  /// Devices killed and reopened from their stores, how many from a stale backup, how
  /// many fresh replica ids the stores took for it, and the local commits lost before
  /// they were durable (never sent, so nobody else lost them).
  public var restarts: Int { statistics.restarts }
  /// Undo and Redo presses that took back or made again a step (see
  /// ``SimulationConfiguration/undo``).
  public var undoPresses: Int { statistics.undoPresses }
  public var staleRestores: Int { statistics.staleRestores }
  /// Restarts that also lost or damaged a file of the device's store (see
  /// ``SimulationConfiguration/fileLoss``).
  public var damagedFiles: Int { statistics.damagedFiles }
  /// The numbers (in the order the run drew them) of the restarts made, and of those
  /// that restored a stale backup: what a schedule shrinker cuts from
  /// (``ScheduleCuts/keptRestarts``, ``ScheduleCuts/plainRestarts``).
  public var restartNumbers: [Int] { statistics.restartLog }
  public var staleRestoreNumbers: [Int] { statistics.staleRestoreLog }
  /// Restarts that loaded the device's own snapshot with its texts deferred.
  public var taggedRestarts: Int { statistics.taggedRestarts }
  public var identityChanges: Int { statistics.identityChanges }
  public var unsyncedCommitsLost: Int { statistics.unsyncedCommitsLost }
  /// Durable dots that stale restores took back before any peer received them: edits
  /// made on top of them may wait forever (see ``Oracle/check(_:pendingExplained:)``).
  public var dotsTakenBack: UInt64 { statistics.dotsTakenBack }
  /// Stability during the run (see ``SimulationConfiguration/forgetting`` and
  /// ``SimulationConfiguration/horizon``): devices that left for longer than the horizon,
  /// were retired, and rejoined (``rejoinsReapplyingEdits`` of those re-applied edits
  /// made while away); forgets made mid-run and the deleted entities they dropped
  /// (counted on every device, the rejoins' forgets included); forgets given up because
  /// a member had not been heard since the last retirement, or the cut was empty.
  public var leaves: Int { statistics.leaves }
  public var retirements: Int { statistics.retirements }
  public var rejoins: Int { statistics.rejoins }
  public var rejoinsReapplyingEdits: Int { statistics.rejoinsReapplying }
  public var forgets: Int { statistics.forgets }
  public var forgottenEntities: Int { statistics.forgottenEntities }
  public var forgetsWithoutBounds: Int { statistics.forgetsWithoutBounds }
  /// The waiting text and list items of retired ids that members dropped as a device
  /// rejoined: edits that reached them ahead of an earlier event of that device no member
  /// held (a push the network lost before it left), re-applied under its fresh id by its
  /// rebase (``Document/dropPending(of:)``). Nothing may wait at the end.
  public var strandedItemsDropped: Int { statistics.strandedDropped }
  /// List slot tombstones the devices collected mid-run
  /// (``SimulationConfiguration/collectsLists``), counted on every device.
  public var collectedSlots: Int { statistics.collectedSlots }
  /// Messages from or to a retired device, refused.
  public var refusedAsRetired: Int { statistics.refusedRetired }
  /// Where the wall-clock time went.
  public var timings: PhaseTimings { statistics.timings }
  /// Virtual time the run covered, in seconds.
  public var virtualSeconds: Double { Double(statistics.virtualMilliseconds) / 1000 }
  /// Bytes of the live pushes (self-contained messages or frames) sent during the run.
  public var liveBytes: Int { statistics.liveBytes }
  /// Bytes on the wire, the final phase included.
  public var bytes: Int { network.bytes + statistics.finalBytes }
  /// The SHA-256 of the first replica's state fingerprint: equal for equal runs.
  public var stateSHA256: String { verdict.stateDigests.first ?? SHA256Hasher.hexDigest(of: []) }

  /// A readable report.
  public var text: String {
    let c = configuration
    let f = c.faults
    var lines = [
      "converge simulate: \(c.replicas) replicas, \(operations) operations, \(c.workload.rawValue) workload, seed \(c.seed)",
      "  network: loss \(f.loss), duplicate \(f.duplicate), reorder \(f.reorder), "
        + "partitions \(f.partitions)/op, offline \(f.offline)/op, latency \(f.latency.lowerBound)-\(f.latency.upperBound) ms",
      "  messages: \(network.sent) sent, \(network.delivered) delivered, \(network.lost) lost, "
        + "\(network.duplicated) duplicated, \(network.cut) cut by partitions or offline devices",
      "  anti-entropy: \(handshakes) handshakes during the run; \(finalHandshakes) in \(finalRounds) final rounds"
        + (c.framedPushes ? "; \(refusedFrames) frames refused out of sequence" : ""),
      "  bytes on the wire: \(bytes) (every message as its session encoded it), \(liveBytes) of live pushes",
      "  largest buffer: \(network.maxInFlight) messages in flight; "
        + "\(maxReplicasWithPendingChanges) replicas holding pending text at once",
      "  stores: sync interval \(c.syncInterval) ms; \(restarts) restarts (\(staleRestores) "
        + "from a stale backup, \(taggedRestarts) from a tagged snapshot"
        + (c.fileLoss > 0 ? ", \(damagedFiles) with a file lost or damaged" : "") + "), "
        + "\(identityChanges) fresh replica ids, "
        + "\(unsyncedCommitsLost) unsynced commits lost, \(dotsTakenBack) durable dots taken "
        + "back by stale restores and lost files"
        + (c.undo > 0 ? "; \(undoPresses) undo and redo presses took effect" : ""),
      "  stability: "
        + (c.hasStability
          ? "forget \(c.forgetting)/op, horizon \(c.horizon) ms, leave \(c.leaves)/op; "
            + "\(leaves) left, \(retirements) retired, \(rejoins) rejoined "
            + "(\(rejoinsReapplyingEdits) re-applying offline edits), \(refusedAsRetired) "
            + "messages refused as retired; \(forgets) forgets mid-run dropped "
            + "\(forgottenEntities) deleted entities, \(forgetsWithoutBounds) waited for a "
            + "member's bound or a cut"
            + (strandedItemsDropped > 0
              ? "; \(strandedItemsDropped) waiting items of retired ids dropped "
                + "(re-applied by the rejoins)" : "")
            + (c.collectsLists ? "; \(collectedSlots) list slot tombstones collected" : "")
          : "off (forgetting only in the oracle's check after the run)"),
      "  state: \(verdict.entityCount) entities, \(verdict.textLength) characters of text, sha256 \(stateSHA256)",
      "  time: " + formatted(seconds) + " s (" + formatted(virtualSeconds) + " s simulated); "
        + "transact " + formatted(timings.transact) + " s, apply " + formatted(timings.apply)
        + " s, delta(since:) " + formatted(timings.deltaSince) + " s, oracle "
        + formatted(timings.oracle) + " s",
    ]
    if converged {
      lines.append(
        "verdict: converged (\(c.replicas) identical states, invariants hold, "
          + (dotsTakenBack == 0
            ? "nothing pending)"
            : "nothing pending but edits on dots stale restores took back)"))
    } else {
      lines.append("verdict: DID NOT CONVERGE")
      lines += verdict.failures.prefix(10).map { "  - " + $0 }
      if verdict.failures.count > 10 { lines.append("  - … \(verdict.failures.count - 10) more") }
      lines.append("  replay: " + c.command)
    }
    return lines.joined(separator: "\n")
  }

  /// One JSON object.
  public var json: String {
    let fields: [(String, String)] = [
      ("converged", converged ? "true" : "false"),
      ("seed", "\(configuration.seed)"),
      ("replicas", "\(configuration.replicas)"),
      ("operations", "\(operations)"),
      ("workload", "\"\(configuration.workload.rawValue)\""),
      ("messages", "\(network.sent)"),
      ("messages_delivered", "\(network.delivered)"),
      ("messages_lost", "\(network.lost)"),
      ("messages_duplicated", "\(network.duplicated)"),
      ("messages_cut", "\(network.cut)"),
      ("handshakes", "\(handshakes)"),
      ("final_handshakes", "\(finalHandshakes)"),
      ("refused_frames", "\(refusedFrames)"),
      ("bytes", "\(bytes)"),
      ("live_bytes", "\(liveBytes)"),
      ("max_in_flight", "\(network.maxInFlight)"),
      ("max_replicas_with_pending", "\(maxReplicasWithPendingChanges)"),
      ("restarts", "\(restarts)"),
      ("undo_presses", "\(undoPresses)"),
      ("stale_restores", "\(staleRestores)"),
      ("damaged_files", "\(damagedFiles)"),
      ("tagged_restarts", "\(taggedRestarts)"),
      ("identity_changes", "\(identityChanges)"),
      ("unsynced_commits_lost", "\(unsyncedCommitsLost)"),
      ("dots_taken_back", "\(dotsTakenBack)"),
      ("leaves", "\(leaves)"),
      ("retirements", "\(retirements)"),
      ("rejoins", "\(rejoins)"),
      ("rejoins_reapplying", "\(rejoinsReapplyingEdits)"),
      ("forgets", "\(forgets)"),
      ("forgotten_entities", "\(forgottenEntities)"),
      ("forgets_without_bounds", "\(forgetsWithoutBounds)"),
      ("refused_as_retired", "\(refusedAsRetired)"),
      ("stranded_items_dropped", "\(strandedItemsDropped)"),
      ("collected_slots", "\(collectedSlots)"),
      ("entities", "\(verdict.entityCount)"),
      ("text_length", "\(verdict.textLength)"),
      ("seconds", formatted(seconds)),
      ("virtual_seconds", formatted(virtualSeconds)),
      (
        "timings",
        "{\"transact\":\(formatted(timings.transact)),\"apply\":\(formatted(timings.apply)),"
          + "\"delta_since\":\(formatted(timings.deltaSince)),"
          + "\"transport\":\(formatted(timings.transport)),\"oracle\":\(formatted(timings.oracle))}"
      ),
      ("state_sha256", "\"\(stateSHA256)\""),
      ("failures", "[" + verdict.failures.map(jsonString).joined(separator: ",") + "]"),
      ("replay", jsonString(configuration.command)),
    ]
    return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
  }
}

/// A number with three decimals.
func formatted(_ value: Double) -> String {
  let thousandths = Int((value * 1000).rounded())
  let fraction = String(thousandths % 1000)
  return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

/// A JSON string literal.
func jsonString(_ string: String) -> String {
  var out = "\""
  for scalar in string.unicodeScalars {
    switch scalar {
    case "\"": out += "\\\""
    case "\\": out += "\\\\"
    case "\n": out += "\\n"
    case "\r": out += "\\r"
    case "\t": out += "\\t"
    default:
      if scalar.value < 0x20 {
        let hex = String(scalar.value, radix: 16)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
  }
  return out + "\""
}
