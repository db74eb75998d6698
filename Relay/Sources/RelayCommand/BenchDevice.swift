import Converge
import ConvergeRelay
import Foundation
import HTTPTypes
import Histogram
import HummingbirdWSClient
import Logging
import NIOCore
import RelayWire
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
            let micros =
              elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds
              / 1_000_000_000_000
            _ = counts.latency.record(UInt64(max(0, micros)))
          }
        }
      }
    }
  }

  func report(
    devices: [BenchDevice], connected: Int, seconds: Int, base: String,
    authority: RelayTokenAuthority, logger: Logger
  ) async -> BenchReport {
    // Let every space settle: one more handshake per device pulls anything missed. Each
    // is bounded, so a relay that never answers ends the bench (as not converged)
    // instead of hanging it.
    for device in devices {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await device.settle(base: base, logger: logger) }
        group.addTask { try? await Task.sleep(for: .seconds(10)) }
        await group.next()
        group.cancelAll()
      }
    }
    var converged = true
    var lost: UInt64 = 0
    let spaces = Dictionary(grouping: devices, by: \.space)
    for (space, members) in spaces {
      let documents = members.map { $0.state.withLock { $0.replica.document } }
      if documents.contains(where: { $0 != documents[0] }) { converged = false }
      // What the relay holds now, pulled by a fresh reader.
      let relayContext = await BenchDevice.relayContext(
        base: base, space: space, authority: authority, logger: logger)
      for member in members {
        let acknowledged = member.state.withLock { $0.acknowledgedOwn }
        lost += acknowledged.subtracting(relayContext ?? CausalContext()).eventCount
      }
    }
    let counts = self.counts.withLock { $0 }
    let elapsed = Double(seconds)
    return BenchReport(
      clients: devices.count, connected: connected, seconds: seconds,
      acceptedPerSecond: Double(counts.acknowledged) / elapsed,
      fannedOutPerSecond: Double(counts.fannedOut) / elapsed,
      latencySamples: counts.latency.totalCount,
      p50Milliseconds: Double(counts.latency.valueAtPercentile(50)) / 1000,
      p99Milliseconds: Double(counts.latency.valueAtPercentile(99)) / 1000,
      maxMilliseconds: Double(counts.latency.max) / 1000,
      bytesSent: counts.bytesSent, bytesReceived: counts.bytesReceived,
      converged: converged, lostAcknowledged: lost)
  }
}

struct BenchReport: Codable {
  var clients: Int
  var connected: Int
  var seconds: Int
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

  func printText() {
    print("clients \(connected)/\(clients) connected, \(seconds) s")
    print(
      "deltas accepted \(Int(acceptedPerSecond))/s, fan-out messages \(Int(fannedOutPerSecond))/s")
    print(
      "fan-out latency p50 \(p50Milliseconds) ms, p99 \(p99Milliseconds) ms, max \(maxMilliseconds) ms (\(latencySamples) samples)"
    )
    print("bytes sent \(bytesSent), received \(bytesReceived)")
    print("converged \(converged ? "yes" : "no"), lost acknowledged events \(lostAcknowledged)")
  }
}

/// One simulated device: a replica typing into its space's shared note.
final class BenchDevice: Sendable {
  struct State {
    var replica: Replica
    var session = SyncSession()
    var acknowledgedOwn = CausalContext()
  }

  let id: ReplicaID
  let space: String
  let token: String
  let metrics: BenchMetrics
  let state: Mutex<State>
  static let note = EntityKey(type: "note", id: "shared")

  init(id: ReplicaID, space: String, token: String, metrics: BenchMetrics) {
    self.id = id
    self.space = space
    self.token = token
    self.metrics = metrics
    state = Mutex(State(replica: Replica(id: id)))
  }

  private func connect(
    base: String, logger: Logger,
    _ body:
      @escaping @Sendable (WebSocketInboundStream, WebSocketOutboundWriter) async throws -> Void
  ) async throws {
    var headers = HTTPFields()
    headers[.authorization] = "Bearer \(token)"
    try await WebSocketClient.connect(
      url: "\(base)/v1/spaces/\(space)/sync",
      configuration: .init(maxFrameSize: 1 << 24, additionalHeaders: headers), logger: logger
    ) { inbound, outbound, _ in try await body(inbound, outbound) }
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

  /// Types until `end`, then returns whether the device connected at all.
  func run(base: String, interval: Duration, until end: ContinuousClock.Instant, logger: Logger)
    async -> Bool
  {
    do {
      try await connect(base: base, logger: logger) { inbound, outbound in
        let hello = self.state.withLock { $0.session.makeEncodedMessage(for: $0.replica) }
        if let hello { try await outbound.write(.binary(ByteBuffer(bytes: hello))) }
        try await withThrowingTaskGroup(of: Void.self) { group in
          group.addTask {
            var next = ContinuousClock.now + interval * Double.random(in: 0...1)
            while next < end {
              try await Task.sleep(until: next)
              next += interval
              let (bytes, dot) = self.state.withLock { state in
                let commit = state.replica.transact { tx in
                  tx.insertText("x", at: Int.random(in: 0...64), in: "body", of: Self.note)
                }
                let counter = commit.delta.context.counters(of: self.id).maximum
                return (
                  state.session.pushEncoded(commit, from: state.replica),
                  Dot(replica: self.id, counter: counter)
                )
              }
              self.metrics.pushed(dot, bytes: bytes.count)
              try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
            }
            // Room for the last acknowledgements and pushes, then a clean close.
            try await Task.sleep(for: .seconds(2))
            try await outbound.close(.normalClosure, reason: nil)
          }
          for try await message in inbound.messages(maxSize: 1 << 24) {
            guard case .binary(let buffer) = message else { continue }
            if let reply = try self.receive([UInt8](buffer: buffer)) {
              try await outbound.write(.binary(ByteBuffer(bytes: reply)))
            }
          }
          group.cancelAll()
        }
      }
      return true
    } catch {
      logger.error("device \(id) failed: \(error)")
      return false
    }
  }

  /// One handshake round after the run, so a device that missed a push catches up.
  func settle(base: String, logger: Logger) async {
    try? await connect(base: base, logger: logger) { inbound, outbound in
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
