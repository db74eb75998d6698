/// What a schedule shrinker removed from a seeded run: operations whose transaction is
/// not made, and sends the network loses.
///
/// A run stays a function of its configuration: a skipped operation still advances
/// virtual time and draws its author from the schedule stream, so every other
/// operation keeps its step, its author and its time; only the skipped author's later
/// edits change, as its workload draws less. A dropped send is lost whatever the
/// network would have done, counted in the order sends happen.
///
/// Restarts are cut the same way: the run still draws every restart (its device, its torn
/// bytes, whether it restores a backup), so the others keep their place; a skipped
/// restart then does not happen, and a plain one reopens the device from what the power
/// cut left instead of from its stale backup.
public struct ScheduleCuts: Sendable, Equatable {
  /// Steps (0-based) whose operation is skipped.
  public var skippedOperations: Set<Int>
  /// Sends (0-based, in the order the run makes them) that the network loses.
  public var droppedMessages: Set<Int>
  /// The restarts (0-based, in the order the run draws them) that happen; `nil`: all.
  public var keptRestarts: Set<Int>?
  /// Restarts from a stale backup (numbered as ``keptRestarts``) that reopen from what
  /// the power cut left instead.
  public var plainRestarts: Set<Int>

  public init(
    skippedOperations: Set<Int> = [], droppedMessages: Set<Int> = [],
    keptRestarts: Set<Int>? = nil, plainRestarts: Set<Int> = []
  ) {
    self.skippedOperations = skippedOperations
    self.droppedMessages = droppedMessages
    self.keptRestarts = keptRestarts
    self.plainRestarts = plainRestarts
  }

  /// Whether nothing is cut: the configuration's command replays the run by itself.
  public var isEmpty: Bool {
    skippedOperations.isEmpty && droppedMessages.isEmpty && keptRestarts == nil
      && plainRestarts.isEmpty
  }

  /// Whether the `index`-th restart drawn happens.
  func keepsRestart(_ index: Int) -> Bool { keptRestarts?.contains(index) ?? true }
}

/// A run written down for `converge simulate --replay FILE`: the configuration and its
/// cuts, as lines of `key value`.
///
/// ```text
/// converge-schedule 2
/// seed 12
/// replicas 3
/// operations 40
/// workload tasks
/// loss 0.0
/// duplicate 0.0
/// reorder 0.0
/// partitions 0.0
/// offline 0.0
/// anti-entropy 25
/// live-push true
/// frames false
/// message-limit none
/// library 0
/// restarts 0.02
/// sync-interval 0
/// undo 0.0
/// file-loss 0.0
/// forget 0.0
/// horizon 0
/// leave 0.0
/// operations-kept 3,17-19,39
/// messages-dropped none
/// restarts-kept 0,4
/// restores-plain none
/// ```
///
/// The first line names the format and its version; a reader reads version 1 (written
/// before restarts were cut: no `undo`, `restarts-kept` or `restores-plain` lines) and
/// 2, and refuses others. Lists are comma-separated steps or `first-last` ranges, `all`
/// or `none`. Operations and restarts are listed as those kept, since a shrunk schedule
/// keeps few of many; restarts are numbered in the order the run draws them.
public enum SimulationSchedule {
  /// The format's current version.
  public static let version = 2

  /// The text of `configuration`'s schedule.
  public static func text(of configuration: SimulationConfiguration) -> String {
    let c = configuration
    let skipped = c.cuts.skippedOperations
    let kept = skipped.isEmpty ? nil : (0..<c.operations).filter { !skipped.contains($0) }
    let lines = [
      "converge-schedule \(version)",
      "seed \(c.seed)", "replicas \(c.replicas)", "operations \(c.operations)",
      "workload \(c.workload.rawValue)",
      "loss \(c.faults.loss)", "duplicate \(c.faults.duplicate)",
      "reorder \(c.faults.reorder)", "partitions \(c.faults.partitions)",
      "offline \(c.faults.offline)", "anti-entropy \(c.antiEntropyInterval)",
      "live-push \(c.livePush)", "frames \(c.framedPushes)",
      "message-limit \(c.messageLimit.map(String.init) ?? "none")",
      "library \(c.library)", "restarts \(c.restarts)", "sync-interval \(c.syncInterval)",
      "undo \(c.undo)", "file-loss \(c.fileLoss)",
      "forget \(c.forgetting)", "horizon \(c.horizon)", "leave \(c.leaves)",
      "collect-lists \(c.collectsLists)",
      "operations-kept " + (kept.map(listText) ?? "all"),
      "messages-dropped " + listText(c.cuts.droppedMessages.sorted()),
      "restarts-kept " + (c.cuts.keptRestarts.map { listText($0.sorted()) } ?? "all"),
      "restores-plain " + listText(c.cuts.plainRestarts.sorted()),
    ]
    return lines.joined(separator: "\n") + "\n"
  }

