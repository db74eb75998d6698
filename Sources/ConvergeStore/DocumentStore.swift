import Converge

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A replica kept durably in a directory: every acknowledged edit survives a crash, a save
/// costs the edit (an append to a log), and the device keeps one replica id across
/// launches without ever reusing a dot.
///
/// A store is the persistence engine beneath ``DeviceReplica``, the type an app holds:
/// the device replica adds undo, observation, change events and durable-only messages
/// that need no flush. Use a store directly in tools that need its files and counters
/// (the simulator, benchmarks, the torture test).
///
/// The directory holds an `identity` record, a `key` (the store's ``SnapshotKey``), at
/// most one `snapshot-G` (the encoded document of generation G, framed) with its `tag-G`
/// (the snapshot's tag under the key), and the `log-G` files of the deltas since, each a
/// sequence of framed ``DocumentDelta`` messages (see ``RecordFrame``), and a `generation`
/// record naming the newest generation whose log a compaction made durable. Opening
/// recovers the newest whole snapshot and replays every log of its generation or later; a
/// torn tail is cut at its last whole record and reported in ``recovery``. Every loss (a
/// missing snapshot or log, a log damaged before whole records, a damaged snapshot or
/// identity) is reported in ``StoreRecovery/losses``, makes the store take a fresh replica
/// id, and leaves the damaged bytes beside the store as `damaged-<name>-<n>`, never read
/// or removed again. Files of generations older than the one recovered are removed once
/// what replaces them is durable. A snapshot
/// whose tag matches the key is the store's own: its texts are decoded when first read
/// (``StoreRecovery/snapshotTagged``); any other loads with every check.
///
/// ```swift
/// let store = try DocumentStore(directory: notesFolder.path)
/// store.onDurable = { deltas in relay.send(deltas) }  // only durable deltas leave the device
/// store.transact { $0.setValue(.string("Groceries"), for: "title", of: note) }
/// try store.flush()  // when the app goes to the background
/// try store.close()  // marks a clean shutdown
/// ```
///
/// **Group commit.** ``transact(_:)`` appends its encoded delta to a buffer in memory; the
/// buffer is framed, written and synced (`fsync`) at most once per
/// ``Configuration/syncInterval`` of typing (checked on each commit and by ``syncIfDue()``,
/// which an app calls from a timer) and at once by ``flush()``. A delta reaches
/// ``onDurable``, ``takeDurableDeltas()`` or ``outbox(for:)`` only after that sync, so a
/// peer never holds an edit the device could lose. A log grown past the last snapshot and
/// past either ``Configuration/compactionLogBytes`` or ``Configuration/compactionRecords``
/// records is compacted by the next due sync (or, past the records bound, right after a
/// ``flush()``), which encodes a snapshot of the document in the background too: an open
/// replays a bounded log.
///
/// **Failures.** A failed write or sync throws a ``StoreError`` from ``flush()`` (or sets
/// ``lastError`` when a commit triggered the sync). Nothing unsynced is acknowledged; the
/// next sync writes a fresh snapshot of the whole replica in a new generation rather than
/// appending after a record that may be torn, so a failure never blocks later saves.
///
/// **Isolation.** A store is a reference to files and is not `Sendable`: one isolation
/// domain owns it (the main actor, or an app's own actor), as it would own a file handle.
/// A background sync touches only the bytes (or the copy of the document) handed to it
/// and the files, as does a background save of the acknowledged contexts (a copy of
/// them, see ``recordAcknowledgement(_:from:)``); their results are collected (and
/// ``onDurable`` called) in the owner's domain, on its next call.
/// Two stores must not open one directory at the same time.
public final class DocumentStore {
  /// How a store syncs, compacts and tells time.
  public struct Configuration: Sendable {
    /// The longest a commit waits for its sync while typing continues.
    public var syncInterval: Duration = .milliseconds(200)
    /// Whether a due sync runs on a background queue, so that typing never waits for
    /// `fsync`; ``flush()``, ``compact()`` and ``close()`` still wait for it.
    public var syncInBackground = true
    /// The log size beyond which a commit compacts (writes a snapshot and a fresh log),
    /// once the log has also outgrown the last snapshot: every snapshot is then paid for
    /// by at least as many bytes of log, so compaction at most doubles what the store
    /// writes however large the document grows, and a reopen replays at most a
    /// snapshot's worth of log.
    public var compactionLogBytes = 8 << 20
    /// The log records beyond which a sync compacts, once the log has also outgrown the
    /// last snapshot: what bounds an open's time for small edits, which a byte threshold
    /// alone does not (100,000 keystrokes make a log of under 6 MiB that took 156–243 ms to
    /// replay, against about 1 ms to load as a snapshot).
    ///
    /// A small record replays in about 2 µs, so 1,000 records take about 2 ms. The bound
    /// applies only once the log holds at least the last snapshot's bytes, as the byte
    /// threshold does: every snapshot is still paid for by as many bytes of log, so
    /// compaction at most doubles what the store writes however small the threshold. An
    /// open therefore replays at most this many records or a snapshot's worth of log,
    /// whichever is more: about 1,400 small records at 100,000 keystrokes, whose snapshot
    /// is 80 KB.
    public var compactionRecords = 1_000
    /// The files; tests inject failures and power cuts here.
    public var fileSystem: any StoreFileSystem = POSIXFileSystem()
    /// A monotonic clock for group commit; tests pass a manual one. The default is a
    /// coarse clock (a few milliseconds' resolution, a fraction of the cost of a precise
    /// one), which is all a 200 ms interval needs.
    public var now: @Sendable () -> Duration = { coarseMonotonicNow() }
    /// The replica's wall clock.
    public var wallClock: WallClock = .system
    /// Where fresh replica ids come from; simulations pass a seeded source.
    public var freshID: @Sendable () -> ReplicaID = { .random() }
    /// Where a new store's ``SnapshotKey`` comes from; simulations pass a seeded source.
    public var freshKey: @Sendable () -> SnapshotKey = { .random() }

