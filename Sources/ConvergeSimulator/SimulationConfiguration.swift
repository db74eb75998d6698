/// The apps a simulation imitates.
public enum WorkloadKind: String, Sendable, CaseIterable {
  /// A notes app: notes created and deleted, titles edited, tags, typing in bodies.
  case notes
  /// A tasks app: status, priority, due dates, flags, tags and board positions.
  case tasks
  /// Both apps' edits on the same replicas.
  case mixed
  /// A kanban board: cards (string ids) in the movable `cards` lists of a few column
  /// entities, inserted, moved within a column, moved across columns (removed from one
  /// list and inserted into another in one transaction) and removed.
  case boards
}

/// What the simulated network does to messages.
///
/// Loss and duplication are decided when a message is sent; partitions and offline
/// devices cut a message when it arrives. Rates are probabilities per message (loss,
/// duplication, reordering) or per operation (a partition starting, a device going
/// offline).
public struct NetworkFaults: Sendable, Equatable {
  /// Probability that a message is lost.
  public var loss: Double
  /// Probability that a message is delivered twice.
  public var duplicate: Double
  /// Probability that a message is held back long enough to overtake later ones.
  public var reorder: Double
  /// Probability per operation that the replicas split into groups that cannot talk.
  public var partitions: Double
  /// Probability per operation that a device goes offline for a while.
  public var offline: Double
  /// One-way latency of a link, in simulated milliseconds.
  public var latency: ClosedRange<UInt64>

  public init(
    loss: Double = 0, duplicate: Double = 0, reorder: Double = 0, partitions: Double = 0,
    offline: Double = 0, latency: ClosedRange<UInt64> = 5...80
  ) {
    self.loss = loss
    self.duplicate = duplicate
    self.reorder = reorder
    self.partitions = partitions
    self.offline = offline
    self.latency = latency
  }

  /// A perfect network (latency only).
  public static let none = NetworkFaults()

  /// A lossy, reordering, duplicating network with partitions and offline devices.
  public static let hostile = NetworkFaults(
    loss: 0.1, duplicate: 0.05, reorder: 0.2, partitions: 0.0005, offline: 0.001)
}

/// Everything that determines a run: the same configuration gives the same run, and the
/// same final state, in any process.
public struct SimulationConfiguration: Sendable, Equatable {
  /// The seed every random choice derives from.
  public var seed: UInt64
  /// How many replicas are forked from the origin.
  public var replicas: Int
  /// How many transactions the replicas make in total.
  public var operations: Int
  /// The app the edits imitate.
  public var workload: WorkloadKind
  /// The network's faults.
  public var faults: NetworkFaults
  /// Whether each transaction's delta is pushed to every peer at once.
  public var livePush: Bool
  /// Whether live pushes travel as frames of a per-pair ``SyncSession`` stream (see
  /// ``SyncSession/pushEncoded(_:from:)``) instead of self-contained deltas: a frame the
  /// network lost, duplicated or reordered is refused and repaired by a handshake.
  public var framedPushes: Bool
  /// One anti-entropy handshake between two random replicas every this many operations
  /// (0: none until the end of the run).
  public var antiEntropyInterval: Int
  /// If set, only the first this many messages are sent during the run; the rest are
  /// dropped (a knob for shrinking a failure to few deliveries).
  public var messageLimit: Int?
  /// Entities the origin holds besides its few (a long-lived library of thousands, as
  /// an app keeps): edits then spread over them, and handshakes find the few entities
  /// that changed among many.
  public var library: Int
  /// Probability per operation that a device is killed without closing its store and
  /// reopened from its disk: from what a power cut kept (a torn tail now and then) or,
  /// now and then, from a stale backup of its directory. 0: devices never restart.
  public var restarts: Double
  /// How long a device's store lets commits wait for their sync while typing continues
  /// (``DocumentStore/Configuration/syncInterval``), in simulated milliseconds. A local
  /// commit is pushed once durable, so this delays pushes too. 0: every commit syncs.
  public var syncInterval: UInt64
  /// Probability per operation that the user presses Undo (two times in three) or Redo
  /// instead of editing: devices record their edits in an ``UndoHistory`` and take back
  /// their own steps while remote edits arrive. 0: nobody undoes.
  public var undo: Double = 0
  /// Probability per restart that a file of the device's store directory is lost or
  /// damaged as well (its newest log or snapshot deleted, or a byte of its newest log
  /// flipped), as a sync tool, a partial backup or a failing disk would: the store must
  /// report it, take a fresh replica id and still converge. 0: files are only torn.
  public var fileLoss: Double = 0
  /// Probability per operation that a device forgets mid-run: it computes the stable
  /// cut from the contexts its peers stated in the handshakes its sessions decoded with
  /// ``CausalContext/stableCut(of:seenBy:)`` and calls
  /// ``DeviceReplica/forgetDeleted(stable:)``; it cannot while a member has not stated
  /// one since the last retirement. 0: nobody forgets before the oracle's check after
  /// the run. A run with stability restarts no device and syncs every commit
  /// (``restarts``, ``fileLoss`` and ``syncInterval`` are ignored): a restart can take
  /// back what a device stated, and a commit waiting for its sync is left out of what it
  /// states.
  public var forgetting: Double = 0
  /// Virtual milliseconds after which a device away that long is retired by the others
  /// (all by the schedule's one rule); when it returns it rejoins through
  /// ``DeviceReplica/rejoin(onto:stable:heldBy:as:)`` on a peer's state. 0: nobody is
  /// retired.
  public var horizon: UInt64 = 0
  /// Probability per operation that a device leaves for longer than ``horizon`` (it
  /// keeps editing offline). Needs a horizon.
  public var leaves: Double = 0
  /// Whether each device collects its list fields' slot tombstones during a stability
  /// run, at the doubly stable cuts its own forgets find (a ``StableCutHistory`` per
  /// device fed with each cut and the union of the reports it came from), and the oracle
  /// collects its copies at the final cut as it forgets them.
  public var collectsLists = false
  /// Operations and sends a schedule shrinker removed (see ``ScheduleCuts``); a
  /// configuration with cuts replays from its ``SimulationSchedule`` file, not its
  /// ``command``.
  public var cuts = ScheduleCuts()

