import ArgumentParser
import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayNIO
import ConvergeRelayTestSupport
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `converge-relay load`: the resource figures of issue #43, measured on a `serve` child
/// process of this executable (its defaults, SQLite, loopback) from `/proc` (Linux).
///
/// - `idle`: `--sockets` sockets, each in a space of its own, handshake and stay silent;
///   the relay's CPU over `--seconds` once they are open.
/// - `handshakes`: a space of `--megabytes` of text, then one read socket that sends
///   `--count` handshakes and reads none of the answers for 20 s; the relay's resident
///   growth, and the close code the socket gets once it reads.
/// - `writer`: one socket pushing `--rate` deltas a second for `--seconds`; the relay's
///   resident memory before and at its peak.
///
/// Every load is bounded in count and time and ends by itself; the relay is killed at
/// the end.
struct Load: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Measure a relay process's memory and CPU under one load (Linux).")

  @Argument(help: "idle, handshakes or writer.")
  var scenario: String
  @Option(help: "idle: sockets (1…30,000).")
  var sockets = 1_000
  @Option(help: "idle and writer: seconds measured (1…600).")
  var seconds = 30
  @Option(help: "handshakes: megabytes of text in the space (1…64).")
  var megabytes = 2
  @Option(help: "handshakes: handshakes sent without reading (1…10,000).")
  var count = 300
  @Option(help: "writer: deltas per second (1…5,000).")
  var rate = 800
  @Option(help: "Another converge-relay executable whose serve to measure (an older build).")
  var relay: String?

  func validate() throws {
    guard ["idle", "handshakes", "writer"].contains(scenario), (1...30_000).contains(sockets),
      (1...600).contains(seconds), (1...64).contains(megabytes), (1...10_000).contains(count),
      (1...5_000).contains(rate)
    else { throw ValidationError("see --help for the ranges") }
  }

  func run() async throws {
    #if canImport(Glibc)
      // Room for every socket; the relay inherits the limit.
      var limit = rlimit()
      getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
      limit.rlim_cur = limit.rlim_max
      setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    #endif
    let directory =
      FileManager.default.temporaryDirectory.path
      + "/converge-relay-load-\(UInt64.random(in: 0 ... .max))"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let secret = (0..<4).map { _ in String(UInt64.random(in: 1 << 60 ... .max), radix: 16) }
      .joined()
    let relay = try RelayChildProcess.start(
      executable: self.relay.map { URL(fileURLWithPath: $0) } ?? RelaySimulation.executable,
      data: directory, secret: secret)
    defer { relay.kill() }
    let probe = ProcessProbe(pid: relay.processIdentifier)
    var logger = Logger(label: "converge-relay-load")
    logger.logLevel = .critical
    let harness = LoadHarness(
      base: "ws://127.0.0.1:\(relay.port)",
      authority: try await RelayTokenAuthority(secret: secret),
      logger: logger)
    print("relay pid \(relay.processIdentifier), resident at start \(probe.residentMiB) MiB")
    switch scenario {
    case "idle": try await idle(harness, probe)
    case "handshakes": try await handshakes(harness, probe)
    default: try await writer(harness, probe)
    }
  }

  private func idle(_ harness: LoadHarness, _ probe: ProcessProbe) async throws {
    let opened = Tally()
    let started = ContinuousClock.now
    var tasks: [Task<Void, Never>] = []
    for index in 0..<sockets {
      let space = "idle-\(index)"
      let token = try await harness.token(space: space, scope: .read)
      let hold: @Sendable () async -> Void = {
        try? await harness.connect(space: space, token: token) { inbound, outbound in
          try await outbound.write(.binary(ByteBuffer(bytes: LoadHarness.hello)))
          var messages = inbound.messages(maxSize: 1 << 24).makeAsyncIterator()
          _ = try await messages.next()
          opened.add()
          // Silent until cancelled.
          while try await messages.next() != nil {}
        }
      }
      tasks.append(Task(operation: hold))
      // Batches of 100, so that the listen backlog is not overrun.
      if index % 100 == 99 {
        while opened.value < index - 100, ContinuousClock.now - started < .seconds(120) {
          try await Task.sleep(for: .milliseconds(10))
        }
      }
    }
    while opened.value < sockets, ContinuousClock.now - started < .seconds(180) {
      try await Task.sleep(for: .milliseconds(50))
    }
    let open = opened.value
    print("\(open) of \(sockets) sockets answered in \(started.duration(to: .now)); settling 5 s")
    try await Task.sleep(for: .seconds(5))
    let before = probe.cpuSeconds
    let from = ContinuousClock.now
    try await Task.sleep(for: .seconds(seconds))
    let used = probe.cpuSeconds - before
    let wall = from.duration(to: .now)
    let share =
      used / (Double(wall.components.seconds) + Double(wall.components.attoseconds) * 1e-18)
    print(
      "relay CPU \(String(format: "%.2f", share * 100))% of a core over \(seconds) s with "
        + "\(open) idle sockets in as many spaces; resident \(probe.residentMiB) MiB, "
        + "peak \(probe.peakMiB) MiB")
    for task in tasks { task.cancel() }
  }

  private func handshakes(_ harness: LoadHarness, _ probe: ProcessProbe) async throws {
    // The space: text pushed in pieces of 512 KiB (a message is at most 1 MiB).
    let writerID = ReplicaID(rawValue: 1)
    var replica = Replica(id: writerID)
    let key = EntityKey(type: "note", id: "big")
    var pushes: [[UInt8]] = []
    for piece in 0..<(megabytes * 2) {
      let commit = replica.transact { tx in
        if piece == 0 { tx.create(key) }
        tx.insertText(String(repeating: "x", count: 512 << 10), at: .max, in: "body", of: key)
      }
      pushes.append(commit.delta.encoded())
    }
    let context = replica.context
    let pieces = pushes
    let writeToken = try await harness.token(space: "big", scope: .write, replicas: [writerID])
    try await harness.connect(space: "big", token: writeToken) { inbound, outbound in
      for push in pieces { try await outbound.write(.binary(ByteBuffer(bytes: push))) }
      for try await message in inbound.messages(maxSize: 1 << 24) {
        guard case .binary(let buffer) = message,
          let acknowledgement = try? RelayAcknowledgement(decoding: [UInt8](buffer: buffer)[...])
        else { continue }
        if acknowledgement.durable.includes(context) { break }
      }
      try await outbound.close(.normalClosure, reason: nil)
    }
    try await Task.sleep(for: .seconds(2))
    let baseline = probe.residentMiB
    print("space of \(megabytes) MB stored; relay resident \(baseline) MiB")
    let readToken = try await harness.token(space: "big", scope: .read)
    let sampling = probe.sampleResidentPeak(from: baseline)
    let received = Mutex(0)
    let count = self.count
    let close = try await harness.connect(space: "big", token: readToken) { inbound, outbound in
      for _ in 0..<count { try await outbound.write(.binary(ByteBuffer(bytes: LoadHarness.hello))) }
      // Reads nothing for 20 s, then everything.
      try await Task.sleep(for: .seconds(20))
      for try await _ in inbound.messages(maxSize: 1 << 26) { received.withLock { $0 += 1 } }
    }
    let reason = close.flatMap(RelayCloseReason.init(closeFrame:))
    let top = await sampling.stop()
    print(
      "\(count) unread handshakes: relay resident peak \(top) MiB (+\(top - baseline) MiB), "
        + "now \(probe.residentMiB) MiB; the socket read \(received.withLock { $0 }) answers, "
        + "then close \(reason.map { "\($0.rawValue) \($0)" } ?? "without a relay reason")")
  }

  private func writer(_ harness: LoadHarness, _ probe: ProcessProbe) async throws {
    let writerID = ReplicaID(rawValue: 1)
    let token = try await harness.token(space: "busy", scope: .write, replicas: [writerID])
    let baseline = probe.residentMiB
    let sampling = probe.sampleResidentPeak(from: baseline)
    let acknowledged = Mutex(0)
    let rate = self.rate
    let seconds = self.seconds
    let key = EntityKey(type: "note", id: "typed")
    _ = try await harness.connect(space: "busy", token: token) { inbound, outbound in
      try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
          var replica = Replica(id: writerID)
          var session = SyncSession()
          if let hello = session.makeEncodedMessage(for: replica) {
            try await outbound.write(.binary(ByteBuffer(bytes: hello)))
          }
          let interval = Duration.seconds(1) / rate
          var next = ContinuousClock.now
          let end = next + .seconds(seconds)
          var typed = 0
          while next < end {
            try await Task.sleep(until: next)
            let commit = replica.transact { tx in
              if typed == 0 { tx.create(key) }
              tx.insertText("x", at: Int.random(in: 0...typed), in: "body", of: key)
            }
            typed += 1
            let bytes = session.pushEncoded(commit, from: replica)
            try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
            next += interval
          }
          try await Task.sleep(for: .seconds(2))
          try await outbound.close(.normalClosure, reason: nil)
        }
        for try await message in inbound.messages(maxSize: 1 << 24) {
          guard case .binary(let buffer) = message else { continue }
          if RelayAcknowledgement.isRelayEnvelope([UInt8](buffer: buffer)[...]) {
            acknowledged.withLock { $0 += 1 }
          }
        }
        group.cancelAll()
      }
    }
    let top = await sampling.stop()
    print(
      "one writer at \(rate) deltas/s for \(seconds) s (\(acknowledged.withLock { $0 }) "
        + "acknowledgements): relay resident \(baseline) MiB before, peak \(top) MiB "
        + "(+\(top - baseline) MiB), now \(probe.residentMiB) MiB")
  }
}