    public init() {}
  }

  /// The replica; change it only through the store so that every edit is logged.
  ///
  /// Reading it inside a ``transact(_:)`` body traps, as would any other use of the store
  /// there: the transaction holds the document then (read it through the transaction).
  public var replica: Replica {
    checkOutsideTransaction()
    return storedReplica
  }
  /// The store's directory.
  public let directory: String
  /// What opening found and repaired.
  public private(set) var recovery: StoreRecovery
  /// Called after each sync with the deltas it made durable, in commit order.
  public var onDurable: (([[UInt8]]) -> Void)?
  /// The last durability failure of a sync a commit triggered (or of removing superseded
  /// files after a compaction), cleared by the next successful sync.
  public internal(set) var lastError: StoreError?
  /// Commits made durable since opening: a monotonic sequence an app can wait on.
  public private(set) var durableCommits = 0
  /// Commits appended since opening (durable or not).
  @exclusivity(unchecked) public private(set) var committed = 0
  /// Syncs (`fsync` of the log, or compactions) since opening.
  public private(set) var syncCount = 0
  /// Every fresh replica id this store took since opening, and why (the one taken at open
  /// is also in ``recovery``).
  public internal(set) var identityChanges: [IdentityChange] = []

  let configuration: Configuration
  var fileSystem: any StoreFileSystem { configuration.fileSystem }
  /// The key that tags the store's snapshots, kept in its `key` file.
  let snapshotKey: SnapshotKey
  var generation: UInt64
  var logBytes = 0
  /// The records an open would replay: those of the logs since the last snapshot.
  var logRecords = 0
  var snapshotBytes = 0
  /// The replica. `transact` holds it across the app's body, so it is
  /// `@exclusivity(unchecked)` with `isTransacting` in place of the runtime check: every
  /// entry point traps while a body runs, for a flag's price instead of an access check's
  /// per commit.
  @exclusivity(unchecked) var storedReplica: Replica
  @exclusivity(unchecked) var isTransacting = false
  /// The encoded deltas of the commits not yet handed to a sync, in commit order; the
  /// sync frames them (on its queue when it runs in the background).
  ///
  /// The commit path's own state is `@exclusivity(unchecked)`: only the store's methods
  /// touch it, never across a call out to app code, so the runtime check each access
  /// would cost (about a twentieth of a keystroke) buys nothing.
  @exclusivity(unchecked) var pending = PendingRecords()
  /// An empty buffer with the capacity a sync handed back, for the next sync's commits.
  var spareRecords = PendingRecords()
  var durableOutbox: [[UInt8]] = []
  /// When the buffered commits are due for their sync: a sync interval after the last.
  @exclusivity(unchecked) var syncDue: Duration
  /// Set after a failed write or sync: the log may end in a torn record, so the next sync
  /// starts a new generation.
  var needsFreshGeneration = false
  /// The sync running in the background, if any, and what it does.
  let backgroundSync = BackgroundSync()
  @exclusivity(unchecked) var running: SyncJob.Work?
  var isClosed = false
  /// The current generation's log, held open between syncs (``openLog()``).
  var logHandle: (any StoreAppendHandle)?
  /// Whether this run readied its files for writing (``prepareForWriting()``).
  var isPrepared = false
  /// Whether the directory holds a whole key file.
  var hasKeyFile = false
  /// The generation the generation record names, if known.
  var recordedGeneration: UInt64?
  /// The identity record the directory holds, as this store read or last wrote it; `nil`
  /// if it does not hold this store's.
  var identityOnDisk: StoreIdentity?
  /// The replica ids this device retired: its own before each ``rejoin(onto:stable:heldBy:as:)``
  /// and those given to ``retire(_:)``. Kept in the identity record, so a reopened store
  /// knows them (an identity record of an earlier version, or none, retires nothing).
  public internal(set) var retiredIDs: Set<ReplicaID> = []
  var acknowledged: [String: CausalContext]
  /// Each pending entity's latest local counter per replica id (normally one): it stays
  /// pending until an acknowledged context holds every counter of that id up to it.
  var pendingDots: [EntityKey: [ReplicaID: UInt64]] {
    get {
      settlePending()
      return settledPending
    }
    set {
      recentPending = nil
      settledPending = newValue
    }
  }
  var settledPending: [EntityKey: [ReplicaID: UInt64]] = [:]
  /// The entity of the latest local commit, held aside from `settledPending` while the
  /// next commits touch the same one: typing in one note then hashes nothing.
  @exclusivity(unchecked) var recentPending: (key: EntityKey, replica: ReplicaID, counter: UInt64)?
  var acknowledgedUnion = CausalContext()
  /// Whether `acknowledged` holds what received deltas showed a peer holds, not yet saved
  /// (or what a failed background save did not save).
  var acknowledgementsUnsaved = false
  /// Whether a background save of `acknowledged` was started and its outcome not yet
  /// taken in (``collectAcknowledgementSave()``). Read by every commit's
  /// ``syncIfDue()``, so unchecked like the commit path's own state.
  @exclusivity(unchecked) var savingAcknowledgements = false
  /// The failure of the latest background save of `acknowledged`, until a save succeeds:
  /// ``flush()`` retries it on the caller's thread.
  var failedAcknowledgementSave: StoreError?

