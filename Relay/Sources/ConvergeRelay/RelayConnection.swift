import Converge
import ConvergeRelayClient
import Synchronization

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// What one socket's tasks (reader, writer) and the relay's ``SocketDeadlines`` share:
/// why it is closing, since when, and when it last heard from the client.
final class ConnectionState: Sendable {
  private struct Fields {
    var reason: RelayCloseReason?
    var closedAt: ContinuousClock.Instant?
    var lastHeard: ContinuousClock.Instant
  }

  private let storage: Mutex<Fields>

  init() {
    storage = Mutex(Fields(lastHeard: .now))
  }

  /// The first reason given wins; returns whether this one did.
  @discardableResult
  func close(_ reason: RelayCloseReason) -> Bool {
    storage.withLock {
      guard $0.reason == nil else { return false }
      $0.reason = reason
      $0.closedAt = .now
      return true
    }
  }

  var reason: RelayCloseReason? { storage.withLock { $0.reason } }

  /// When the socket started closing.
  var closedAt: ContinuousClock.Instant? { storage.withLock { $0.closedAt } }

  func heard() {
    storage.withLock { $0.lastHeard = .now }
  }

  var lastHeard: ContinuousClock.Instant { storage.withLock { $0.lastHeard } }
}

/// The bytes queued for every socket of a process, against one limit
/// (``RelayConfiguration/processQueueByteLimit``).
final class QueueBudget: Sendable {
  let limit: Int
  /// An atomic rather than a lock: every message fanned out to every socket takes from it
  /// and gives back, from the hub's and the writers' threads at once, and a contended lock
  /// there costs futex calls.
  private let used = Atomic<Int>(0)

  init(limit: Int) {
    self.limit = limit
  }

  /// Counts `count` more bytes; false, counting nothing, beyond the limit.
  func take(_ count: Int) -> Bool {
    var current = used.load(ordering: .relaxed)
    while true {
      guard count <= limit - current else { return false }
      let (exchanged, original) = used.compareExchange(
        expected: current, desired: current + count, ordering: .relaxed)
      if exchanged { return true }
      current = original
    }
  }

  func give(_ count: Int) {
    used.subtract(count, ordering: .relaxed)
  }

  /// Bytes queued now, over all sockets.
  var bytes: Int { used.load(ordering: .relaxed) }
}

/// One socket's outgoing messages, bounded in count and in bytes, and in bytes summed
/// over the process's sockets.
///
/// The bytes of a message count from when it is queued until the socket has written it,
/// so a client that does not read holds at most the budget: the message the writer is
/// stuck on included. An empty queue takes one message of any size (a handshake answer
/// can be larger than the budget), but never past the process's budget. Messages left
/// when the socket is gone (a writer abandoned after its grace period) leave the
/// process's budget with the outbox.
final class Outbox: Sendable {
  let messages: AsyncStream<[UInt8]>
  private let continuation: AsyncStream<[UInt8]>.Continuation
  private let queued = Mutex((count: 0, bytes: 0))
  private let countLimit: Int
  private let byteLimit: Int
  private let process: QueueBudget

  init(countLimit: Int, byteLimit: Int, process: QueueBudget) {
    (messages, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    self.countLimit = max(1, countLimit)
    self.byteLimit = byteLimit
    self.process = process
  }

  deinit {
    process.give(queued.withLock { $0.bytes })
  }

  /// Queues `bytes`; or, queuing nothing, why the socket must close: `slowConsumer` when
  /// its queue is full (or finished), `relayBusy` when the process's queues are.
  func send(_ bytes: [UInt8]) -> RelayCloseReason? {
    let refusal: RelayCloseReason? = queued.withLock { queued in
      guard
        queued.count == 0
          || (queued.count < countLimit && queued.bytes + bytes.count <= byteLimit)
      else { return .slowConsumer }
      guard process.take(bytes.count) else { return .relayBusy }
      queued.count += 1
      queued.bytes += bytes.count
      return nil
    }
    if let refusal { return refusal }
    if case .enqueued = continuation.yield(bytes) { return nil }
    written(bytes.count)
    return .slowConsumer
  }

  /// The writer is done with a message of `count` bytes.
  func written(_ count: Int) {
    queued.withLock {
      $0.count -= 1
      $0.bytes -= count
    }
    process.give(count)
  }

  /// Bytes queued and not written yet.
  var bytes: Int { queued.withLock { $0.bytes } }

  /// Takes no more messages; the writer ends after those queued.
  func finish() {
    continuation.finish()
  }
}

/// A token bucket: `rate` messages per second, bursts of up to `rate`.
struct RateLimiter {
  let rate: Double
  private var tokens: Double
  private var last: ContinuousClock.Instant

