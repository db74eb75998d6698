import Converge
import ConvergeStore
import ConvergeTestSupport
import Foundation  // NSLock

/// One simulated device: its replica is a ``DeviceReplica`` over a store on the device's
/// own ``MemoryFileSystem``, as an app's data lives on its disk. Every edit, undo and
/// received delta goes through the device replica, which logs and group-commits it; a
/// local edit leaves the device only once the store made it durable (write-ahead); and a
/// restart reopens it from what a power cut left on the disk, or from a stale copy of the
/// directory, as a restored backup would.
struct SimulatedDevice {
  static let directory = "/converge"
  static let backupDirectory = "/backup"

  let disk = MemoryFileSystem()
  let configuration: DocumentStore.Configuration
  /// The owner every edit and every message goes through.
  var deviceReplica: DeviceReplica
  /// The store beneath it, for the simulator's counters and checks.
  var store: DocumentStore { deviceReplica.store }
  /// Local commits the store has not made durable yet, with their place in the store's
  /// commit order (``DocumentStore/committed`` after each): they are pushed, in order,
  /// once ``DocumentStore/durableCommits`` reaches them.
  var unpushed: [Unpushed] = []

  /// A local commit waiting for its sync, with the dots it issued.
  struct Unpushed {
    var sequence: Int
    var commit: Commit
    var replica: ReplicaID
    var counters: ClosedRange<UInt64>
    /// The cards the commit created (boards workload): gone with it if it is lost.
    var createdCards: [String]
    /// The commit's latest dot: a replica holding it holds the commit.
    var latestDot: Dot { Dot(replica: replica, counter: counters.upperBound) }
  }
  /// Whether a backup of the directory was taken.
  var hasBackup = false

  /// The user's undo history, in memory like an app's: each operation its own step, and
  /// gone at a restart. Bounded, since most runs never press Undo.
  static func freshHistory() -> UndoHistory {
    UndoHistory(groupingInterval: .zero, maximumSteps: 1_000)
  }

  /// A device whose store opens empty under the first id of `ids`, then installs
  /// `origin` (a first sync from the device the document was created on).
  init(
    origin: Replica, ids: ReplicaIDSource, wallClock: WallClock, clock: VirtualClock,
    syncInterval: UInt64, compactionLogBytes: Int
  ) throws(StoreError) {
    var configuration = DocumentStore.Configuration()
    configuration.fileSystem = disk
    configuration.syncInBackground = false
    // A device's document is small: compacting at 256 KiB (the simulation's default)
    // keeps each reopen's log replay short, as an app's own compaction policy would.
    configuration.compactionLogBytes = compactionLogBytes
    configuration.syncInterval = .milliseconds(syncInterval)
    configuration.now = { .milliseconds(clock.now) }
    configuration.wallClock = wallClock
    configuration.freshID = { ids.next() }
    configuration.freshKey = { ids.nextKey() }
    self.configuration = configuration
    deviceReplica = DeviceReplica(
      store: try DocumentStore(directory: Self.directory, configuration: configuration),
      undoHistory: Self.freshHistory())
    deviceReplica.apply(origin.delta(since: CausalContext()))
    try deviceReplica.flush()
  }

  /// Makes one transaction of `workload` through the device replica and keeps it for its
  /// push.
  mutating func perform(_ workload: inout Workload, undoRate: Double = 0) -> Commit {
    let before = store.replica.context.counters(of: store.replica.id).maximum
    // Without undo the workload draws exactly as it always did (recorded seeds and
    // schedules replay unchanged) and records nothing.
    let commit =
      undoRate > 0
      ? workload.perform(on: deviceReplica, undoRate: undoRate)
      : workload.perform(on: deviceReplica)
    let replica = store.replica.id
    let latest = commit.delta.latestCounter(of: replica)
    if !commit.delta.isEmpty && latest > before {
      unpushed.append(
        Unpushed(
          sequence: store.committed, commit: commit, replica: replica,
          counters: (before + 1)...latest, createdCards: workload.lastCardEvents.created))
    }
    return commit
  }

  /// The commits now durable and not yet pushed, in commit order.
  mutating func takeDurable() -> [Unpushed] {
    let durable = store.durableCommits
    guard let first = unpushed.first, first.sequence <= durable else { return [] }
    let count = unpushed.firstIndex { $0.sequence > durable } ?? unpushed.count
    defer { unpushed.removeFirst(count) }
    return Array(unpushed.prefix(count))
  }

  /// Copies what is durable in the directory now to the backup directory.
  mutating func backUp() {
    disk.copyDirectory(Self.directory, to: Self.backupDirectory, durableOnly: true)
    hasBackup = true
  }