  /// Opens (or creates) the store in `directory`, recovering what the last run left.
  ///
  /// A relative `directory` is resolved against the current directory, once: ``directory``
  /// holds the absolute path.
  ///
  /// - Throws: a ``StoreError`` if the directory cannot be created or read, or the
  ///   identity record cannot be written (the error names the directory or file). Damaged
  ///   data is cut and reported in ``recovery``, never thrown.
  public init(directory: String, configuration: Configuration = Configuration()) throws(StoreError)
  {
    let directory = try Self.absolutePath(directory)
    self.directory = directory
    self.configuration = configuration
    var report = StoreRecovery()
    let fileSystem = configuration.fileSystem
    let loaded = try Self.recover(directory, fileSystem, &report)
    generation = loaded.generation
    logBytes = loaded.logBytes
    logRecords = report.replayedRecords
    snapshotBytes = loaded.snapshotBytes
    acknowledged = loaded.acknowledged
    report.acknowledgementsReset = loaded.acknowledgementsReset

    // Identity: keep the stored id only when the store can prove every counter it issued.
    let document = loaded.document
    let stored = loaded.identity?.resolved(atGeneration: loaded.generation)
    // Retired ids stay retired whatever id the store continues with.
    retiredIDs = Set(stored?.retired ?? [])
    var change: IdentityChange?
    if let stored {
      let fingerprint = try Self.attempt { try fileSystem.fileIdentity(directory + "/identity") }
      let held = document.context.counters(of: stored.replica).maximum
      report.previousRunClosedCleanly = stored.cleanShutdown
      if fingerprint != stored.fingerprint {
        change = .copiedOrRestored
      } else if !report.losses.isEmpty {
        change = .filesLost
      } else if !stored.cleanShutdown && !report.cutTails.isEmpty {
        change = .uncleanShutdownUnproven
      } else if stored.provenCounter > held {
        change = .counterNotHeld
      } else if loaded.acknowledged.values.contains(where: {
        $0.counters(of: stored.replica).maximum > held
      }) {
        // A saved acknowledgement proves a peer holds dots of this id that the files no
        // longer do (a lost log): the check ``recordAcknowledgement(_:from:)`` makes later.
        change = .peerHoldsLaterDots
      }
    } else {
      change =
        loaded.identityFileExisted || !document.context.isEmpty
        ? .identityUnreadable : .firstLaunch
    }
    let id = change == nil ? stored?.replica ?? configuration.freshID() : configuration.freshID()
    report.identityChange = change
    identityChanges = change.map { [$0] } ?? []
    recovery = report
    storedReplica = Replica(document: document, id: id, wallClock: configuration.wallClock)
    syncDue = configuration.now() + configuration.syncInterval
    snapshotKey = loaded.key ?? configuration.freshKey()
    hasKeyFile = loaded.key != nil
    recordedGeneration = loaded.recordedGeneration
    identityOnDisk = change == nil && loaded.identity?.rejoin == nil ? stored : nil
    // The files are readied for writing (the identity marked unclean) before the first
    // sync, not here: an open that only reads writes nothing. A fresh id, taken for a
    // reason the files may no longer show (a cut log now rewritten, a damaged file moved
    // aside), is made durable at once so that no later open goes back to the old id; a
    // missing or damaged key is replaced at once too.
    // A rejoin's record is replaced at once by the id it resolved to, so that no later
    // generation is taken for the rejoin's.
    if change != nil || loaded.key == nil || loaded.identity?.rejoin != nil {
      try prepareForWriting()
    }
    for (_, context) in acknowledged { acknowledgedUnion.formUnion(context) }
    rebuildPending()
    // A lost or damaged generation leaves files that would be found again at every
    // open; a long log makes every open replay it: fold either into a snapshot now (which
    // also removes the superseded files).
    let lostGeneration = recovery.losses.contains {
      switch $0 {
      case .missingSnapshot, .missingLog, .damagedSnapshot: true
      default: false
      }
    }
    if lostGeneration || logBytes > compactionThreshold {
      try compact()
    } else if !loaded.superseded.isEmpty {
      try removeSupersededFiles(loaded.superseded)
    }
  }