  init(perSecond rate: Int) {
    self.rate = Double(max(1, rate))
    tokens = self.rate
    last = .now
  }

  mutating func allow(at now: ContinuousClock.Instant = .now) -> Bool {
    let elapsed = now - last
    last = now
    let seconds =
      Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    tokens = min(rate, tokens + seconds * rate)
    guard tokens >= 1 else { return false }
    tokens -= 1
    return true
  }
}

/// The relay's side of one device's sync conversation in a space, whatever carries it.
///
/// Every message is decoded completely (``SyncSession/decode(_:)``) and checked against
/// the token before anything is committed; a delta is acknowledged only after the store
/// made it durable, and a handshake is answered from the replica as the store has it.
struct RelayPeer {
  let id = UInt64.random(in: 1 ... .max)
  let grant: RelayGrant
  let hub: SpaceHub
  /// Receives the space's context once a live push is durable, or the store's error.
  let acknowledge: @Sendable (Result<CausalContext, any Error>) -> Void
  var session = SyncSession()
  /// Whether the hub admitted the device (its first message).
  var isAdmitted = false
  /// What the device has seen, as far as this connection knows: its handshakes' contexts
  /// and its reports, plus ``pushed`` once a report comes.
  var seen = CausalContext()
  /// What the device pushed since its last report (held by the device, durably).
  var pushed = CausalContext()

  /// Handles one binary message and returns the messages to send back, or why the
  /// connection must close. Nothing is committed when a reason is returned, except
  /// for `serverError` or `storedDataUnreadable`, which the store raised.
  mutating func handle(_ bytes: ArraySlice<UInt8>) async -> Result<[[UInt8]], RelayCloseReason> {
    if RelayAcknowledgement.isRelayEnvelope(bytes) { return await handleEnvelope(bytes) }
    let message: SyncMessage
    do {
      message = try session.decode(bytes)
    } catch ConvergeDecodingError.frameOutOfSequence {
      // A lost or stale frame: the session owes a handshake asking for a new stream.
      return .success(answer(for: await hub.replica))
    } catch {
      return .failure(.malformedMessage)
    }
    // The device's first message is admitted (or refused as retired) before anything of
    // it is committed; a later handshake's context grows what it has seen.
    var cut: [[UInt8]] = []
    if !isAdmitted {
      do {
        switch try await hub.admit(id, grant: grant, context: message.context) {
        case .retired: return .failure(.retired)
        case .admitted(let current): cut = current.map { [$0.encoded()] } ?? []
        }
      } catch {
        return .failure(RelayCloseReason(refreshing: error))
      }
      isAdmitted = true
      seen = message.context ?? CausalContext()
    } else if let context = message.context {
      seen.formUnion(context)
    }
    if message.context == nil, let delta = message.delta { pushed.formUnion(delta.context) }
    switch await handleSync(message) {
    case .success(let replies): return .success(replies + cut)
    case .failure(let reason): return .failure(reason)
    }
  }

