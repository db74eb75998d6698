import Converge
import ConvergeTraces
import Foundation

/// `converge replay`: applies every patch of a trace, checks the result against
/// `endContent` and prints timings. A sequential trace goes through a ``SharedText`` with one
/// replica; a concurrent one through one ``Replica`` per agent exchanging deltas. With
/// `--through-handle`, each run of a sequential trace also types it into a typed model's
/// text field of a replica, by field name and through an ``EntityText``, in one
/// transaction and in one transaction per edit, and reports the four side by side.
enum ReplayCommand {
  struct Options {
    /// The trace: the command's one operand, set once the flags are read.
    var path = ""
    var json = false
    var iterations = 5
    var savePath: String?
    /// Also types the trace into a document, by field name and through a text handle.
    var throughHandle = false
  }

  static func parse(_ arguments: [String]) -> Options? {
    guard
      case (var options, let operands)? = CommandOption.parse(
        arguments, into: Options(),
        [
          .flag("--json", \.json),
          .flag("--through-handle", \.throughHandle),
          .value("--save", \.savePath, .text),
          .value("--iterations", \.iterations, .positive),
        ], operands: 1),
      let path = operands.first
    else { return nil }
    options.path = path
    return options
  }

  static func run(_ arguments: [String]) -> Int32 {
    guard let options = parse(arguments) else {
      FileHandleOutput.error(
        "usage: converge replay <trace.json[.gz]> [--json] [--iterations N] [--save FILE]"
          + " [--through-handle]")
      return 2
    }
    let loaded: EditingTrace
    do {
      loaded = try EditingTrace.load(path: options.path)
    } catch {
      FileHandleOutput.error("error: \(error)")
      return 1
    }
    let trace: SequentialTrace
    switch loaded {
    case .sequential(let sequential):
      trace = sequential
    case .concurrent(let concurrent):
      return runConcurrent(concurrent, options: options)
    }
    var timings: [Double] = []
    var matches = true
    var finalLength = 0
    var memoryGrowth = 0
    var handleRuns: [HandleReplayTimes] = []
    for iteration in 0..<options.iterations {
      MemoryProbe.releaseFreeHeap()
      MemoryProbe.resetHighWaterMark()
      let residentBefore = MemoryProbe.residentSet()
      let clock = ContinuousClock()
      var text = SharedText(replica: ReplicaID(rawValue: 1))
      let start = clock.now
      text = replay(trace, into: text)
      timings.append(milliseconds(clock.now - start))
      if iteration == 0 {
        // The first run's peak: the high-water mark, reset before the run, over the
        // resident set before it.
        memoryGrowth = Swift.max(0, MemoryProbe.highWaterMark() - residentBefore)
        let result = text.string
        matches = result == trace.endContent
        finalLength = text.count
      }
      if options.throughHandle {
        do {
          handleRuns.append(try trace.timeHandleReplays(handleFirst: iteration % 2 == 1))
        } catch {
          FileHandleOutput.error("error: \(error)")
          return 1
        }
      }
    }
    let sorted = timings.sorted()
    let best = sorted[0]
    let median = sorted[sorted.count / 2]
    let edits = trace.patches.count
    let editsPerSecond = Int(Double(edits) / (best / 1000))
    let peak = MemoryProbe.highWaterMark()
    let handle = handleFigures(handleRuns, edits: edits, sharedTextBest: best)
    matches = matches && handle.matches
    printSummary(
      options, edits: edits, finalLength: finalLength, matches: matches,
      fields: [
        ("replay_ms", format(best)),
        ("median_ms", format(median)),
        ("iterations", "\(options.iterations)"),
        ("edits_per_second", "\(editsPerSecond)"),
        ("peak_memory_growth_bytes", "\(memoryGrowth)"),
        ("peak_rss_bytes", "\(peak)"),
      ] + handle.fields,
      lines: [
        "replay:           best \(format(best)) ms, median \(format(median)) ms",
        "                  (\(options.iterations) iterations)",
        "edits per second: \(editsPerSecond)",
        "peak mem growth:  \(memoryGrowth / 1024) KiB (first run, VmHWM over VmRSS)",
        "peak RSS:         \(peak / 1024) KiB (whole process)",
      ] + handle.lines)
    if !matches {
      FileHandleOutput.error("error: the replayed text differs from endContent")
      return 1
    }
    if let savePath = options.savePath {
      // The saved state is a replica's document: replay once more through one, untimed.
      var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
      replica.transact { tx in
        for patch in trace.patches { SequentialTrace.edit(patch, in: &tx) }
      }
      return save(replica, to: savePath)
    }
    return 0
  }