  /// Writes the generation record naming `generation` (a temporary file, synced, renamed
  /// into place); the caller syncs the directory.
  static func writeGenerationRecord(
    _ generation: UInt64, in directory: String, _ fileSystem: any StoreFileSystem
  ) throws {
    let path = directory + "/" + generationRecordName
    try fileSystem.write(encodedTag(generation), to: path + ".tmp")
    try fileSystem.sync(path + ".tmp")
    try fileSystem.rename(path + ".tmp", to: path)
  }

  /// Removes `names`, files of generations before the one recovery started from, once
  /// every file that replaces them is durable (opening read them, but a process killed
  /// before its writes reached the disk leaves them only in the system's cache).
  func removeSupersededFiles(_ names: [String]) throws(StoreError) {
    try Self.attempt {
      let superseded = Set(names)
      for name in try fileSystem.contents(ofDirectory: directory)
      where Self.parse(name) != nil && !superseded.contains(name) {
        try fileSystem.sync(directory + "/" + name)
      }
      try fileSystem.syncDirectory(directory)
      for name in names { try fileSystem.remove(directory + "/" + name) }
      try fileSystem.syncDirectory(directory)
    }
    recovery.removedSupersededFiles = true
  }

  /// Runs a local transaction, appends its delta to the log and syncs if the group
  /// commit interval has passed.
  ///
  /// The returned commit's delta is not yet durable: send deltas from ``onDurable`` or
  /// ``outbox(for:)`` instead.
  ///
  /// - Complexity: the transaction's cost plus O(d) to encode and frame its delta.
  @discardableResult
  public func transact(_ body: (inout DocumentTransaction) -> Void) -> Commit {
    logged(transacting { $0.transact(body) })
  }