  /// A relay envelope from the device: only a ``RelaySeenReport`` is one a device sends.
  private mutating func handleEnvelope(_ bytes: ArraySlice<UInt8>) async -> Result<
    [[UInt8]], RelayCloseReason
  > {
    guard isAdmitted, RelayAcknowledgement.envelopeKind(bytes) == RelaySeenReport.kind,
      let report = try? RelaySeenReport(decoding: bytes)
    else { return .failure(.malformedMessage) }
    seen.formUnion(report.seen)
    seen.formUnion(pushed)
    pushed = CausalContext()
    do {
      try await hub.noteSeen(grant: grant, seen: seen)
    } catch {
      return .failure(RelayCloseReason(refreshing: error))
    }
    return .success([])
  }

  /// ``handle(_:)`` for a sync message of an admitted device.
  private mutating func handleSync(_ message: SyncMessage) async -> Result<
    [[UInt8]], RelayCloseReason
  > {
    var replies: [[UInt8]] = []
    // An answer computed from an overstated view of the space (a message of ours was
    // lost on the way) is not committed: the session states the space's real context
    // and the device answers that (see `SyncSession.canApply(_:to:)`). A live push
    // needs no check, and reads nothing from the hub for it.
    var applies = true
    if message.context != nil {
      applies = SyncSession.canApply(message, to: await hub.replica.context)
    }
    if let delta = message.delta, !delta.isEmpty, applies {
      if let refusal = await grant.refusal(toPush: delta, known: await hub.replica.document) {
        return .failure(refusal)
      }
      if message.context == nil {
        // A live push: the next message is read while it commits, and `acknowledge`
        // queues its acknowledgement once it is durable.
        let queued = await hub.submit(delta, from: id, then: acknowledge)
        return queued ? .success([]) : .failure(.spaceBusy)
      }
      // A handshake that carries a delta is answered after the delta is durable, so the
      // answer's context includes it and the device does not send it again.
      do {
        let durable = try await hub.commit(delta, from: id)
        replies.append(RelayAcknowledgement(durable: durable).encoded())
      } catch {
        return .failure(RelayCloseReason(refreshing: error))
      }
    }
    guard message.context != nil else { return .success(replies) }
    do {
      // Answer from what the store has now, which another process may have extended.
      try await hub.refresh()
    } catch {
      return .failure(RelayCloseReason(refreshing: error))
    }
    // The delta is in the space already: the session notes the message as it came,
    // delta included. A message that carried one is the device's answer (or an outbox
    // sent after its opening), answered only when the session owes it: for what the
    // space lacks of what the device stated, or a new stream. Answering it because the
    // space changed since the last answer would, under steady typing, make every answer
    // draw another (the device answers a context that differs from its own, and with
    // pushes in flight both ways the two never match): a handshake per round trip per
    // device, each committing the device's in-flight pushes again.
    let replica = await hub.replica
    session.noteReceived(message, appliedTo: replica)
    if message.delta != nil, !session.owesMessage { return .success(replies) }
    return .success(replies + answer(for: replica))
  }

  /// The session's next message for the space as `replica` holds it, if it has one.
  private mutating func answer(for replica: Replica) -> [[UInt8]] {
    session.makeEncodedMessage(for: replica).map { [$0] } ?? []
  }
}

/// The task that writes a socket's queue: started once the client has spoken, and
/// abandoned (cancelled, which ends a write stuck on a client that does not read) by the
/// deadline timer when the socket's grace period has passed.
final class SocketWriter: Sendable {
  private let body: @Sendable () async -> Void
  private let task = Mutex<(running: Task<Void, Never>?, abandoned: Bool)>((nil, false))

  init(_ body: @escaping @Sendable () async -> Void) {
    self.body = body
  }

  /// Starts the writer unless it runs already.
  func start() {
    task.withLock { task in
      guard task.running == nil else { return }
      let body = self.body
      let running = Task { await body() }
      if task.abandoned { running.cancel() }
      task.running = running
    }
  }

  func abandon() {
    let running = task.withLock { task in
      task.abandoned = true
      return task.running
    }
    running?.cancel()
  }

  /// Waits for the writer to end.
  func finished() async {
    await task.withLock { $0.running }?.value
  }
}
