import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayNIO
import Foundation
import HTTPTypes
import Histogram
import HummingbirdWSClient
import Logging
import NIOCore
import Synchronization

/// What every device of a bench run adds to: push times by dot, the latency histogram,
/// counts and bytes.
final class BenchMetrics: Sendable {
  struct Counts: Sendable {
    var pushedAt: [Dot: ContinuousClock.Instant] = [:]
    var latency = Histogram<UInt64>(highestTrackableValue: 600_000_000)
    var acknowledged = 0
    var fannedOut = 0
    var bytesSent = 0
    var bytesReceived = 0
    var firstPush: ContinuousClock.Instant?
    var lastAcknowledgement: ContinuousClock.Instant?
    /// Connections that dropped before the device was done and were made again.
    var reconnections = 0
    /// Sockets the relay closed with a reason, by reason (refusals and limits).
    var closes: [RelayCloseReason: Int] = [:]
    /// When a node was killed, and the samples that arrived after it: whether each is
    /// inside the kill window depends on when the devices converged, known only later.
    var killedAt: ContinuousClock.Instant?
    var outsideKillWindow = Histogram<UInt64>(highestTrackableValue: 600_000_000)
    var afterKill: [(pushed: ContinuousClock.Instant, micros: UInt64)] = []
  }

  let counts = Mutex(Counts())

  func pushed(_ dot: Dot, bytes: Int) {
    let now = ContinuousClock.now
    counts.withLock {
      $0.pushedAt[dot] = now
      $0.bytesSent += bytes
      if $0.firstPush == nil { $0.firstPush = now }
    }
  }

  func reconnected(closedWith reason: RelayCloseReason?) {
    counts.withLock {
      $0.reconnections += 1
      if let reason { $0.closes[reason, default: 0] += 1 }
    }
  }

  func killed(at instant: ContinuousClock.Instant) {
    counts.withLock { $0.killedAt = instant }
  }

  func received(_ bytes: Int, acknowledgement: Bool) {
    let now = ContinuousClock.now
    counts.withLock {
      $0.bytesReceived += bytes
      if acknowledgement {
        $0.acknowledged += 1
        $0.lastAcknowledgement = now
      }
    }
  }

  /// A push from another device arrived: one latency sample per keystroke it carries.
  func fannedOut(_ context: CausalContext, to receiver: ReplicaID) {
    let now = ContinuousClock.now
    counts.withLock { counts in
      counts.fannedOut += 1
      for (replica, counters) in context.entries where replica != receiver {
        for range in counters.ranges {
          for counter in range {
            guard let sent = counts.pushedAt[Dot(replica: replica, counter: counter)] else {
              continue
            }
            let elapsed = now - sent
            let micros = UInt64(
              max(
                0,
                elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds
                  / 1_000_000_000_000))
            _ = counts.latency.record(micros)
            if let killedAt = counts.killedAt, now >= killedAt {
              counts.afterKill.append((sent, micros))
            } else {
              _ = counts.outsideKillWindow.record(micros)
            }
          }
        }
      }
    }
  }

