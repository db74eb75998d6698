import Converge
import ConvergeStore

/// Devices' stores: pushes of durable commits only, the app's sync timer, backups, and
/// restarts that kill a device without closing its store.
extension SimulationRun {
  /// The app's timer on every device (``DeviceReplica/syncIfDue()``), then the pushes of
  /// whatever became durable.
  mutating func pushDurable() {
    onEveryDevice { replica throws(StoreError) in replica.syncIfDue() }
  }

  /// Runs `operation` on every device's replica, then pushes what it made durable.
  private mutating func onEveryDevice(
    _ operation: (DeviceReplica) throws(StoreError) -> Void
  ) {
    for device in devices.indices {
      do {
        try operation(devices[device].deviceReplica)
      } catch {
        ledger.storeErrors.append("device \(device): \(error)")
      }
      pushDurable(from: device)
    }
  }

  /// Pushes `device`'s commits that its store has made durable, in commit order, to every
  /// peer if the device is online (write-ahead: a peer never holds an edit the device
  /// could lose). Offline, they wait for a handshake.
  mutating func pushDurable(from device: Int) {
    if let error = devices[device].store.lastError {
      ledger.storeErrors.append("device \(device): \(error)")
    }
    let durable = devices[device].takeDurable()
    guard !durable.isEmpty else { return }
    for entry in durable {
      ledger.recordDurable(entry.counters, of: entry.replica, device: device)
      guard configuration.livePush, devices.count > 1 else { continue }
      if network.isOnline(device, at: now) {
        push(entry.commit, from: device)
      } else {
        network.statistics.heldOffline += 1
      }
    }
  }

  /// With probability ``SimulationConfiguration/restarts`` per operation, kills a random
  /// device and reopens its store: from what a power cut left (with a torn tail now and
  /// then), or, one time in five when a backup exists, from that stale backup. Backups
  /// (crash-consistent copies of the directory) are taken at half that rate.
  mutating func restartOrBackUp() {
    let rate = configuration.restarts
    guard rate > 0 else { return }
    if restartRandom.chance(rate / 2) {
      let device = Int.random(in: devices.indices, using: &restartRandom)
      devices[device].backUp()
      ledger.backedUp(device)
    }
    guard restartRandom.chance(rate) else { return }
    let device = Int.random(in: devices.indices, using: &restartRandom)
    let tornBytes = restartRandom.chance(0.3) ? Int.random(in: 1...64, using: &restartRandom) : 0
    let fromBackup = devices[device].hasBackup && restartRandom.chance(0.2)
    // Every restart is drawn, so a shrinker's cuts leave the others where they were.
    let index = statistics.restartsDrawn
    statistics.restartsDrawn += 1
    var damage: SimulatedDevice.FileDamage?
    if configuration.fileLoss > 0, fileDamageRandom.chance(configuration.fileLoss) {
      damage = SimulatedDevice.FileDamage.allCases.randomElement(using: &fileDamageRandom)
    }
    guard configuration.cuts.keepsRestart(index) else { return }
    let stale = fromBackup && !configuration.cuts.plainRestarts.contains(index)
    statistics.restartLog.append(index)
    if stale { statistics.staleRestoreLog.append(index) }
    restart(device, tornBytes: tornBytes, fromBackup: stale, damage: damage)
  }

  /// Kills `device` and reopens its store; its sessions start afresh (a new process),
  /// its peers' sessions with it are reset (the connection dropped), and it opens a
  /// handshake with every peer it can reach.
  mutating func restart(
    _ device: Int, tornBytes: Int, fromBackup: Bool, damage: SimulatedDevice.FileDamage? = nil
  ) {
    let before = devices[device].store.replica.id
    do {
      statistics.unsyncedCommitsLost += try devices[device].restart(
        tornBytes: tornBytes, fromBackup: fromBackup && devices[device].hasBackup,
        inPlace: hooks.restoresInPlace, damage: damage)
    } catch {
      ledger.storeErrors.append("device \(device) did not reopen: \(error)")
      return
    }
    statistics.restarts += 1
    // A card created only in a commit the restart lost exists nowhere: not a lost card;
    // one of a durable commit a stale restore took back exists if it left the device
    // before (the oracle checks at the end).
    createdCards.subtract(devices[device].lostCards)
    cardsTakenBack += devices[device].takenBackCards
    if devices[device].store.recovery.snapshotTagged { statistics.taggedRestarts += 1 }
    if fromBackup {
      statistics.staleRestores += 1
      ledger.restoredFromBackup(device)
    }
    if devices[device].damagedAFile {
      statistics.damagedFiles += 1
      // What the lost file held is gone from this device, as after a stale restore;
      // the store must say so and never issue those dots again.
      ledger.lostFiles(device)
      let recovery = devices[device].store.recovery
      if recovery.losses.isEmpty && recovery.cutTails.isEmpty {
        ledger.storeErrors.append(
          "device \(device): a lost or damaged file (\(damage.map { "\($0)" } ?? "")) went "
            + "unreported")
      }
    }
    if devices[device].store.replica.id != before { statistics.identityChanges += 1 }
    reconnect(device)
  }