  /// Reads a schedule written by ``text(of:)``.
  ///
  /// - Throws: ``ScheduleError`` naming the first line that is not understood.
  public static func configuration(parsing text: String) throws -> SimulationConfiguration {
    var fields: [String: String] = [:]
    var lines = text.split(separator: "\n", omittingEmptySubsequences: true).makeIterator()
    guard let header = lines.next(),
      header == "converge-schedule \(version)" || header == "converge-schedule 1"
    else {
      throw ScheduleError(line: 1, reason: "expected \"converge-schedule \(version)\"")
    }
    var number = 1
    while let line = lines.next() {
      number += 1
      let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
      guard parts.count == 2, fields[parts[0]] == nil else {
        throw ScheduleError(line: number, reason: "expected one \"key value\" per key")
      }
      fields[parts[0]] = parts[1]
    }
    func field<T>(_ key: String, _ read: (String) -> T?) throws -> T {
      guard let text = fields[key], let value = read(text) else {
        throw ScheduleError(line: nil, reason: "missing or invalid \"\(key)\"")
      }
      return value
    }
    let rate: (String) -> Double? = { Double($0).flatMap { (0...1).contains($0) ? $0 : nil } }
    let count: (String) -> Int? = { Int($0).flatMap { $0 >= 0 ? $0 : nil } }
    var configuration = SimulationConfiguration(
      seed: try field("seed") { UInt64($0) },
      replicas: try field("replicas") { Int($0).flatMap { $0 >= 1 ? $0 : nil } },
      operations: try field("operations", count),
      workload: try field("workload") { WorkloadKind(rawValue: $0) },
      faults: NetworkFaults(
        loss: try field("loss", rate), duplicate: try field("duplicate", rate),
        reorder: try field("reorder", rate), partitions: try field("partitions", rate),
        offline: try field("offline", rate)),
      livePush: try field("live-push") { Bool($0) },
      framedPushes: try field("frames") { Bool($0) },
      antiEntropyInterval: try field("anti-entropy", count),
      messageLimit: try field("message-limit") { text -> Int?? in
        text == "none" ? .some(nil) : count(text).map { .some($0) }
      },
      // Schedules written before libraries and restarts have none of these lines.
      library: fields["library"] == nil ? 0 : try field("library", count),
      restarts: fields["restarts"] == nil ? 0 : try field("restarts", rate),
      syncInterval: fields["sync-interval"] == nil ? 0 : try field("sync-interval") { UInt64($0) })
    let operations = configuration.operations
    let kept = try field("operations-kept") { text -> Set<Int>? in
      text == "all" ? Set(0..<operations) : list(text).map(Set.init)
    }
    configuration.cuts.skippedOperations = Set((0..<operations).filter { !kept.contains($0) })
    configuration.cuts.droppedMessages = Set(try field("messages-dropped", list))
    // Version 1 has no undo and cuts no restarts.
    if fields["undo"] != nil { configuration.undo = try field("undo", rate) }
    if fields["file-loss"] != nil { configuration.fileLoss = try field("file-loss", rate) }
    // Schedules written before stability runs have none of these lines.
    if fields["forget"] != nil { configuration.forgetting = try field("forget", rate) }
    if fields["horizon"] != nil { configuration.horizon = try field("horizon") { UInt64($0) } }
    if fields["leave"] != nil { configuration.leaves = try field("leave", rate) }
    if fields["collect-lists"] != nil {
      configuration.collectsLists = try field("collect-lists") { Bool($0) }
    }
    if fields["restarts-kept"] != nil {
      configuration.cuts.keptRestarts = try field("restarts-kept") { text -> Set<Int>?? in
        text == "all" ? .some(nil) : list(text).map { .some(Set($0)) }
      }
    }
    if fields["restores-plain"] != nil {
      configuration.cuts.plainRestarts = Set(try field("restores-plain", list))
    }
    return configuration
  }

  /// `[1, 2, 3, 7]` as `1-3,7`; `none` when empty.
  static func listText(_ sorted: [Int]) -> String {
    var parts: [String] = []
    var index = sorted.startIndex
    while index < sorted.endIndex {
      var end = index
      while end + 1 < sorted.endIndex, sorted[end + 1] == sorted[end] + 1 { end += 1 }
      parts.append(end == index ? "\(sorted[index])" : "\(sorted[index])-\(sorted[end])")
      index = end + 1
    }
    return parts.isEmpty ? "none" : parts.joined(separator: ",")
  }

  /// The steps of a list written by ``listText(_:)``, or `nil` if it is not one. Ranges
  /// are bounded by the list's length, so a hostile file cannot ask for a huge set.
  static func list(_ text: String) -> [Int]? {
    guard text != "none" else { return [] }
    var result: [Int] = []
    for part in text.split(separator: ",") {
      let bounds = part.split(separator: "-", maxSplits: 1).compactMap { Int($0) }
      guard bounds.count == part.split(separator: "-").count, let first = bounds.first,
        first >= 0, let last = bounds.last, last >= first, last - first < 10_000_000,
        result.count + (last - first) < 10_000_000
      else { return nil }
      result += first...last
    }
    return result
  }
}

/// A schedule file that `converge simulate --replay` cannot read.
public struct ScheduleError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The 1-based line at fault, if one is.
  public var line: Int?
  public var reason: String

  public var description: String {
    (line.map { "schedule line \($0): " } ?? "schedule: ") + reason
  }
}