  /// The report, once typing is over; `base` is a node still running, and
  /// `convergedAfterKill` how long after the kill every device held what had been
  /// acknowledged by then (`nil`: no kill, or they never did).
  func report(
    devices: [BenchDevice], connected: Int, seconds: Int, offeredPerDevice: Int, base: String,
    nodes: Int, convergedAfterKill: Duration?, endedWithinDeadline: Bool,
    authority: RelayTokenAuthority, logger: Logger
  ) async -> BenchReport {
    // Let every space settle: one more handshake per device pulls anything missed. All
    // at once and bounded as a whole, so a relay that never answers ends the bench (as
    // not converged) instead of hanging it.
    let settled: Void? = await Bench.within(.seconds(20)) {
      await withTaskGroup(of: Void.self) { group in
        for device in devices {
          group.addTask { await device.settle(base: base, logger: logger) }
        }
      }
    }
    var converged = true
    var lost: UInt64 = 0
    let spaces = Dictionary(grouping: devices, by: \.space)
    // What the relay holds now, pulled by a fresh reader per space; `nil` for a space
    // whose reader had no answer in time.
    let relayContexts: [String: CausalContext] =
      await Bench.within(.seconds(20)) { () -> [String: CausalContext] in
        await withTaskGroup(of: (String, CausalContext?).self) { group in
          for space in spaces.keys {
            group.addTask {
              let context = await BenchDevice.relayContext(
                base: base, space: space, authority: authority, logger: logger)
              return (space, context)
            }
          }
          var found: [String: CausalContext] = [:]
          for await (space, context) in group { found[space] = context }
          return found
        }
      } ?? [:]
    for (space, members) in spaces {
      let documents = members.map { $0.state.withLock { $0.replica.document } }
      if documents.contains(where: { $0 != documents[0] }) { converged = false }
      let relayContext = relayContexts[space]
      if relayContext == nil { converged = false }
      for member in members {
        let acknowledged = member.state.withLock { $0.acknowledgedOwn }
        lost += acknowledged.subtracting(relayContext ?? CausalContext()).eventCount
      }
    }
    let typed = devices.reduce(0) { $0 + $1.state.withLock { Int($0.typed) } }
    let acknowledgedKeystrokes = devices.reduce(0) { sum, device in
      sum
        + Int(
          device.state.withLock { $0.acknowledgedOwn.eventCount })
    }
    var counts = self.counts.withLock { $0 }
    let elapsed = Double(seconds)
    // The kill window: from the kill until every device converged (to the end of the
    // run if they never did). A sample is in it when it arrived after the kill and was
    // pushed before the window closed.
    var killWindowSamples = 0
    if let killedAt = counts.killedAt {
      let windowEnd = killedAt + (convergedAfterKill ?? .seconds(seconds + 3_600))
      for sample in counts.afterKill {
        if sample.pushed > windowEnd {
          _ = counts.outsideKillWindow.record(sample.micros)
        } else {
          killWindowSamples += 1
        }
      }
    }
    return BenchReport(
      clients: devices.count, connected: connected, seconds: seconds,
      offeredPerSecond: Double(offeredPerDevice * devices.count),
      typedPerSecond: Double(typed) / elapsed,
      acknowledgedKeystrokesPerSecond: Double(acknowledgedKeystrokes) / elapsed,
      settled: settled != nil, endedWithinDeadline: endedWithinDeadline,
      closes: Dictionary(
        uniqueKeysWithValues: counts.closes.map { ("\($0.key.rawValue) \($0.key)", $0.value) }),
      acceptedPerSecond: Double(counts.acknowledged) / elapsed,
      fannedOutPerSecond: Double(counts.fannedOut) / elapsed,
      latencySamples: counts.latency.totalCount,
      p50Milliseconds: Double(counts.latency.valueAtPercentile(50)) / 1000,
      p99Milliseconds: Double(counts.latency.valueAtPercentile(99)) / 1000,
      maxMilliseconds: Double(counts.latency.max) / 1000,
      bytesSent: counts.bytesSent, bytesReceived: counts.bytesReceived,
      converged: converged, lostAcknowledged: lost, nodes: nodes,
      reconnections: counts.reconnections,
      killedNodeAtSeconds: counts.killedAt.flatMap { killedAt in
        counts.firstPush.map { (killedAt - $0).seconds }
      },
      convergedAfterKillMilliseconds: convergedAfterKill.map { $0.seconds * 1000 },
      p99OutsideKillWindowMilliseconds: counts.killedAt == nil
        ? nil : Double(counts.outsideKillWindow.valueAtPercentile(99)) / 1000,
      killWindowSamples: counts.killedAt == nil ? nil : killWindowSamples)
  }
}

