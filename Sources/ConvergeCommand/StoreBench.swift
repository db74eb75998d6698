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

      let folder = directory + "/bench-\(run)"
      try? FileManager.default.removeItem(atPath: folder)
      var configuration = DocumentStore.Configuration()
      configuration.wallClock = .fixed(0)
      configuration.freshID = { ReplicaID(rawValue: 1) }
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
    }
    let base = (without.min() ?? 0) / edits * 1e6
    let stored = (through.min() ?? 0) / edits * 1e6
    let typed = (typingOnly.min() ?? 0) / edits * 1e6
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
      ("reopened_equal", "reopened store equals the replica", "\(reopenedEqual)"),
    ]
    // Every value here is a bare number, so the rows print as the design bench's do.
    FileHandleOutput.printRows(rows, json: json)
    return reopenedEqual ? 0 : 1
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