  /// The `--through-handle` figures, best of the runs: JSON fields and text lines, and
  /// whether every document replay matched (true without runs).
  static func handleFigures(_ runs: [HandleReplayTimes], edits: Int, sharedTextBest: Double)
    -> (fields: [(String, String)], lines: [String], matches: Bool)
  {
    guard !runs.isEmpty else { return ([], [], true) }
    let transaction = runs.map(\.transactionMilliseconds).min() ?? 0
    let handle = runs.map(\.handleMilliseconds).min() ?? 0
    let transactionPerEdit = runs.map(\.transactionPerEditMilliseconds).min() ?? 0
    let handlePerEdit = runs.map(\.handlePerEditMilliseconds).min() ?? 0
    /// The change in percent, signed: "+" shown in the text lines only (JSON has no "+").
    func percent(_ value: Double, over reference: Double, plus: Bool = true) -> String {
      let change = reference > 0 ? (value / reference - 1) * 100 : 0
      return (change < 0 ? "-" : plus ? "+" : "") + format(abs(change))
    }
    func microsecondsPerEdit(_ milliseconds: Double) -> String {
      format(milliseconds * 1000 / Double(Swift.max(1, edits)))
    }
    let fields = [
      ("document_replay_ms", format(transaction)),
      ("handle_replay_ms", format(handle)),
      ("handle_over_document_percent", percent(handle, over: transaction, plus: false)),
      ("handle_over_replay_percent", percent(handle, over: sharedTextBest, plus: false)),
      ("document_per_edit_us", microsecondsPerEdit(transactionPerEdit)),
      ("handle_per_edit_us", microsecondsPerEdit(handlePerEdit)),
      (
        "handle_per_edit_over_document_percent",
        percent(handlePerEdit, over: transactionPerEdit, plus: false)
      ),
    ]
    let lines = [
      "document, by name:  best \(format(transaction)) ms (one transaction, a typed model)",
      "document, handle:   best \(format(handle)) ms (\(percent(handle, over: transaction))% over"
        + " by name, \(percent(handle, over: sharedTextBest))% over the replay)",
      "per-edit, by name:  \(microsecondsPerEdit(transactionPerEdit)) µs an edit"
        + " (a transaction each, best total \(format(transactionPerEdit)) ms)",
      "per-edit, handle:   \(microsecondsPerEdit(handlePerEdit)) µs an edit"
        + " (\(percent(handlePerEdit, over: transactionPerEdit))% over by name)",
    ]
    return (fields, lines, runs.allSatisfy(\.matches))
  }

  /// Writes a replica's encoded state to `path`.
  static func save(_ replica: Replica, to path: String) -> Int32 {
    let state = replica.encodedState()
    guard FileManager.default.createFile(atPath: path, contents: Data(state)) else {
      FileHandleOutput.error("error: cannot write \(path)")
      return 1
    }
    FileHandleOutput.error("saved \(state.count) bytes of state to \(path)")
    return 0
  }

  @inline(never)
  static func replay(_ trace: SequentialTrace, into text: SharedText) -> SharedText {
    var text = text
    if !trace.startContent.isEmpty { text.insert(trace.startContent, at: 0) }
    for patch in trace.patches {
      text.edit(at: patch.position, deleting: patch.deleted, inserting: patch.inserted)
    }
    return text
  }

  /// Replays a concurrent trace `options.iterations` times and reports the best run.
  static func runConcurrent(_ trace: ConcurrentTrace, options: Options) -> Int32 {
    var best: ConcurrentReplayResult?
    for _ in 0..<options.iterations {
      let result: ConcurrentReplayResult
      do {
        result = try trace.replay(transport: .encoded)
      } catch {
        FileHandleOutput.error("error: \(error)")
        return 1
      }
      if best.map({ result.replayNanoseconds < $0.replayNanoseconds }) ?? true { best = result }
    }
    guard let best else { return 2 }
    let replayMilliseconds = Double(best.replayNanoseconds) / 1e6
    let mergeMilliseconds = Double(best.mergeNanoseconds) / 1e6
    printSummary(
      options, kind: ("concurrent", trace.agentCount),
      edits: trace.transactions.reduce(0) { $0 + $1.patches.count },
      finalLength: best.finalTexts.first?.unicodeScalars.count ?? 0,
      matches: best.matchesEndContent,
      fields: [
        ("replay_ms", format(replayMilliseconds)),
        ("merge_ms", format(mergeMilliseconds)),
        ("delta_bytes", "\(best.deltaBytes)"),
        ("iterations", "\(options.iterations)"),
      ],
      lines: [
        "replay:           best \(format(replayMilliseconds)) ms (\(options.iterations) iterations)",
        "merging:          \(format(mergeMilliseconds)) ms of it applying other agents' deltas",
      ])
    if !best.matchesEndContent {
      FileHandleOutput.error("error: the replicas' text differs from endContent")
      return 1
    }
    if let savePath = options.savePath, let first = best.replicas.first {
      return save(first, to: savePath)
    }
    return 0
  }

  /// Prints what every replay reports, the trace (with its kind and agents, if not
  /// sequential), its edits, final length and whether it matched, then its own `fields`
  /// (with `--json`) or `lines`.
  static func printSummary(
    _ options: Options, kind: (name: String, agents: Int)? = nil, edits: Int, finalLength: Int,
    matches: Bool, fields: [(String, String)], lines: [String]
  ) {
    let name = URL(fileURLWithPath: options.path).lastPathComponent
    if options.json {
      let kindFields = kind.map { [("kind", "\"\($0.name)\""), ("agents", "\($0.agents)")] } ?? []
      let common = [("edits", "\(edits)"), ("final_length", "\(finalLength)")]
      print(
        FileHandleOutput.jsonObject(
          [("trace", "\"\(name)\"")] + kindFields + common
            + [("matches_end_content", "\(matches)")] + fields))
    } else {
      let kindNote = kind.map { " (\($0.name), \($0.agents) agents)" } ?? ""
      print("trace:            \(name)\(kindNote)")
      print("edits:            \(edits)")
      print("final length:     \(finalLength) scalars")
      print("matches end:      \(matches)")
      for line in lines { print(line) }
    }
  }

  static func format(_ milliseconds: Double) -> String {
    let hundredths = (milliseconds * 100).rounded()
    return "\(Int(hundredths) / 100).\(String(Int(hundredths) % 100).leftPadded(to: 2))"
  }
}

extension String {
  fileprivate func leftPadded(to width: Int) -> String {
    count >= width ? self : String(repeating: "0", count: width - count) + self
  }
}