struct BenchReport: Codable {
  var clients: Int
  var connected: Int
  var seconds: Int
  /// Keystrokes a second the devices were asked to type, all together.
  var offeredPerSecond: Double
  /// Keystrokes a second they typed and pushed (none while disconnected).
  var typedPerSecond: Double
  /// Keystrokes a second the relay acknowledged as durable.
  var acknowledgedKeystrokesPerSecond: Double
  /// Whether every device's last handshake ended in time.
  var settled: Bool
  /// Whether every device stopped by the run's deadline (typing, then 10 s).
  var endedWithinDeadline: Bool
  /// Sockets the relay closed with a reason, by code and reason.
  var closes: [String: Int]
  var acceptedPerSecond: Double
  var fannedOutPerSecond: Double
  var latencySamples: UInt64
  var p50Milliseconds: Double
  var p99Milliseconds: Double
  var maxMilliseconds: Double
  var bytesSent: Int
  var bytesReceived: Int
  var converged: Bool
  var lostAcknowledged: UInt64
  var nodes: Int
  var reconnections: Int
  var killedNodeAtSeconds: Double?
  var convergedAfterKillMilliseconds: Double?
  var p99OutsideKillWindowMilliseconds: Double?
  var killWindowSamples: Int?

  /// One line: whether the run did what it should under the load it was offered.
  var verdict: String {
    let ok = converged && lostAcknowledged == 0 && endedWithinDeadline && settled
    return ok
      ? "verdict: ok (every space converged, nothing acknowledged lost)"
      : "verdict: FAILED (converged \(converged), lost \(lostAcknowledged), "
        + "ended within deadline \(endedWithinDeadline), settled \(settled))"
  }

  func printText() {
    print("clients \(connected)/\(clients) connected, \(seconds) s")
    print(
      "keystrokes offered \(Int(offeredPerSecond))/s, typed \(Int(typedPerSecond))/s, "
        + "acknowledged \(Int(acknowledgedKeystrokesPerSecond))/s")
    print(
      "deltas accepted \(Int(acceptedPerSecond))/s, fan-out messages \(Int(fannedOutPerSecond))/s")
    print(
      "fan-out latency p50 \(p50Milliseconds) ms, p99 \(p99Milliseconds) ms, max \(maxMilliseconds) ms (\(latencySamples) samples)"
    )
    print("bytes sent \(bytesSent), received \(bytesReceived)")
    print("converged \(converged ? "yes" : "no"), lost acknowledged events \(lostAcknowledged)")
    print("nodes \(nodes), reconnections \(reconnections)")
    if !closes.isEmpty {
      let list = closes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
      print("closed by the relay: " + list.joined(separator: ", "))
    }
    if let killedNodeAtSeconds {
      let converged = convergedAfterKillMilliseconds.map { "\($0) ms after it" } ?? "never"
      print("node 1 killed at \(killedNodeAtSeconds) s; every device converged \(converged)")
      print(
        "fan-out p99 outside the kill window \(p99OutsideKillWindowMilliseconds ?? 0) ms "
          + "(\(killWindowSamples ?? 0) samples inside it)")
    }
    print(verdict)
  }
}

/// One simulated device: a replica typing into its space's shared note.
final class BenchDevice: Sendable {
  struct State {
    var replica: Replica
    var session = SyncSession()
    var acknowledgedOwn = CausalContext()
    /// Keystrokes typed.
    var typed = 0
  }

  let id: ReplicaID
  let space: String
  let token: String
  let metrics: BenchMetrics
  let state: Mutex<State>
  /// The node it connects to first (an index into the bench's nodes).
  let home: Int
  static let note = EntityKey(type: "note", id: "shared")
  /// After a refusal: doubling from 50 ms up to 2 s, jittered.
  static let refusalBackoff = RelayBackoff(base: .milliseconds(50), maximum: .seconds(2))

  init(id: ReplicaID, space: String, token: String, metrics: BenchMetrics, home: Int = 0) {
    self.id = id
    self.space = space
    self.token = token
    self.metrics = metrics
    self.home = home
    state = Mutex(State(replica: Replica(id: id)))
  }