  /// `device` comes back as a new process: its sessions start afresh, its peers'
  /// sessions with it are reset (the connection dropped), and it opens a handshake with
  /// every peer it can reach.
  mutating func reconnect(_ device: Int) {
    for peer in devices.indices where peer != device {
      sessions[device][peer] = SyncSession(streamSeed: sessionSeeds.next())
      sessions[peer][device].reset()
    }
    for peer in devices.indices where peer != device {
      startHandshake(from: device, to: peer)
    }
  }

  /// The end of the run: every device flushes (the app goes to the background) and
  /// pushes what that made durable.
  mutating func flushAll() {
    onEveryDevice { replica throws(StoreError) in try replica.flush() }
  }
}

/// What the devices' stores promised, for the oracle: no dot is made durable (and so
/// possibly sent) twice, and no durable dot is lost by a crash.
struct DurabilityLedger {
  /// Every counter made durable, per replica id.
  private var issued = CausalContext()
  /// The durable counters that must be in the converged state: all of them, except
  /// those a stale restore took back.
  private var mustSurvive = CausalContext()
  /// Per device, the counters made durable since its last backup.
  private var sinceBackup: [Int: CausalContext] = [:]
  /// Events of retired ids that a rejoin re-applied under a fresh id (or dropped, by the
  /// rebase's rule): no replica holds them as such at the end.
  private var reapplied = CausalContext()
  /// Per device, every counter it made durable.
  private var everDurable: [Int: CausalContext] = [:]
  /// Dots made durable twice, one line each.
  private var reuses: [String] = []
  /// Store operations that failed (the simulated disk never fails by itself).
  var storeErrors: [String] = []

  /// Records that a commit with `counters` of `replica` became durable on `device`.
  mutating func recordDurable(_ counters: ClosedRange<UInt64>, of replica: ReplicaID, device: Int) {
    let highest = issued.counters(of: replica).maximum
    if highest >= counters.lowerBound && reuses.count < 10 {
      reuses.append(
        "device \(device) made dots \(replica):\(counters) durable, but \(replica) had issued "
          + "up to \(highest) before: a dot issued twice")
    }
    issued.insert(replica: replica, counters: counters)
    mustSurvive.insert(replica: replica, counters: counters)
    sinceBackup[device, default: CausalContext()].insert(replica: replica, counters: counters)
    everDurable[device, default: CausalContext()].insert(replica: replica, counters: counters)
  }

  /// Notes that a file of `device`'s store was lost or damaged: any of its durable dots
  /// may be gone from it (a peer may still hold them), so none is required to survive;
  /// they must still never be issued again.
  mutating func lostFiles(_ device: Int) {
    if let durable = everDurable[device] { mustSurvive = mustSurvive.subtracting(durable) }
  }

  /// Notes that a rejoin re-applied `events` (the retired device's, which the state it
  /// rebased on lacked) under a fresh id: they need not survive as such.
  mutating func rebased(_ events: CausalContext) {
    mustSurvive = mustSurvive.subtracting(events)
    reapplied.formUnion(events)
  }

  /// Notes that `device` took a backup of its directory.
  mutating func backedUp(_ device: Int) { sinceBackup[device] = CausalContext() }

  /// Durable dots that no converged replica holds: those stale restores took back
  /// before any peer received them (the loss check covers all others).
  func takenBack(finalReplicas replicas: [Replica]) -> UInt64 {
    guard let final = replicas.first?.context else { return 0 }
    return issued.subtracting(final).subtracting(reapplied).eventCount
  }

  /// Notes that `device` was restored from its backup: what it made durable since is
  /// gone from it. That is the user's restore, not the store's loss, so those dots are
  /// no longer required to survive (a peer may still hold them); they must still never
  /// be issued again.
  mutating func restoredFromBackup(_ device: Int) {
    if let lost = sinceBackup[device] { mustSurvive = mustSurvive.subtracting(lost) }
    sinceBackup[device] = CausalContext()
  }

  /// The ledger's failures given the converged replicas: reuses, store errors, and
  /// durable dots missing from the first replica.
  func failures(finalReplicas replicas: [Replica]) -> [String] {
    var failures = reuses + storeErrors.prefix(10)
    guard let final = replicas.first?.context else { return failures }
    for (replica, counters) in mustSurvive.entries {
      let held = final.counters(of: replica)
      if !held.isSuperset(of: counters) {
        failures.append(
          "durable dots of \(replica) up to \(counters.maximum) are missing after the run "
            + "(it holds up to \(held.maximum)): an acknowledged edit was lost")
      }
    }
    return failures
  }
}

extension SimulationRun {
  /// The cards the run created that can exist at the end: every card created, less those
  /// of durable commits that stale restores took back and that no replica of `replicas`
  /// holds (taken back before any peer received them).
  func cardsCreated(heldBy replicas: [Replica]) -> Set<String> {
    var created = createdCards
    for taken in cardsTakenBack
    where !replicas.contains(where: { $0.context.contains(taken.dot) }) {
      created.remove(taken.card)
    }
    return created
  }
}
