import ConvergeTraces
import Foundation

/// `converge bench TRACE [--json] [--runs N]`: the design's performance table, measured
/// on a sequential trace in this build (run it with `swift run -c release`).
enum BenchCommand {
  static func run(_ arguments: [String]) -> Int32 {
    var path: String?
    var json = false
    var runs = 5
    var only: String?
    var storeDirectory: String?
    var library: Int?
    var tasks = false
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--json":
        json = true
      case "--library":
        // A user's whole library in one replica (see LibraryBench).
        guard let value = rest.popFirst().flatMap({ Int($0) }), value > 0 else { return usage() }
        library = value
      case "--tasks":
        tasks = true
      case "--runs":
        guard let value = rest.popFirst().flatMap({ Int($0) }), value > 0 else { return usage() }
        runs = value
      case "--store":
        // The trace typed through a durable store in this directory (see StoreBench).
        guard let value = rest.popFirst() else { return usage() }
        storeDirectory = value
      case "--only":
        // A profiler's mode: one untimed part of the bench, nothing printed.
        guard let value = rest.popFirst(),
          ["replay", "deltas", "merge", "small", "typing", "undo"].contains(value)
        else {
          return usage()
        }
        only = value
      default:
        guard path == nil, !argument.hasPrefix("-") else { return usage() }
        path = argument
      }
    }
    if let library { return LibraryBench.run(entities: library, tasks: tasks, json: json) }
    guard let path else { return usage() }
    let report: TraceBenchmarkReport
    let anchorNanoseconds: Double
    let undo: UndoBench.Report
    do {
      guard case .sequential(let trace) = try EditingTrace.load(path: path) else {
        FileHandleOutput.error("error: bench needs a sequential trace")
        return 1
      }
      if let storeDirectory {
        return try StoreBench.run(trace, directory: storeDirectory, runs: runs, json: json)
      }
      if let only {
        let succeeded: Bool
        switch only {
        case "replay": succeeded = trace.replayLocally().string == trace.endContent
        case "deltas": succeeded = trace.profileReplayWithDeltas()
        case "merge": succeeded = trace.profileMerge()
        case "typing":
          succeeded =
            UndoBench.typePlain(trace).document.text(
              of: SequentialTrace.benchField, in: SequentialTrace.benchKey) == trace.endContent
        case "undo":
          let (replica, history) = UndoBench.typeRecording(trace)
          succeeded =
            history.canUndo
            && replica.document.text(
              of: SequentialTrace.benchField, in: SequentialTrace.benchKey) == trace.endContent
        default: succeeded = trace.profileSmallDeltas()
        }
        return succeeded ? 0 : 1
      }
      report = try trace.benchmark(name: URL(fileURLWithPath: path).lastPathComponent, runs: runs)
      anchorNanoseconds = AnchorBench.resolveNanoseconds(trace, runs: runs)
      undo = UndoBench.run(trace, runs: runs)
    } catch {
      FileHandleOutput.error("error: \(error)")
      return 1
    }
    let rows: [(key: String, label: String, value: String)] = [
      ("trace", "trace", "\"\(report.trace)\""),
      ("edits", "edits", "\(report.edits)"),
      ("matches_end_content", "matches end content", "\(report.matchesEndContent)"),
      ("replay_ms", "replay (SharedText, no deltas)", fixed(report.replayMilliseconds) + " ms"),
      (
        "replay_with_deltas_us_per_edit", "replay, one encoded delta per edit",
        fixed(report.replayWithDeltasMicrosecondsPerEdit) + " µs/edit"
      ),
      (
        "delta_bytes_per_char", "delta bytes per typed char (frames)",
        fixed(report.deltaBytesPerCharacter)
      ),
      ("delta_bytes_per_edit", "delta bytes per edit", fixed(report.deltaBytesPerEdit)),
      (
        "self_contained_delta_bytes_per_edit", "self-contained delta bytes per edit",
        fixed(report.selfContainedDeltaBytesPerEdit)
      ),
      ("frames_converged", "frames rebuilt the document", "\(report.framesConverged)"),
      ("state_bytes", "encoded state", "\(report.stateBytes) bytes"),
      ("load_ms", "load state (median)", fixed(report.loadMilliseconds) + " ms"),
      ("merge_ms", "merge two offline halves", fixed(report.mergeMilliseconds) + " ms"),
      ("merge_converged", "halves converged", "\(report.mergeConverged)"),
      (
        "apply_small_delta_us", "apply one small remote delta (median)",
        fixed(report.applySmallDeltaMicroseconds) + " µs"
      ),
      (
        "resolve_anchor_ns", "resolve an anchor (median)",
        fixed(anchorNanoseconds) + " ns"
      ),
      (
        "typing_us_per_edit", "type, one transaction per edit",
        fixed(undo.typingMicrosecondsPerEdit) + " µs/edit"
      ),
      (
        "typing_recording_undo_us_per_edit", "the same, recorded for undo",
        fixed(undo.recordingMicrosecondsPerEdit) + " µs/edit"
      ),
      (
        "undo_recording_overhead_percent", "undo recording overhead",
        fixed(undo.overheadPercent) + " %"
      ),
      ("undo_steps", "undo steps (a pause every 50 edits)", "\(undo.steps)"),
      ("undo_all_ms", "undo every step", fixed(undo.undoAllMilliseconds) + " ms"),
      ("redo_all_ms", "redo every step", fixed(undo.redoAllMilliseconds) + " ms"),
      ("undo_redo_round_trip", "undo empties, redo restores", "\(undo.roundTrip)"),
    ]
    if json {
      let fields = rows.map { row -> String in
        let number = row.value.split(separator: " ").first.map(String.init) ?? row.value
        return "\"\(row.key)\": \(number)"
      }
      print("{" + fields.joined(separator: ", ") + "}")
    } else {
      for row in rows {
        print(row.label.padding(toLength: 40, withPad: " ", startingAt: 0) + row.value)
      }
    }
    return report.matchesEndContent && report.mergeConverged && report.framesConverged
      && undo.roundTrip ? 0 : 1
  }

  private static func usage() -> Int32 {
    FileHandleOutput.error(
      "usage: converge bench <trace.json[.gz]> [--json] [--runs N] [--only replay|deltas|merge|small|typing|undo]"
        + " [--store DIR]\n       converge bench --library N [--tasks] [--json]")
    return 2
  }

  private static func fixed(_ value: Double) -> String {
    String(format: "%.2f", value)
  }
}
