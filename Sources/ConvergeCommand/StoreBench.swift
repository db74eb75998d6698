import Converge
import ConvergeStore
import ConvergeTraces
import Foundation

/// `converge bench TRACE --store DIR`: the trace typed through a ``DocumentStore`` (one
/// commit per edit, group commit every 200 ms, real `fsync`s in DIR) against the same
/// commits without it (each delta encoded as the store would encode it).
enum StoreBench {
  static func run(_ trace: SequentialTrace, directory: String, runs: Int, json: Bool) throws
    -> Int32
  {
    let clock = ContinuousClock()
    let edits = Double(max(1, trace.patches.count))
    var without: [Double] = []
    var through: [Double] = []
    var typingOnly: [Double] = []
    var ownerTyping: [Double] = []
    var cpuWithout: [Double] = []
    var cpuTyping: [Double] = []
    var syncs = 0
    var syncsPerInterval = 0.0
    var logBytes = 0
    var reopenedEqual = true
    for run in 0..<max(1, runs) {
      let start = clock.now
      let cpuStart = threadCPUSeconds()
      let (replica, bytes) = plainTyping(trace)
      cpuWithout.append(threadCPUSeconds() - cpuStart)
      without.append(milliseconds(clock.now - start) / 1000)
      logBytes = bytes

      let folder = emptied(directory + "/bench-\(run)")
      let configuration = benchConfiguration()
      let store = try DocumentStore(directory: folder, configuration: configuration)
      // As an app would: durable deltas go to the network (here, nowhere) at once.
      store.onDurable = { _ in }
      let storeStart = clock.now
      let cpuStoreStart = threadCPUSeconds()
      durableTyping(trace, store)
      cpuTyping.append(threadCPUSeconds() - cpuStoreStart)
      let typing = milliseconds(clock.now - storeStart) / 1000
      typingOnly.append(typing)
      // The syncs typing triggered (group commits and compactions), not the final flush.
      syncs = store.syncCount
      try store.flush()
      through.append(milliseconds(clock.now - storeStart) / 1000)
      // Syncs per 200 ms of typing: the typing here is far faster than a person's.
      syncsPerInterval = Double(syncs) / max(1, typing / 0.2)
      try store.close()
      let reopened = try DocumentStore(directory: folder, configuration: configuration)
      reopenedEqual = reopenedEqual && reopened.replica.document == replica.document
      try reopened.close()
      try? FileManager.default.removeItem(atPath: folder)

      // The same typing through the owner an app holds: observation, change events, undo
      // and the pending badge on top of the store.
      let owner = try DeviceReplica(directory: folder, configuration: configuration)
      owner.onDurable = { _ in }
      let ownerStart = clock.now
      for patch in trace.patches { owner.transact { SequentialTrace.edit(patch, in: &$0) } }
      ownerTyping.append(milliseconds(clock.now - ownerStart) / 1000)
      try owner.close()
      try? FileManager.default.removeItem(atPath: folder)
    }
    let saves = syncedSaveFigures(trace, directory: directory, runs: runs)
    let opened = try openFigures(trace, directory: directory, runs: runs)
    reopenedEqual = reopenedEqual && opened.equal
    let base = (without.min() ?? 0) / edits * 1e6
    let stored = (through.min() ?? 0) / edits * 1e6
    let typed = (typingOnly.min() ?? 0) / edits * 1e6
    let owned = (ownerTyping.min() ?? 0) / edits * 1e6
    let cpuBase = (cpuWithout.min() ?? 0) / edits * 1e6
    let cpuTyped = (cpuTyping.min() ?? 0) / edits * 1e6
    let rows: [(key: String, label: String, value: String)] = [
      ("edits", "edits", "\(trace.patches.count)"),
      ("without_store_us_per_edit", "commit + encode, no store", String(format: "%.3f", base)),
      ("store_us_per_edit", "commit through the store", String(format: "%.3f", stored)),
      ("overhead_percent", "store overhead (%)", String(format: "%.1f", (stored / base - 1) * 100)),
      (
        "store_typing_us_per_edit", "commit through the store, final flush not counted",
        String(format: "%.3f", typed)
      ),
      (
        "typing_overhead_percent", "store overhead while typing (%)",
        String(format: "%.1f", (typed / base - 1) * 100)
      ),
      (
        "device_replica_typing_us_per_edit",
        "commit through a DeviceReplica (undo, events), final flush not counted",
        String(format: "%.3f", owned)
      ),
      (
        "device_replica_over_store_percent", "DeviceReplica over the store while typing (%)",
        String(format: "%.1f", (owned / typed - 1) * 100)
      ),
      (
        "without_store_cpu_us_per_edit", "the same, the thread's CPU time",
        String(format: "%.3f", cpuBase)
      ),
      (
        "store_typing_cpu_us_per_edit", "through the store, the typing thread's CPU time",
        String(format: "%.3f", cpuTyped)
      ),
      (
        "typing_cpu_overhead_percent", "store overhead in CPU time (%)",
        String(format: "%.1f", (cpuTyped / cpuBase - 1) * 100)
      ),
      ("syncs", "fsyncs while typing (incl. compactions)", "\(syncs)"),
      ("syncs_per_200ms", "fsyncs per 200 ms of typing", String(format: "%.2f", syncsPerInterval)),
      (
        "log_bytes_per_edit", "log payload bytes per edit",
        String(format: "%.1f", Double(logBytes) / edits)
      ),
      ("fsync_floor_us", "fsync floor: append + fsync, held file", fixed(saves.floor)),
      ("synced_save_us", "a commit synced at once (median)", fixed(saves.save)),
      (
        "synced_save_over_floor_us", "synced save minus the fsync floor",
        fixed(saves.save - saves.floor)
      ),
      ("open_edits", "edits before the open (default settings)", "\(opened.edits)"),
      ("open_ms", "open the store of those edits (fastest)", fixed(opened.openMs)),
      ("open_replayed_records", "log records the open replayed", "\(opened.replayed)"),
      (
        "open_longest_replay_records", "longest log the triggers leave (records)",
        "\(opened.longestReplay)"
      ),
      (
        "open_longest_replay_ms", "open with that log (fastest of 3)",
        fixed(opened.longestReplayOpenMs)
      ),
      (
        "disk_bytes_per_edit", "bytes on disk per edit (all files)",
        String(format: "%.2f", opened.diskBytesPerEdit)
      ),
      ("reopened_equal", "reopened store equals the replica", "\(reopenedEqual)"),
    ]
    // Every value here is a bare number, so the rows print as the design bench's do.
    FileHandleOutput.printRows(rows, json: json)
    return reopenedEqual ? 0 : 1
  }

