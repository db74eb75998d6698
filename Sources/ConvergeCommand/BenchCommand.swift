import ConvergeTraces
import Foundation

/// `converge bench TRACE [--json] [--runs N]`: the design's performance table, measured
/// on a sequential trace in this build (run it with `swift run -c release`).
enum BenchCommand {
  struct Options {
    var json = false
    var runs = 5
    var only: String?
    var storeDirectory: String?
    var library: Int?
    var tasks = false
    var emptyBodies = false
    var forget = false
    var lists = false
    var listItems = ListBench.items
    var listMoves = ListBench.moves
    var trees = false
  }

  static func run(_ arguments: [String]) -> Int32 {
    let parts = ["replay", "deltas", "merge", "small", "typing", "undo"]
    guard
      let (options, operands) = CommandOption.parse(
        arguments, into: Options(),
        [
          .flag("--json", \.json),
          // A user's whole library in one replica (see LibraryBench).
          .value("--library", \.library, .positive),
          .flag("--tasks", \.tasks),
          .flag("--empty-bodies", \.emptyBodies),
          // Deleted notes forgotten once stable (see ForgetBench).
          .flag("--forget", \.forget),
          // A movable list of 1,000 cards (see ListBench).
          .flag("--lists", \.lists),
          // Its size and number of moves (a profiler compares two sizes or counts).
          .value("--list-items", \.listItems, .positive),
          .value("--list-moves", \.listMoves, .positive),
          // Forests of 1,000 and 10,000 tasks (see TreeBench).
          .flag("--trees", \.trees),
          .value("--runs", \.runs, .positive),
          // The trace typed through a durable store in this directory (see StoreBench).
          .value("--store", \.storeDirectory, .text),
          // A profiler's mode: one untimed part of the bench, nothing printed.
          .value("--only", \.only, .init { parts.contains($0) ? $0 : nil }),
        ], operands: 1)
    else { return usage() }
    let (json, runs) = (options.json, options.runs)
    if let library = options.library, options.forget {
      return ForgetBench.run(notes: library, json: json)
    }
    if options.lists {
      return ListBench.run(items: options.listItems, moves: options.listMoves, json: json)
    }
    if options.trees { return TreeBench.run(json: json) }
    if let library = options.library {
      guard !(options.tasks && options.emptyBodies) else { return usage() }
      return LibraryBench.run(
        entities: library, tasks: options.tasks, bodies: !options.emptyBodies, json: json)
    }
    guard let path = operands.first else { return usage() }
    let report: TraceBenchmarkReport
    let anchorNanoseconds: Double
    let undo: UndoBench.Report
    do {
      guard case .sequential(let trace) = try EditingTrace.load(path: path) else {
        FileHandleOutput.error("error: bench needs a sequential trace")
        return 1
      }
      if let storeDirectory = options.storeDirectory {
        return try StoreBench.run(trace, directory: storeDirectory, runs: runs, json: json)
      }
      if let only = options.only {
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
    FileHandleOutput.printRows(rows, json: json)
    return report.matchesEndContent && report.mergeConverged && report.framesConverged
      && undo.roundTrip ? 0 : 1
  }

  private static func usage() -> Int32 {
    FileHandleOutput.error(
      "usage: converge bench <trace.json[.gz]> [--json] [--runs N] [--only replay|deltas|merge|small|typing|undo]"
        + " [--store DIR]\n       converge bench --library N [--tasks | --empty-bodies | --forget] [--json]"
        + "\n       converge bench --lists [--list-items N] [--list-moves N] [--json]"
        + "\n       converge bench --trees [--json]")
    return 2
  }

  private static func fixed(_ value: Double) -> String {
    String(format: "%.2f", value)
  }
}