  /// Runs `transaction` on the replica, with every other use of the store trapping
  /// meanwhile (the transaction holds the document).
  func transacting(_ transaction: (inout Replica) -> Commit) -> Commit {
    checkOutsideTransaction()
    isTransacting = true
    defer { isTransacting = false }
    return transaction(&storedReplica)
  }

  /// Logs a local commit (group-committed, sent once durable) and returns it.
  func logged(_ commit: Commit) -> Commit {
    if !commit.delta.isEmpty { append(commit.delta, local: true) }
    return commit
  }

  /// Integrates a delta from another device and logs it (group-committed like an edit).
  @discardableResult
  public func apply(_ delta: DocumentDelta) -> DocumentChanges {
    checkOutsideTransaction()
    let changes = storedReplica.apply(delta)
    if !delta.isEmpty { append(delta, local: false) }
    return changes
  }

  func append(_ delta: DocumentDelta, local: Bool) {
    pending.append(delta)
    committed += 1
    if local { markPending(delta) }
    do { try syncIfDue() } catch { lastError = error }
  }

  /// Traps if a ``transact(_:)`` body is running: the store's replica is the
  /// transaction's until the body returns, so a read would see an empty document and a
  /// write or a sync would lose the transaction.
  func checkOutsideTransaction() {
    precondition(!isTransacting, "a DocumentStore was used inside its own transact body")
  }

  /// Syncs the buffered commits if the oldest has waited a sync interval: in the
  /// background (``Configuration/syncInBackground``) or before returning.
  ///
  /// A log grown past ``Configuration/compactionLogBytes`` is compacted instead of synced
  /// (in the background too: the snapshot is encoded from a copy of the document), so
  /// compaction also waits for the interval: typing never syncs more often. After a
  /// failed write or sync, the next sync is a compaction (the log may end torn).
  ///
  /// A closed store throws ``StoreError/closed`` and writes nothing: an edit made after
  /// ``close()`` stays in memory and sets ``lastError``, and never reaches a file another
  /// store may have opened since.
  public func syncIfDue() throws(StoreError) {
    guard !isClosed else { throw .closed }
    checkOutsideTransaction()
    collectBackgroundSync()
    guard !pending.isEmpty, running == nil, configuration.now() >= syncDue else { return }
    let snapshot =
      needsFreshGeneration
      || isCompactionDue(records: pending.count, bytes: pending.framedCount)
    if let error = startSync(snapshot: snapshot, background: configuration.syncInBackground) {
      throw error
    }
  }

