import Converge
import ConvergeStore
import ConvergeTestSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `converge torture DIR [--seconds N] [--kills N] [--seed S] [--json]`: kills writers of
/// a store with SIGKILL at random moments and checks that every delta they reported
/// durable survives.
///
/// Each round spawns this executable as a hidden `torture-child` writing through the
/// store in DIR (typing, pasting, deleting, compacting). The child prints `W <hex>` for
/// every commit's delta as it makes it and `D <n>` once its first n commits are durable.
/// After a seeded random delay the parent sends SIGKILL, reopens the store, and checks
/// that (1) every delta of the first n commits is in the recovered document, and (2) the
/// document equals the state after some prefix of the commits of at least n: nothing
/// acknowledged lost, nothing invented.
enum TortureCommand {
  struct Totals {
    var kills = 0
    var recoveredOpens = 0
    var cutTails = 0
    var freshIDs = 0
    var commits = 0
    var durableCommits = 0
    var lostAcknowledged = 0
    var unmatchedStates = 0
  }

  struct Options {
    var seconds = 10.0
    var kills = Int.max
    var seed = UInt64.random(in: 1...UInt64.max)
    var json = false
  }

  static func run(_ arguments: [String]) -> Int32 {
    guard
      let (options, operands) = CommandOption.parse(
        arguments, into: Options(),
        [
          .flag("--json", \.json),
          .value("--seconds", \.seconds, .seconds),
          .value("--kills", \.kills, .positive),
          .value("--seed", \.seed, .number),
        ], operands: 1),
      let directory = operands.first
    else { return usage() }
    let absolute = URL(fileURLWithPath: directory).standardizedFileURL.path
    do {
      let totals = try torture(
        absolute, seconds: options.seconds, kills: options.kills, seed: options.seed)
      let rows: [(String, String)] = [
        ("seed", "\(options.seed)"), ("kills", "\(totals.kills)"),
        ("recovered_opens", "\(totals.recoveredOpens)"), ("cut_tails", "\(totals.cutTails)"),
        ("fresh_ids", "\(totals.freshIDs)"), ("commits", "\(totals.commits)"),
        ("durable_commits", "\(totals.durableCommits)"),
        ("lost_acknowledged", "\(totals.lostAcknowledged)"),
        ("unmatched_states", "\(totals.unmatchedStates)"),
      ]
      if options.json {
        print(FileHandleOutput.jsonObject(rows))
      } else {
        for (key, value) in rows {
          print(
            key.replacingOccurrences(of: "_", with: " ").padding(
              toLength: 20, withPad: " ", startingAt: 0) + value)
        }
      }
      return totals.lostAcknowledged == 0 && totals.unmatchedStates == 0 ? 0 : 1
    } catch {
      FileHandleOutput.error("error: \(error) (seed \(options.seed))")
      return 1
    }
  }

