import Converge
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
  }

  static func run(notes: Int, json: Bool) -> Int32 {
    let report = measure(notes: notes)
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
    print(String(format: "forgetDeleted(stable:)        %10.2f ms", report.forgetMs))
    return 0
  }

  static func measure(notes: Int) -> Report {
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
    return Report(
      notes: notes, kept: (0..<notes).count(where: isKept), beforeBytes: before,
      afterBytes: replica.encodedState().count, keptAloneBytes: keptAlone.encodedState().count,
      forgetMs: Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds)
        * 1e3,
      forgotten: forgotten)
  }
}