  private static func fixed(_ value: Double) -> String { String(format: "%.3f", value) }

  /// The cost of one durable save: the fsync floor (a small record appended to a file
  /// held open, then `fsync`) and a commit through a store that syncs each commit at
  /// once on the caller's thread, each the median of `runs` rounds of 200 taken in turn
  /// (so that the disk's mood weighs on both alike), in µs.
  static func syncedSaveFigures(_ trace: SequentialTrace, directory: String, runs: Int)
    -> (floor: Double, save: Double)
  {
    let clock = ContinuousClock()
    let count = 200
    var floors: [Double] = []
    var saves: [Double] = []
    let folder = emptied(directory + "/bench-synced")
    var configuration = benchConfiguration()
    configuration.syncInterval = .zero
    configuration.syncInBackground = false
    guard let store = try? DocumentStore(directory: folder, configuration: configuration) else {
      return (0, 0)
    }
    store.onDurable = { _ in }
    let floorPath = directory + "/bench-fsync-floor"
    let descriptor = open(floorPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    defer {
      close(descriptor)
      unlink(floorPath)
    }
    let record = [UInt8](repeating: 7, count: 40)
    var next = 0
    for _ in 0..<max(1, runs) {
      for _ in 0..<count {
        let start = clock.now
        _ = record.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        _ = fsync(descriptor)
        floors.append(milliseconds(clock.now - start) * 1000)
      }
      for _ in 0..<count {
        let patch = trace.patches[next % trace.patches.count]
        next += 1
        let start = clock.now
        syncedSave(patch, store)
        saves.append(milliseconds(clock.now - start) * 1000)
      }
    }
    try? store.close()
    try? FileManager.default.removeItem(atPath: folder)
    return (median(floors), median(saves))
  }

  /// One commit, synced before it returns (`--toggle-collect='*syncedSave*'`).
  @inline(never)
  static func syncedSave(_ patch: TracePatch, _ store: DocumentStore) {
    store.transact { SequentialTrace.edit(patch, in: &$0) }
  }

  /// A store configuration whose clock and replica id are fixed, so every run writes the
  /// same bytes.
  static func benchConfiguration() -> DocumentStore.Configuration {
    var configuration = DocumentStore.Configuration()
    configuration.wallClock = .fixed(0)
    configuration.freshID = { ReplicaID(rawValue: 1) }
    return configuration
  }

  /// `folder`, after removing whatever an earlier run left there.
  static func emptied(_ folder: String) -> String {
    try? FileManager.default.removeItem(atPath: folder)
    return folder
  }

  /// A store of the trace's first 100,000 edits (or all, if fewer), one commit each,
  /// typed with default settings and closed: the bytes its directory holds per edit and
  /// the fastest of `runs` opens.
  static func openFigures(_ trace: SequentialTrace, directory: String, runs: Int) throws
    -> (
      edits: Int, openMs: Double, replayed: Int, diskBytesPerEdit: Double, equal: Bool,
      longestReplay: Int, longestReplayOpenMs: Double
    )
  {
    let clock = ContinuousClock()
    let patches = trace.patches.prefix(100_000)
    let folder = emptied(directory + "/bench-open")
    let configuration = benchConfiguration()
    let store = try DocumentStore(directory: folder, configuration: configuration)
    store.onDurable = { _ in }
    for patch in patches { store.transact { SequentialTrace.edit(patch, in: &$0) } }
    try store.close()
    let expected = store.replica.document
    var bytes = 0
    for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
      let attributes = try FileManager.default.attributesOfItem(atPath: folder + "/" + name)
      bytes += (attributes[.size] as? Int) ?? 0
    }
    var opens: [Double] = []
    var replayed = 0
    var equal = true
    for _ in 0..<max(3, runs) {
      let start = clock.now
      let reopened = try DocumentStore(directory: folder, configuration: configuration)
      opens.append(milliseconds(clock.now - start))
      replayed = reopened.recovery.replayedRecords
      equal = equal && reopened.replica.document == expected
      try reopened.close()
    }
    let longest = try longestReplay(
      trace, after: patches.count, folder: folder, configuration: configuration)
    try? FileManager.default.removeItem(atPath: folder)
    return (
      patches.count, opens.min() ?? 0, replayed, Double(bytes) / Double(max(1, patches.count)),
      equal && longest.equal, longest.records, longest.openMs
    )
  }