  private func connect(
    base: String, logger: Logger,
    _ body:
      @escaping @Sendable (WebSocketInboundStream, WebSocketOutboundWriter) async throws -> Void
  ) async throws -> RelayCloseReason? {
    var headers = HTTPFields()
    headers[.authorization] = "Bearer \(token)"
    let close = try await WebSocketClient.connect(
      url: "\(base)/v1/spaces/\(space)/sync",
      configuration: .init(maxFrameSize: 1 << 24, additionalHeaders: headers), logger: logger
    ) { inbound, outbound, _ in try await body(inbound, outbound) }
    return close.flatMap(RelayCloseReason.init(closeFrame:))
  }

  /// Handles one message from the relay and returns the reply the session owes, if any.
  private func receive(_ bytes: [UInt8]) throws -> [UInt8]? {
    if RelayAcknowledgement.isRelayEnvelope(bytes[...]) {
      let acknowledgement = try RelayAcknowledgement(decoding: bytes[...])
      metrics.received(bytes.count, acknowledgement: true)
      state.withLock { state in
        var own = CausalContext()
        own.insert(replica: id, counters: acknowledgement.durable.counters(of: id))
        state.acknowledgedOwn.formUnion(own)
      }
      return nil
    }
    metrics.received(bytes.count, acknowledgement: false)
    let (message, reply) = try state.withLock { state in
      let message = try state.session.decode(bytes[...])
      state.session.receive(message, into: &state.replica)
      return (message, state.session.makeEncodedMessage(for: state.replica))
    }
    if message.context == nil, let delta = message.delta {
      metrics.fannedOut(delta.context, to: id)
    }
    return reply
  }

