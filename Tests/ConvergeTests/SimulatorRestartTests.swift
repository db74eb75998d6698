import Converge
import ConvergeStore
import ConvergeTestSupport
import Foundation
import Testing

@testable import ConvergeSimulator

/// Devices whose replicas live in stores on simulated disks: killed without closing,
/// reopened from what a power cut left (torn tails too) or from a stale backup, they
/// still converge, keep every durable edit, and never make a dot durable twice.
@Suite struct SimulatorRestartTests {
  static func restarting(seed: UInt64, workload: WorkloadKind = .mixed) -> SimulationConfiguration {
    var configuration = SimulatorTests.small(seed: seed, workload: workload, operations: 1_500)
    configuration.restarts = 0.02
    configuration.syncInterval = 200
    return configuration
  }

  @Test(arguments: WorkloadKind.allCases)
  func convergesWhileDevicesRestart(workload: WorkloadKind) throws {
    var restarts = 0
    var stale = 0
    var fresh = 0
    var lost = 0
    try forEachSeed(count: 3, base: 0x52_0000) { random in
      let seed = random.next()
      let report = Simulation(Self.restarting(seed: seed, workload: workload)).run()
      #expect(report.converged, "seed \(seed): \(report.text)")
      restarts += report.restarts
      stale += report.staleRestores
      fresh += report.identityChanges
      lost += report.unsyncedCommitsLost
    }
    // The runs exercised what they claim to: restarts, stale backups, fresh ids after
    // torn tails and copies, and commits lost before their sync.
    #expect(restarts > 20)
    #expect(stale > 0)
    #expect(fresh > 0)
    #expect(lost > 0)
  }

  @Test func framedPushesConvergeWhileDevicesRestart() throws {
    try forEachSeed(count: 3, base: 0x52_1000) { random in
      var configuration = Self.restarting(seed: random.next())
      configuration.framedPushes = true
      let report = Simulation(configuration).run()
      #expect(report.converged, "\(report.text)")
      #expect(report.restarts > 0)
    }
  }

  /// A long-lived library of thousands of entities: edits spread over it, devices
  /// restart, and handshakes find the few entities that changed among many.
  @Test func aLibraryOfThousandsConvergesWhileDevicesRestart() {
    var configuration = Self.restarting(seed: 0x11B, workload: .mixed)
    configuration.library = 2_000
    configuration.operations = 600
    let report = Simulation(configuration).run()
    #expect(report.converged, "\(report.text)")
    #expect(report.verdict.entityCount > 1_500)
    #expect(report.restarts > 0)
  }

  /// Devices whose stores compact often restart from their own snapshots, loaded with
  /// their texts deferred (the tag matched), and still converge.
  @Test func devicesRestartFromTaggedSnapshots() throws {
    var tagged = 0
    try forEachSeed(count: 3, base: 0x52_2000) { random in
      var hooks = SimulationHooks()
      hooks.compactionLogBytes = 4 << 10
      let seed = random.next()
      let report = Simulation(Self.restarting(seed: seed, workload: .notes), hooks: hooks).run()
      #expect(report.converged, "seed \(seed): \(report.text)")
      tagged += report.taggedRestarts
    }
    #expect(tagged > 10)
  }

  @Test func sameSeedSameRunWithRestarts() {
    let configuration = Self.restarting(seed: 77)
    let first = Simulation(configuration).run()
    let second = Simulation(configuration).run()
    #expect(first.converged, "\(first.text)")
    #expect(first.stateSHA256 == second.stateSHA256)
    #expect(first.restarts == second.restarts && first.restarts > 0)
    #expect(first.network.sent == second.network.sent)
  }

  /// Without restarts the stores change nothing a run does: every commit syncs at once
  /// and is pushed right after it, as before devices had stores.
  @Test func storesWithoutRestartsSyncEveryCommit() {
    let report = Simulation(SimulatorTests.small(seed: 5, workload: .notes)).run()
    #expect(report.converged, "\(report.text)")
    #expect(report.restarts == 0 && report.unsyncedCommitsLost == 0)
    #expect(report.identityChanges == 0)
  }