  static func torture(_ directory: String, seconds: Double, kills: Int, seed: UInt64) throws
    -> Totals
  {
    var random = SeededGenerator(seed: seed)
    var totals = Totals()
    let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
    let report = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-torture-\(getpid()).txt")
    defer { try? FileManager.default.removeItem(at: report) }
    var base = try DocumentStore(directory: directory)
    var document = base.replica.document
    try base.close()
    let deadline = Date().addingTimeInterval(seconds)
    while totals.kills < kills && Date() < deadline {
      _ = FileManager.default.createFile(atPath: report.path, contents: nil)
      let output = try FileHandle(forWritingTo: report)
      let child = Process()
      child.executableURL = executable
      child.arguments = ["torture-child", directory, "\(random.next())"]
      child.standardOutput = output
      try child.run()
      usleep(UInt32.random(in: 20_000...300_000, using: &random))
      kill(child.processIdentifier, SIGKILL)
      child.waitUntilExit()
      try output.close()
      totals.kills += 1

      let (written, durable) = parse(try Data(contentsOf: report))
      // The child prints a commit before it can be durable.
      if durable > written.count { totals.unmatchedStates += 1 }
      totals.commits += written.count
      totals.durableCommits += durable
      base = try DocumentStore(directory: directory)
      totals.recoveredOpens += 1
      totals.cutTails += base.recovery.cutTails.count
      totals.freshIDs += base.recovery.identityChange == nil ? 0 : 1
      let recovered = base.replica.document
      for delta in written.prefix(durable) where !recovered.context.includes(delta.context) {
        totals.lostAcknowledged += 1
      }
      // Some prefix of the writes, at least the durable ones, must give this document.
      var state = Replica(document: document, id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
      var matched = durable == 0 && state.document == recovered
      for (index, delta) in written.enumerated() {
        state.apply(delta)
        if index + 1 >= durable && state.document.context == recovered.context
          && state.document == recovered
        {
          matched = true
          break
        }
      }
      if !matched { totals.unmatchedStates += 1 }
      document = recovered
      // Half the rounds close cleanly, half leave the next child an unclean shutdown.
      if random.next() % 2 == 0 { try base.close() }
    }
    return totals
  }

  /// The deltas the child wrote (complete lines only: a kill may cut the last) and how
  /// many of them it reported durable.
  static func parse(_ data: Data) -> (written: [DocumentDelta], durable: Int) {
    var written: [DocumentDelta] = []
    var durable = 0
    let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    for line in lines.dropLast() {
      guard let tag = line.first, line.count > 2 else { continue }
      let body = line.dropFirst(2)
      if tag == UInt8(ascii: "W"), let bytes = fromHex(body),
        let delta = try? DocumentDelta(decoding: bytes)
      {
        written.append(delta)
      } else if tag == UInt8(ascii: "D"), let count = Int(String(decoding: body, as: UTF8.self)) {
        durable = Swift.max(durable, count)
      }
    }
    return (written, durable)
  }

  /// The hidden child: writes through the store until it is killed.
  static func child(_ arguments: [String]) -> Int32 {
    guard arguments.count == 2, let seed = UInt64(arguments[1]) else { return usage() }
    var random = SeededGenerator(seed: seed)
    // A commit's delta is printed before the commit may sync: the store's clock stands at
    // zero while `transact` runs (nothing is due inside it) and reads the time only for
    // the `syncIfDue()` after the print, which syncs and compacts (past 64 KiB of log) on
    // the store's background queue as an app's typing would. Flushes and compactions on
    // the child's own thread come between. A short interval makes kills land in every
    // phase of group commit.
    let time = ChildTime()
    var configuration = DocumentStore.Configuration()
    let interval = Duration.milliseconds(Int64.random(in: 1...50, using: &random))
    configuration.syncInterval = interval
    configuration.compactionLogBytes = 64 << 10
    configuration.now = { time.now }
    let clock = ContinuousClock()
    let start = clock.now
    var lastSync = start
    let store: DocumentStore
    do {
      store = try DocumentStore(directory: arguments[0], configuration: configuration)
    } catch {
      FileHandleOutput.error("error: \(error)")
      return 1
    }
    store.onDurable = { _ in emit("D \(store.durableCommits)\n") }
    let notes = (0..<3).map { EntityKey(type: "note", id: "n\($0)") }
    while true {
      let key = notes[Int.random(in: 0..<notes.count, using: &random)]
      let length = store.replica.document.text(of: "body", in: key).unicodeScalars.count
      let position = Int.random(in: 0...length, using: &random)
      let action = Int.random(in: 0..<100, using: &random)
      time.now = .zero
      let commit = store.transact { tx in
        switch action {
        case 0..<80:
          tx.insertText(
            String(letters.randomElement(using: &random) ?? "x"), at: position, in: "body", of: key)
        case 80..<88:
          let count = Int.random(in: 50...800, using: &random)
          tx.insertText(
            String((0..<count).map { _ in letters.randomElement(using: &random) ?? "x" }),
            at: position, in: "body", of: key)
        case 88..<96 where length > 0:
          let start = Int.random(in: 0..<length, using: &random)
          let end = Swift.min(length, start + Int.random(in: 1...40, using: &random))
          tx.deleteText(start..<end, in: "body", of: key)
        default:
          tx.setValue(.string("title \(position)"), for: "title", of: key)
        }
      }
      // Reported before it can be durable; the durable count follows the sync.
      emit("W " + hex(commit.delta.encoded()) + "\n")
      time.now = clock.now - start
      if action == 99 {
        try? store.compact()
      } else if clock.now - lastSync >= interval * 4 {
        try? store.flush()
        lastSync = clock.now
      } else {
        try? store.syncIfDue()
      }
      if Int.random(in: 0..<8, using: &random) == 0 { usleep(500) }
    }
  }

  static let letters = Array("abcdefghijklmnopqrstuvwxyz é🙂\n")

  /// Writes straight to standard output, unbuffered, so a kill loses no reported line.
  static func emit(_ line: String) {
    var bytes = Array(line.utf8)
    bytes.withUnsafeMutableBytes { raw in
      var offset = 0
      while offset < raw.count, let base = raw.baseAddress {
        let written = write(1, base + offset, raw.count - offset)
        if written <= 0 { return }
        offset += written
      }
    }
  }

  static func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var result: [UInt8] = []
    result.reserveCapacity(bytes.count * 2)
    for byte in bytes {
      result.append(digits[Int(byte >> 4)])
      result.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: result, as: UTF8.self)
  }

  static func fromHex<C: Collection>(_ text: C) -> [UInt8]? where C.Element == UInt8 {
    func value(_ digit: UInt8) -> UInt8? {
      switch digit {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
      default: nil
      }
    }
    guard text.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    var iterator = text.makeIterator()
    while let high = iterator.next(), let low = iterator.next() {
      guard let high = value(high), let low = value(low) else { return nil }
      bytes.append(high << 4 | low)
    }
    return bytes
  }

  private static func usage() -> Int32 {
    FileHandleOutput.error(
      "usage: converge torture DIR [--seconds N] [--kills N] [--seed S] [--json]")
    return 2
  }
}

/// The torture child's group-commit clock: set by the child's one thread around each
/// commit, read by the store on that thread only (`@unchecked Sendable`).
private final class ChildTime: @unchecked Sendable {
  var now: Duration = .zero
}