  /// The longest log the compaction triggers leave an open to replay, and that open's
  /// time (the fastest of three): the store in `folder` gets 100 more edits of `trace`
  /// per run (each run opened, typed, closed) until a run's close compacts.
  static func longestReplay(
    _ trace: SequentialTrace, after typed: Int, folder: String,
    configuration: DocumentStore.Configuration
  ) throws -> (records: Int, openMs: Double, equal: Bool) {
    let clock = ContinuousClock()
    var next = typed
    var longest = (records: 0, openMs: 0.0, equal: true)
    for _ in 0..<100 {
      var store: DocumentStore?
      var fastest = Double.infinity
      for _ in 0..<3 {
        // An open after a clean close writes nothing, so the first two are dropped
        // unclosed; the third is typed into.
        let start = clock.now
        store = try DocumentStore(directory: folder, configuration: configuration)
        fastest = min(fastest, milliseconds(clock.now - start))
      }
      guard let store else { break }
      let records = store.recovery.replayedRecords
      if records < longest.records || next >= trace.patches.count {
        try store.close()
        break
      }
      longest = (records, fastest, longest.equal)
      for patch in trace.patches[next..<min(next + 100, trace.patches.count)] {
        store.transact { SequentialTrace.edit(patch, in: &$0) }
      }
      next += 100
      let expected = store.replica.document
      try store.close()
      let check = try DocumentStore(directory: folder, configuration: configuration)
      longest.equal = longest.equal && check.replica.document == expected
    }
    return longest
  }

  static func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
  }

  /// The CPU time the calling thread has used: unlike wall time, it leaves out the time
  /// other processes hold the cores, so it compares two loops on a busy machine.
  static func threadCPUSeconds() -> Double {
    var time = timespec()
    guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return 0 }
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
  }

  /// One commit per edit, each delta encoded as the store would encode it: the baseline.
  /// Not inlined, so that `valgrind --tool=callgrind --toggle-collect='*plainTyping*_n'`
  /// counts exactly this loop (`_n` ends the loop's symbol, not its closure's, whose entry
  /// would toggle the collection off again).
  @inline(never)
  static func plainTyping(_ trace: SequentialTrace) -> (Replica, bytes: Int) {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    var bytes = 0
    for patch in trace.patches {
      bytes &+= replica.transact { SequentialTrace.edit(patch, in: &$0) }.delta.encoded().count
    }
    return (replica, bytes)
  }

  /// The same commits through `store` (`--toggle-collect='*durableTyping*_n'`).
  @inline(never)
  static func durableTyping(_ trace: SequentialTrace, _ store: DocumentStore) {
    for patch in trace.patches { store.transact { SequentialTrace.edit(patch, in: &$0) } }
  }
}