  public init(
    seed: UInt64 = 1, replicas: Int = 5, operations: Int = 2_000, workload: WorkloadKind = .mixed,
    faults: NetworkFaults = .hostile, livePush: Bool = true, framedPushes: Bool = false,
    antiEntropyInterval: Int = 25, messageLimit: Int? = nil, library: Int = 0,
    restarts: Double = 0, syncInterval: UInt64 = 0, cuts: ScheduleCuts = ScheduleCuts()
  ) {
    self.seed = seed
    self.replicas = Swift.max(1, replicas)
    self.operations = Swift.max(0, operations)
    self.workload = workload
    self.faults = faults
    self.livePush = livePush
    self.framedPushes = framedPushes
    self.antiEntropyInterval = Swift.max(0, antiEntropyInterval)
    self.messageLimit = messageLimit
    self.library = Swift.max(0, library)
    self.restarts = Swift.min(1, Swift.max(0, restarts))
    self.syncInterval = syncInterval
    self.cuts = cuts
  }

  /// Whether devices forget or are retired during the run: restarts are then off.
  public var hasStability: Bool { forgetting > 0 || (horizon > 0 && leaves > 0) }

  /// Turns on forgetting and retirement at the rates `converge simulate --stability`
  /// uses: a device forgets with probability 0.05 per operation, and leaves with 0.002
  /// for longer than a 5-second horizon (a run's operations take about 10 simulated
  /// milliseconds each), is retired and rejoins; devices collect their lists' slot
  /// tombstones at the doubly stable cuts they find (``collectsLists``).
  public mutating func enableStability() {
    forgetting = 0.05
    horizon = 5_000
    leaves = 0.002
    collectsLists = true
  }

  /// The `converge simulate` arguments that replay this configuration.
  public var arguments: [String] {
    var result = [
      "--seed", "\(seed)", "--replicas", "\(replicas)", "--operations", "\(operations)",
      "--workload", workload.rawValue,
      "--loss", "\(faults.loss)", "--duplicate", "\(faults.duplicate)",
      "--reorder", "\(faults.reorder)", "--partitions", "\(faults.partitions)",
      "--offline", "\(faults.offline)", "--anti-entropy", "\(antiEntropyInterval)",
    ]
    if !livePush { result.append("--no-live-push") }
    if framedPushes { result.append("--frames") }
    if let messageLimit { result += ["--message-limit", "\(messageLimit)"] }
    if library > 0 { result += ["--library", "\(library)"] }
    if restarts > 0 { result += ["--restarts", "\(restarts)"] }
    if syncInterval > 0 { result += ["--sync-interval", "\(syncInterval)"] }
    if undo > 0 { result += ["--undo", "\(undo)"] }
    if fileLoss > 0 { result += ["--file-loss", "\(fileLoss)"] }
    if forgetting > 0 { result += ["--forget", "\(forgetting)"] }
    if horizon > 0 { result += ["--horizon", "\(horizon)"] }
    if leaves > 0 { result += ["--leave", "\(leaves)"] }
    if collectsLists { result.append("--collect-lists") }
    return result
  }

  /// The command that replays this configuration.
  public var command: String {
    (["converge", "simulate"] + arguments).joined(separator: " ")
  }
}