  /// A backup rolled back in place keeps the files' identities, so the store cannot see
  /// the copy (its documented limit) and issues again counters its peers already hold:
  /// the oracle must say so.
  /// Restarts that also lose the newest log or snapshot, or flip a byte of the newest
  /// log: every store reports what it lost (an unreported loss fails the run), takes a
  /// fresh replica id, issues no dot twice, and every device converges.
  @Test func convergesWhenRestartsLoseAndDamageFiles() throws {
    var damaged = 0
    var fresh = 0
    try forEachSeed(count: 4, base: 0x10_55F1) { random in
      var configuration = Self.restarting(seed: random.next())
      configuration.restarts = 0.04
      configuration.fileLoss = 0.5
      var hooks = SimulationHooks()
      hooks.compactionLogBytes = 4 << 10  // snapshots early, so some restarts lose one
      let report = Simulation(configuration, hooks: hooks).run()
      #expect(report.converged, "\(report.text)")
      damaged += report.damagedFiles
      fresh += report.identityChanges
    }
    #expect(damaged > 0 && fresh >= damaged)
  }

  @Test func oracleCatchesDotsIssuedTwiceAfterAnInPlaceRollback() throws {
    var caught = 0
    try forEachSeed(count: 4, base: 0x52_2000) { random in
      var configuration = Self.restarting(seed: random.next())
      configuration.restarts = 0.05
      let report = Simulation(configuration, hooks: SimulationHooks(restoresInPlace: true)).run()
      if report.verdict.failures.contains(where: { $0.contains("a dot issued twice") }) {
        caught += 1
      }
    }
    #expect(caught > 0)
  }

  /// The sample of ``MemoryFileSystem``'s documentation: an edit never synced is gone
  /// after a power cut, and the store reopens without it.
  @Test func memoryFileSystemSample() throws {
    let note = EntityKey(type: "note", id: "groceries")
    let disk = MemoryFileSystem()
    var configuration = DocumentStore.Configuration()
    configuration.fileSystem = disk
    configuration.syncInterval = .seconds(60)  // nothing syncs before flush()
    let store = try DocumentStore(directory: "/notes", configuration: configuration)
    store.transact { $0.setValue(.string("Groceries"), for: "title", of: note) }
    disk.crash()  // the edit was never synced: it is gone, as after a power cut

    let reopened = try DocumentStore(directory: "/notes", configuration: configuration)
    #expect(store.replica.document.keys.contains(note))
    #expect(!reopened.replica.document.keys.contains(note))
  }

  @Test func ledgerCatchesADotMadeDurableTwice() {
    var ledger = DurabilityLedger()
    let id = ReplicaID(rawValue: 9)
    ledger.recordDurable(1...4, of: id, device: 0)
    ledger.recordDurable(5...6, of: id, device: 0)
    #expect(ledger.failures(finalReplicas: []).isEmpty)
    ledger.recordDurable(6...8, of: id, device: 0)
    let failures = ledger.failures(finalReplicas: [])
    #expect(failures.count == 1)
    #expect(failures.first?.contains("a dot issued twice") == true)
  }

  @Test func ledgerCatchesALostDurableEdit() {
    var holder = Replica(id: ReplicaID(rawValue: 9))
    let note = EntityKey(type: "note", id: "a")
    holder.transact { $0.setValue(.string("kept"), for: "title", of: note) }
    var ledger = DurabilityLedger()
    ledger.recordDurable(1...1, of: holder.id, device: 0)
    #expect(ledger.failures(finalReplicas: [holder]).isEmpty)
    ledger.recordDurable(2...2, of: holder.id, device: 0)
    #expect(ledger.failures(finalReplicas: [holder]).first?.contains("was lost") == true)
    // A stale restore takes back what was durable since the backup: the user's restore,
    // not a crash. What was durable before the backup must still survive.
    ledger.restoredFromBackup(0)
    #expect(ledger.failures(finalReplicas: [holder]).isEmpty)
    ledger.backedUp(0)
    ledger.recordDurable(3...3, of: holder.id, device: 0)
    ledger.recordDurable(4...4, of: holder.id, device: 1)
    ledger.restoredFromBackup(0)
    #expect(ledger.failures(finalReplicas: [holder]).first?.contains("up to 4") == true)
  }

  @Test func scheduleCarriesRestartsAndOldSchedulesReadAsNone() throws {
    let configuration = Self.restarting(seed: 3)
    let text = SimulationSchedule.text(of: configuration)
    #expect(try SimulationSchedule.configuration(parsing: text) == configuration)
    let old = text.split(separator: "\n")
      .filter {
        !$0.hasPrefix("restarts") && !$0.hasPrefix("sync-interval") && !$0.hasPrefix("library")
      }
      .joined(separator: "\n")
    let parsed = try SimulationSchedule.configuration(parsing: old)
    #expect(parsed.restarts == 0 && parsed.syncInterval == 0)
    #expect(configuration.command.contains("--restarts 0.02 --sync-interval 200"))
  }
}