  /// The log size beyond which the next sync compacts: the configured size, or the last
  /// snapshot's if that is larger (see ``Configuration/compactionLogBytes``).
  var compactionThreshold: Int { max(configuration.compactionLogBytes, snapshotBytes) }

  /// Whether a log grown by `records` of `bytes` is due for compaction: it holds more
  /// than the last snapshot's bytes, and more than ``Configuration/compactionLogBytes``
  /// or more than ``Configuration/compactionRecords`` records.
  func isCompactionDue(records: Int, bytes: Int) -> Bool {
    let total = logBytes + bytes
    return total > compactionThreshold
      || (total > snapshotBytes && logRecords + records > configuration.compactionRecords)
  }

  /// Writes and syncs every buffered commit now: call it when the app goes to the
  /// background or before it needs a delta durable.
  ///
  /// It also waits for a background save of what peers acknowledged, and saves again
  /// one that failed, as a failed sync's commits are (after them: a failing
  /// `acknowledged` file never keeps an edit from becoming durable).
  public func flush() throws(StoreError) {
    try flushCommits()
    if failedAcknowledgementSave != nil { try saveAcknowledgements() }
  }

  /// ``flush()`` without saving again an acknowledgement whose save failed: for the
  /// calls that need only the commits durable (an outbox, a message, a fresh id).
  func flushCommits() throws(StoreError) {
    guard !isClosed else { throw .closed }
    checkOutsideTransaction()
    finishBackgroundSync()
    guard !pending.isEmpty || needsFreshGeneration else { return }
    if let error = startSync(snapshot: needsFreshGeneration, background: false) { throw error }
    // The commits are durable. A log past the records bound is compacted now (in the
    // background where syncs run there), so that a burst of commits flushed at once (an
    // import, typing faster than the sync interval) does not leave the next open a long
    // log to replay; one past the byte threshold alone waits for the next due sync, as
    // before. A failure is reported in ``lastError`` and makes the next sync a
    // compaction; the log stays whole.
    if logRecords > configuration.compactionRecords && isCompactionDue(records: 0, bytes: 0) {
      _ = startSync(snapshot: true, background: configuration.syncInBackground)
    }
  }

  /// Acknowledges `deltas`: they are durable now. Called last, after the store's own
  /// state is settled, since ``onDurable`` may commit again. Those the app was handed are
  /// released afterwards on the sync's queue when `releasingOnQueue`.
  func markDurable(_ deltas: [[UInt8]], releasingOnQueue: Bool) {
    syncDue = configuration.now() + configuration.syncInterval
    syncCount += 1
    lastError = nil
    guard !deltas.isEmpty else { return }
    durableCommits += deltas.count
    guard let onDurable else { return durableOutbox.append(contentsOf: deltas) }
    onDurable(deltas)
    if releasingOnQueue { backgroundSync.discard(deltas) }
  }

  /// The encoded deltas made durable since the last call (when ``onDurable`` is unset).
  public func takeDurableDeltas() -> [[UInt8]] {
    defer { durableOutbox.removeAll() }
    return durableOutbox
  }

  /// Writes the whole replica as a new snapshot and starts a new log, then removes the
  /// files it supersedes.
  ///
  /// Each step is crash-safe: the snapshot is written to a temporary file, synced and
  /// renamed into place, the new empty log is synced, and the directory is synced, all
  /// before anything older is removed. Opening ignores temporary files and prefers the
  /// newest whole snapshot, replaying every log of its generation or later.
  ///
  /// Once the new generation is durable, the `generation` record is made to name it (so
  /// that opening can tell a lost newest log from a compaction a crash cut short), then
  /// the superseded files are removed. A failure of either is reported in ``lastError``
  /// without failing the compaction, which is durable already; the next compaction or
  /// open removes them (never a `damaged-` copy).
  public func compact() throws(StoreError) {
    guard !isClosed else { throw .closed }
    checkOutsideTransaction()
    finishBackgroundSync()
    if let error = startSync(snapshot: true, background: false) { throw error }
  }