  /// Types until `end` through `bases[home]`, then returns whether the device was
  /// connected at the end: its last connection ended cleanly, or was answered and dropped
  /// only after the device had typed to the end. When its connection drops first (its node was killed), it connects to the
  /// next node, as a load balancer would send it, handshakes from its replica and types
  /// on; keystrokes are paced by the clock, so none is made while it is away. When the
  /// relay closes it with a retryable reason (a refusal under load, a slow consumer), it
  /// backs off (exponentially, jittered) and comes back to the same node; with one that
  /// retrying cannot fix, it stops.
  func run(
    bases: [String], interval: Duration, until end: ContinuousClock.Instant, logger: Logger
  ) async -> Bool {
    var connected = false
    var node = home % bases.count
    var attempt = 0
    let typing = Typing(first: ContinuousClock.now + interval * Double.random(in: 0...1))
    while true {
      var closedWith: RelayCloseReason?
      let answered = Mutex(false)
      do {
        closedWith = try await connect(base: bases[node], logger: logger) { inbound, outbound in
          let hello = self.state.withLock { state in
            state.session.reset()
            return state.session.makeEncodedMessage(for: state.replica)
          }
          if let hello { try await outbound.write(.binary(ByteBuffer(bytes: hello))) }
          try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
              while let due = typing.next.withLock({ $0 < end ? $0 : nil }) {
                try await Task.sleep(until: due)
                typing.next.withLock { $0 = max($0 + interval, ContinuousClock.now) }
                let bytes = self.type()
                try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
              }
              // Room for the last acknowledgements and pushes, then a clean close.
              try await Task.sleep(for: .seconds(2))
              typing.finished.withLock { $0 = true }
              try await outbound.close(.normalClosure, reason: nil)
            }
            for try await message in inbound.messages(maxSize: 1 << 24) {
              guard case .binary(let buffer) = message else { continue }
              answered.withLock { $0 = true }
              if let reply = try self.receive([UInt8](buffer: buffer)) {
                try await outbound.write(.binary(ByteBuffer(bytes: reply)))
              }
            }
            group.cancelAll()
          }
        }
        connected = true
      } catch {
        // Dropped: still connected only if the relay had answered and the device had typed
        // to the end (its close handshake failed); dropped mid-run (its node was killed),
        // it is connected again once another connection is.
        connected = answered.withLock { $0 } && typing.finished.withLock { $0 }
        logger.debug("device \(id) lost its connection: \(error)")
      }
      // A device not connected again yet keeps trying a little past the others (bounded:
      // the run waits for the devices until 10 s after typing ends), so a reconnection
      // slowed by load is waited for rather than counted as missing.
      let stopAt = end + .seconds(connected ? 2 : 5)
      if typing.finished.withLock({ $0 }) || ContinuousClock.now >= stopAt { break }
      if Task.isCancelled { break }
      metrics.reconnected(closedWith: closedWith)
      if let closedWith, !closedWith.isRetryable { break }
      if closedWith == nil { node = (node + 1) % bases.count }
      attempt = answered.withLock { $0 } ? 0 : attempt + 1
      // 20 ms after a dropped connection, as before; doubling from 50 ms up to 2 s,
      // jittered, after a refusal, so refused devices neither hammer nor return in step.
      let delay: Duration =
        closedWith == nil && attempt == 0
        ? .milliseconds(20) : Self.refusalBackoff.delay(attempt: attempt)
      try? await Task.sleep(for: delay)
    }
    return connected
  }

  /// When the next keystroke is due, and whether the device typed to the end and closed.
  private final class Typing: Sendable {
    let next: Mutex<ContinuousClock.Instant>
    let finished = Mutex(false)
    init(first: ContinuousClock.Instant) { next = Mutex(first) }
  }

  /// One keystroke: a transaction on the replica, pushed as a session frame.
  private func type() -> [UInt8] {
    let (bytes, dot) = state.withLock { state in
      let commit = state.replica.transact { tx in
        tx.insertText("x", at: Int.random(in: 0...64), in: "body", of: Self.note)
      }
      let counter = commit.delta.context.counters(of: id).maximum
      state.typed += 1
      return (
        state.session.pushEncoded(commit, from: state.replica), Dot(replica: id, counter: counter)
      )
    }
    metrics.pushed(dot, bytes: bytes.count)
    return bytes
  }

  /// One handshake round after the run, so a device that missed a push catches up.
  func settle(base: String, logger: Logger) async {
    _ = try? await connect(base: base, logger: logger) { inbound, outbound in
      let hello = self.state.withLock { state in
        state.session.reset()
        return state.session.makeEncodedMessage(for: state.replica)
      }
      if let hello { try await outbound.write(.binary(ByteBuffer(bytes: hello))) }
      for try await message in inbound.messages(maxSize: 1 << 24) {
        guard case .binary(let buffer) = message else { continue }
        let bytes = [UInt8](buffer: buffer)
        let reply = try self.receive(bytes)
        if let reply { try await outbound.write(.binary(ByteBuffer(bytes: reply))) }
        if !RelayAcknowledgement.isRelayEnvelope(bytes[...]), reply == nil { break }
      }
      try await outbound.close(.normalClosure, reason: nil)
    }
  }

  /// The space's context as the relay has it, asked with a fresh read token.
  static func relayContext(
    base: String, space: String, authority: RelayTokenAuthority, logger: Logger
  ) async -> CausalContext? {
    guard
      let token = try? await authority.sign(
        RelayTokenClaims(
          space: space, scope: .read, expiry: Date(timeIntervalSinceNow: 600), replicas: []))
    else { return nil }
    let found = Mutex<CausalContext?>(nil)
    var headers = HTTPFields()
    headers[.authorization] = "Bearer \(token)"
    _ = try? await WebSocketClient.connect(
      url: "\(base)/v1/spaces/\(space)/sync",
      configuration: .init(maxFrameSize: 1 << 24, additionalHeaders: headers), logger: logger
    ) { inbound, outbound, _ in
      let hello = SyncMessage(context: CausalContext(), delta: nil).encoded()
      try await outbound.write(.binary(ByteBuffer(bytes: hello)))
      for try await message in inbound.messages(maxSize: 1 << 24) {
        guard case .binary(let buffer) = message,
          let decoded = try? SyncMessage(decoding: [UInt8](buffer: buffer)),
          let context = decoded.context
        else { continue }
        found.withLock { $0 = context }
        break
      }
      try await outbound.close(.normalClosure, reason: nil)
    }
    return found.withLock { $0 }
  }
}