/// Tokens and sockets for ``Load``.
struct LoadHarness: Sendable {
  let base: String
  let authority: RelayTokenAuthority
  let logger: Logger
  static let hello = SyncMessage(context: CausalContext(), delta: nil).encoded()

  func token(space: String, scope: RelayTokenClaims.Scope, replicas: [ReplicaID] = [])
    async throws -> String
  {
    try await authority.sign(
      RelayTokenClaims(
        space: space, scope: scope, expiry: Date(timeIntervalSinceNow: 3_600), replicas: replicas))
  }

  @discardableResult
  func connect(
    space: String, token: String,
    _ body:
      @escaping @Sendable (WebSocketInboundStream, WebSocketOutboundWriter) async throws -> Void
  ) async throws -> WebSocketCloseFrame? {
    var headers = HTTPFields()
    headers[.authorization] = "Bearer \(token)"
    return try await WebSocketClient.connect(
      url: "\(base)/v1/spaces/\(space)/sync",
      configuration: .init(maxFrameSize: 1 << 26, additionalHeaders: headers), logger: logger
    ) { inbound, outbound, _ in try await body(inbound, outbound) }
  }
}

/// A process's CPU time and resident memory, from `/proc`.
struct ProcessProbe: Sendable {
  let pid: Int32

  /// User and system CPU seconds so far.
  var cpuSeconds: Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12])
    else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
  }

  var residentMiB: Int { status("VmRSS") / 1024 }

  /// Samples the resident size every 100 ms from now until ``PeakSampling/stop()``, which
  /// returns the largest seen (at least `baseline`).
  func sampleResidentPeak(from baseline: Int) -> PeakSampling {
    let peak = Mutex(baseline)
    let task = Task {
      while !Task.isCancelled {
        let now = residentMiB
        peak.withLock { $0 = max($0, now) }
        try? await Task.sleep(for: .milliseconds(100))
      }
      return peak.withLock { $0 }
    }
    return PeakSampling(task: task)
  }

  /// A running sample of a process's resident size.
  struct PeakSampling: Sendable {
    let task: Task<Int, Never>

    /// Stops sampling and returns the largest resident size seen, in MiB.
    func stop() async -> Int {
      task.cancel()
      return await task.value
    }
  }
  var peakMiB: Int { status("VmHWM") / 1024 }

  /// A `/proc/PID/status` field in kB.
  private func status(_ field: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
      return 0
    }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
      let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      return words.count > 1 ? Int(words[1]) ?? 0 : 0
    }
    return 0
  }
}

/// A count shared by tasks.
final class Tally: Sendable {
  private let count = Mutex(0)
  func add() { count.withLock { $0 += 1 } }
  var value: Int { count.withLock { $0 } }
}