  /// Flushes, marks the shutdown clean and closes the store; later calls throw
  /// ``StoreError/closed``.
  public func close() throws(StoreError) {
    guard !isClosed else { return }
    checkOutsideTransaction()
    try flush()
    // A compaction the flush started: the identity is written once it is done.
    finishBackgroundSync()
    if acknowledgementsUnsaved { try saveAcknowledgements() }
    // A run that wrote nothing leaves a clean record of the same id and counter as it is.
    let counter = storedReplica.context.counters(of: storedReplica.id).maximum
    let unchanged = identityOnDisk.map {
      $0.cleanShutdown && $0.replica == storedReplica.id && $0.provenCounter == counter
        && Set($0.retired) == retiredIDs
    }
    if unchanged != true { try writeIdentity(cleanShutdown: true) }
    closeLog()
    isClosed = true
  }

  // MARK: - Files

  static func snapshotName(_ generation: UInt64) -> String { "snapshot-" + hex(generation) }
  /// The file holding the ``SnapshotKey`` tag of the snapshot of `generation`.
  static func tagName(_ generation: UInt64) -> String { "tag-" + hex(generation) }
  /// The file holding the store's ``SnapshotKey``.
  static let keyName = "key"

  /// A tag as its file holds it: one frame of its eight bytes, little-endian.
  static func encodedTag(_ tag: UInt64) -> [UInt8] {
    RecordFrame.framed(RecordFrame.littleEndianBytes([tag]))
  }

  /// The tag in `bytes`, or `nil` if they are damaged.
  static func decodedTag(_ bytes: [UInt8]) -> UInt64? {
    guard let payload = RecordFrame.onlyRecord(in: bytes), payload.count == 8 else { return nil }
    return RecordFrame.littleEndianWord(payload, at: 0)
  }

  /// A key as its file holds it: one frame of its sixteen bytes.
  static func encodedKey(_ key: SnapshotKey) -> [UInt8] {
    RecordFrame.framed(RecordFrame.littleEndianBytes([key.low, key.high]))
  }

  /// The key in `bytes`, or `nil` if they are damaged.
  static func decodedKey(_ bytes: [UInt8]) -> SnapshotKey? {
    guard let payload = RecordFrame.onlyRecord(in: bytes), payload.count == 16 else { return nil }
    return SnapshotKey(
      low: RecordFrame.littleEndianWord(payload, at: 0),
      high: RecordFrame.littleEndianWord(payload, at: 8))
  }

  static func logName(_ generation: UInt64) -> String { "log-" + hex(generation) }

  /// `path` made absolute against the current directory (without a trailing slash).
  static func absolutePath(_ path: String) throws(StoreError) -> String {
    var resolved = path
    if !path.hasPrefix("/") {
      var buffer = [CChar](repeating: 0, count: 4096)
      guard getcwd(&buffer, buffer.count) != nil else {
        throw .fileSystem(StoreFileError(operation: "getcwd", path: path, code: errno))
      }
      let current = String(
        decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      var relative = Substring(path)
      while relative.hasPrefix("./") { relative = relative.dropFirst(2) }
      if relative == "." { relative = "" }
      resolved = current + (current.hasSuffix("/") || relative.isEmpty ? "" : "/") + relative
    }
    while resolved.count > 1 && resolved.hasSuffix("/") { resolved.removeLast() }
    return resolved
  }

  static func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }

  /// Runs `body`, turning any file error into a ``StoreError``.
  static func attempt<Result>(_ body: () throws -> Result) throws(StoreError) -> Result {
    do {
      return try body()
    } catch let error as StoreError {
      throw error
    } catch let error as StoreFileError {
      throw .fileSystem(error)
    } catch {
      throw .fileSystem(StoreFileError(operation: "\(error)", path: "", code: 0))
    }
  }

  /// Writes the key file (a temporary file, synced, renamed into place, the directory
  /// synced): once, when the store has none whole.
  static func writeKey(_ key: SnapshotKey, in directory: String, _ fileSystem: any StoreFileSystem)
    throws
  {
    let temporary = directory + "/" + keyName + ".tmp"
    try fileSystem.write(encodedKey(key), to: temporary)
    try fileSystem.sync(temporary)
    try fileSystem.rename(temporary, to: directory + "/" + keyName)
    try fileSystem.syncDirectory(directory)
  }

  /// Writes the identity record of the store's current id and counter.
  func writeIdentity(cleanShutdown: Bool) throws(StoreError) {
    let counter = storedReplica.context.counters(of: storedReplica.id).maximum
    identityOnDisk = try Self.attempt {
      try Self.writeIdentity(
        replica: storedReplica.id, counter: counter, cleanShutdown: cleanShutdown,
        in: directory, fileSystem, retired: retiredIDs)
    }
  }

  /// Writes an identity record: a temporary file whose own inode becomes the
  /// fingerprint, synced, renamed into place, then the directory synced.
  static func writeIdentity(
    replica: ReplicaID, counter: UInt64, cleanShutdown: Bool, in directory: String,
    _ fileSystem: any StoreFileSystem, rejoin: StoreIdentity.Rejoin? = nil,
    retired: Set<ReplicaID> = []
  ) throws -> StoreIdentity {
    let temporary = directory + "/identity.tmp"
    try fileSystem.write([], to: temporary)
    let fingerprint = try fileSystem.fileIdentity(temporary) ?? 0
    let identity = StoreIdentity(
      replica: replica, provenCounter: counter, cleanShutdown: cleanShutdown,
      fingerprint: fingerprint, rejoin: rejoin, retired: retired)
    try fileSystem.write(identity.encoded, to: temporary)
    try fileSystem.sync(temporary)
    try fileSystem.rename(temporary, to: directory + "/identity")
    try fileSystem.syncDirectory(directory)
    return identity
  }

  /// The kind and generation a file name encodes, or `nil` for other files.
  static func parse(_ name: String) -> (kind: Substring, generation: UInt64)? {
    guard let dash = name.firstIndex(of: "-") else { return nil }
    let kind = name[..<dash]
    let digits = name[name.index(after: dash)...]
    guard kind == "snapshot" || kind == "log" || kind == "tag", digits.count == 16,
      let generation = UInt64(digits, radix: 16), generation < maximumGeneration
    else { return nil }
    return (kind, generation)
  }
}

/// The default group-commit clock: the system's coarse monotonic clock where it has one
/// (Linux's `CLOCK_MONOTONIC_COARSE`, read without a system call), a precise one elsewhere.
/// Which of the two is decided once, so that readings never mix their origins.
func coarseMonotonicNow() -> Duration {
  #if canImport(Glibc)
    if hasCoarseClock {
      var time = timespec()
      // Cannot fail for a clock the system has, with a valid pointer.
      _ = clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
      return Duration(
        secondsComponent: Int64(time.tv_sec),
        attosecondsComponent: Int64(time.tv_nsec) &* 1_000_000_000)
    }
  #endif
  return processStart.duration(to: .now)
}

#if canImport(Glibc)
  /// Whether this system has a coarse monotonic clock (Linux has had one since 2.6.32).
  private let hasCoarseClock: Bool = {
    var time = timespec()
    return clock_gettime(CLOCK_MONOTONIC_COARSE, &time) == 0
  }()
#endif

/// The origin of the precise clock.
private let processStart = ContinuousClock.now
