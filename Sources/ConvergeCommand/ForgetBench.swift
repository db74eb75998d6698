import Converge
import ConvergeStore
import ConvergeTestSupport
import Foundation

/// `converge bench --library N --forget`: what forgetting stably deleted notes saves. N
/// notes (the library bench's, a 405-character body each) are created one transaction
/// each, all but every tenth deleted, and the deletes made stable (one device: its own
/// context is the stable cut); the saved state is compared with the kept notes saved
/// alone, before and after ``Replica/forgetDeleted(stable:)``.
enum ForgetBench {
  struct Report {
    var notes: Int
    var kept: Int
    var beforeBytes: Int
    var afterBytes: Int
    var keptAloneBytes: Int
    var forgetMs: Double
    var forgotten: Int
    /// The bytes of a compacted, closed store's files: deletes kept, forgotten, and the
    /// kept notes alone.
    var storeBeforeBytes = 0
    var storeAfterBytes = 0
    var storeKeptAloneBytes = 0
  }

  static func run(notes: Int, json: Bool) -> Int32 {
    let report: Report
    do {
      report = try measure(notes: notes)
    } catch {
      FileHandleOutput.error("error: \(error)")
      return 1
    }
    guard report.forgotten == notes - report.kept else {
      FileHandleOutput.error("error: forgot \(report.forgotten), expected \(notes - report.kept)")
      return 1
    }
    let before = Double(report.beforeBytes) / Double(report.keptAloneBytes)
    let after = Double(report.afterBytes) / Double(report.keptAloneBytes)
    if json {
      print(
        "{\"notes\": \(report.notes), \"kept\": \(report.kept), \"before_bytes\": \(report.beforeBytes), "
          + "\"after_bytes\": \(report.afterBytes), \"kept_alone_bytes\": \(report.keptAloneBytes), "
          + "\"store_before_bytes\": \(report.storeBeforeBytes), \"store_after_bytes\": \(report.storeAfterBytes), "
          + "\"store_kept_alone_bytes\": \(report.storeKeptAloneBytes), "
          + String(format: "\"forget_ms\": %.2f}", report.forgetMs))
      return 0
    }
    print(
      "\(report.notes) notes, \(report.notes - report.kept) deleted and stable, \(report.kept) kept"
    )
    print(
      String(
        format: "saved state, deleted kept     %10d B  %5.2f× the kept notes alone",
        report.beforeBytes, before))
    print(
      String(
        format: "saved state, deleted forgotten %9d B  %5.2f× the kept notes alone",
        report.afterBytes, after))
    print(String(format: "kept notes saved alone        %10d B", report.keptAloneBytes))
    print(
      String(
        format: "store, compacted, deleted kept %9d B  %5.2f× the kept notes' store",
        report.storeBeforeBytes,
        Double(report.storeBeforeBytes) / Double(report.storeKeptAloneBytes)))
    print(
      String(
        format: "store, compacted, forgotten    %9d B  %5.2f× the kept notes' store",
        report.storeAfterBytes, Double(report.storeAfterBytes) / Double(report.storeKeptAloneBytes))
    )
    print(String(format: "store of the kept notes alone %10d B", report.storeKeptAloneBytes))
    print(String(format: "forgetDeleted(stable:)        %10.2f ms", report.forgetMs))
    return 0
  }

  static func measure(notes: Int) throws -> Report {
    var random = SeededGenerator(seed: 0x11B)
    let inputs = (0..<notes).map { LibraryBench.Input.note($0, body: true, using: &random) }
    let isKept = { (index: Int) in index % 10 == 0 }
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    for input in inputs { replica.transact { tx in input.write(in: &tx) } }
    replica.transact { tx in
      for (index, input) in inputs.enumerated() where !isKept(index) { tx.delete(input.key) }
    }
    var keptAlone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    for (index, input) in inputs.enumerated() where isKept(index) {
      keptAlone.transact { tx in input.write(in: &tx) }
    }
    let before = replica.encodedState().count
    let stable = CausalContext.stableCut(
      of: [replica.document.context], seenBy: replica.document.context)
    var forgotten = 0
    let clock = ContinuousClock()
    let elapsed = clock.measure { forgotten = replica.forgetDeleted(stable: stable) }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
      "converge-forget-bench-\(ProcessInfo.processInfo.processIdentifier)"
    ).path
    var report = Report(
      notes: notes, kept: (0..<notes).count(where: isKept), beforeBytes: before,
      afterBytes: replica.encodedState().count, keptAloneBytes: keptAlone.encodedState().count,
      forgetMs: Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds)
        * 1e3,
      forgotten: forgotten)
    report.storeBeforeBytes = try storeBytes(
      inputs, directory: folder, forget: false, keptOnly: false, isKept: isKept)
    report.storeAfterBytes = try storeBytes(
      inputs, directory: folder, forget: true, keptOnly: false, isKept: isKept)
    report.storeKeptAloneBytes = try storeBytes(
      inputs, directory: folder, forget: false, keptOnly: true, isKept: isKept)
    return report
  }
}

extension ForgetBench {
  /// The bytes of every file a store in `directory` holds after the library is built
  /// through it, the deletes made (and, if `forget`, forgotten) and the store closed;
  /// with `keptOnly`, a store of the kept notes alone. Each store is compacted before
  /// closing, so each figure is a snapshot and an empty log.
  static func storeBytes(
    _ inputs: [LibraryBench.Input], directory: String, forget: Bool, keptOnly: Bool,
    isKept: (Int) -> Bool
  ) throws -> Int {
    let folder = StoreBench.emptied(directory)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    var settings = DocumentStore.Configuration()
    settings.syncInBackground = false
    settings.wallClock = .fixed(0)
    let store = try DocumentStore(directory: folder, configuration: settings)
    for (index, input) in inputs.enumerated() where !keptOnly || isKept(index) {
      store.transact { tx in input.write(in: &tx) }
    }
    if !keptOnly {
      store.transact { tx in
        for (index, input) in inputs.enumerated() where !isKept(index) { tx.delete(input.key) }
      }
    }
    if forget {
      let context = store.replica.document.context
      store.forgetDeleted(stable: .stableCut(of: [context], seenBy: context))
    }
    try store.compact()
    try store.close()
    var total = 0
    for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
      let attributes = try FileManager.default.attributesOfItem(atPath: folder + "/" + name)
      total += (attributes[.size] as? Int) ?? 0
    }
    return total
  }
}