  /// Kills the app without closing its store: with `tornBytes` above 0 it dies during a
  /// sync, after writing its buffered records and before `fsync`, and the disk keeps
  /// that many bytes of the unsynced tail (a torn record); otherwise the disk keeps what
  /// was synced. With `fromBackup`, the
  /// directory is then replaced by the last backup (new files, so the store sees a
  /// copy). The store reopens from the disk; unsynced commits are gone.
  ///
  /// - Returns: how many local commits were lost before they were durable.
  mutating func restart(
    tornBytes: Int, fromBackup: Bool, inPlace: Bool = false, damage: FileDamage? = nil
  ) throws(StoreError) -> Int {
    let waiting = unpushed
    // What was durable before the kill: such a commit may have left the device in a
    // handshake before its push (a session sends what is durable), so a stale restore that
    // takes it back here does not take it back from its peers.
    let durable = store.durableCommits
    unpushed = []
    if tornBytes > 0 {
      // Killed during a sync: the records are written, the `fsync` never happens.
      disk.failAnyOperation(at: 1)
      do { try store.flush() } catch {}  // the failure is the point
    }
    disk.crash { tail in Swift.min(tail, tornBytes) }
    if fromBackup && hasBackup {
      disk.copyDirectory(Self.backupDirectory, to: Self.directory, inPlace: inPlace)
    }
    damagedAFile = damage?.apply(to: disk, in: Self.directory) ?? false
    deviceReplica = DeviceReplica(
      store: try DocumentStore(directory: Self.directory, configuration: configuration),
      undoHistory: Self.freshHistory())
    // Taken back: the commits whose dots the reopened store does not hold (a torn tail can
    // keep a whole record). Those not durable at the kill are lost: they never left the
    // device (and the device may reuse their counters). A durable one may have left in a
    // handshake before its push (a session sends what is durable) although a stale
    // restore took it back here (and the store then takes a fresh id), so whether its
    // cards exist is known only at the end: they do if some replica holds its dots.
    let context = store.replica.context
    let takenBack = waiting.filter { !context.contains($0.latestDot) }
    let lost = takenBack.filter { $0.sequence > durable }
    lostCards = lost.flatMap(\.createdCards)
    takenBackCards = takenBack.filter { $0.sequence <= durable }.flatMap { commit in
      commit.createdCards.map { (card: $0, dot: commit.latestDot) }
    }
    return lost.count
  }

  /// Whether the last restart lost or damaged a file (there was one to hit).
  var damagedAFile = false
  /// The cards created by the commits the last restart lost before they were durable:
  /// they never left the device, so no replica shows them, rightly.
  var lostCards: [String] = []
  /// The cards created by durable commits the last restart took back (a stale restore),
  /// each with its commit's latest dot: such a card exists at the end only if some
  /// replica holds that dot.
  var takenBackCards: [(card: String, dot: Dot)] = []

  /// A file of the store's directory lost or damaged while the device was off.
  enum FileDamage: CaseIterable {
    case newestLogLost
    case newestSnapshotLost
    /// A byte in the middle of the newest log flipped.
    case newestLogFlipped

    /// Does it to the newest file of its kind in `directory`, if there is one; returns
    /// whether there was.
    func apply(to disk: MemoryFileSystem, in directory: String) -> Bool {
      let prefix = self == .newestSnapshotLost ? "snapshot-" : "log-"
      let names = ((try? disk.contents(ofDirectory: directory)) ?? []).filter {
        $0.hasPrefix(prefix)
      }
      // Generations are hexadecimal of one width per kind: the largest name is the newest.
      guard let newest = names.max(by: { ($0.count, $0) < ($1.count, $1) }) else { return false }
      let path = directory + "/" + newest
      switch self {
      case .newestLogLost, .newestSnapshotLost:
        return (try? disk.remove(path)) != nil
      case .newestLogFlipped:
        guard var bytes = disk.bytes(path), !bytes.isEmpty else { return false }
        bytes[bytes.count / 2] ^= 0x5A
        disk.setBytes(bytes, at: path)
        return true
      }
    }
  }
}

/// The replica ids a device's store takes, drawn from the run's seed.
///
/// `@unchecked Sendable`: the store asks for an id from its owner's thread only (the
/// simulator runs its stores with `syncInBackground` off); the lock makes that so even
/// if it changed.
final class ReplicaIDSource: @unchecked Sendable {
  private let lock = NSLock()
  private var first: ReplicaID?
  private var random: SimulationRandom
  private var keys: SeededGenerator

  /// A source whose first id is `first` and whose later ids come from `random`.
  init(first: ReplicaID, random: SimulationRandom) {
    self.first = first
    self.random = random
    keys = SeededGenerator(seed: first.rawValue ^ 0x6B65_7973)
  }

  func next() -> ReplicaID {
    lock.withLock {
      if let id = first {
        first = nil
        return id
      }
      return .random(using: &random)
    }
  }

  /// A store key, drawn from a generator of its own seeded by the first id, so that the
  /// ids drawn (and recorded runs) are the ones drawn before stores had keys.
  func nextKey() -> SnapshotKey {
    lock.withLock { SnapshotKey(using: &keys) }
  }
}
