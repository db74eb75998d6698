import ConvergeRelayClient
import Synchronization

/// The deadlines of every open socket of a relay, kept by one timer: a socket costs no
/// wake-up while it is idle.
///
/// A socket's deadline is the earlier of its token's expiry and the moment it has been
/// silent for the idle timeout; once it is closing, the end of its grace period to send
/// its close frame. Activity only writes the time it was heard (``ConnectionState``), so
/// a deadline moves later without touching the timer. The timer sleeps until the
/// earliest deadline it knows, then looks at every socket: those whose deadline passed
/// are acted on, the rest tell it when to wake next. A wake-up scans every socket, but
/// it happens only when a deadline may be due, and at most once per ``granularity``.
final class SocketDeadlines: Sendable {
  /// What the timer does with one socket.
  struct Socket: Sendable {
    let state: ConnectionState
    let expiry: ContinuousClock.Instant
    /// The socket's deadline passed while it was open: it is closing with this reason.
    let expired: @Sendable (RelayCloseReason) -> Void
    /// The socket was closing for longer than the grace period: abandon its writes.
    let stuck: @Sendable () -> Void
  }

  private struct State {
    var sockets: [UInt64: Socket] = [:]
    var wake: ContinuousClock.Instant?
    var sleeper: Task<Void, Never>?
  }

  private let state = Mutex(State())
  let idleTimeout: Duration
  let grace: Duration
  /// The shortest time between two scans: deadlines closer than this are met late by
  /// up to it.
  let granularity: Duration

  init(idleTimeout: Duration, grace: Duration, granularity: Duration = .milliseconds(100)) {
    self.idleTimeout = idleTimeout
    self.grace = grace
    self.granularity = granularity
  }

  /// Open sockets it keeps deadlines for.
  var count: Int { state.withLock { $0.sockets.count } }

  func add(_ id: UInt64, _ socket: Socket) {
    state.withLock { $0.sockets[id] = socket }
    wake(by: deadline(of: socket))
  }

  func remove(_ id: UInt64) {
    let sleeper = state.withLock { state -> Task<Void, Never>? in
      state.sockets[id] = nil
      guard state.sockets.isEmpty else { return nil }
      state.wake = nil
      defer { state.sleeper = nil }
      return state.sleeper
    }
    sleeper?.cancel()
  }

  /// A socket started closing: its grace period ends a deadline.
  func closing() {
    wake(by: .now + grace)
  }

  private func deadline(of socket: Socket) -> ContinuousClock.Instant {
    if let closedAt = socket.state.closedAt { return closedAt + grace }
    return min(socket.expiry, socket.state.lastHeard + idleTimeout)
  }

  /// Makes sure the timer wakes by `instant`.
  private func wake(by instant: ContinuousClock.Instant) {
    let replaced = state.withLock { state -> Task<Void, Never>? in
      if let wake = state.wake, wake <= instant { return nil }
      let previous = state.sleeper
      state.wake = instant
      state.sleeper = Task { [weak self] in
        try? await Task.sleep(until: instant)
        guard !Task.isCancelled else { return }
        self?.scan()
      }
      return previous
    }
    replaced?.cancel()
  }

  /// Acts on every socket whose deadline passed and sets the next wake-up.
  private func scan() {
    let now = ContinuousClock.now
    var expired: [(Socket, RelayCloseReason)] = []
    var stuck: [Socket] = []
    let next = state.withLock { state -> ContinuousClock.Instant? in
      state.wake = nil
      state.sleeper = nil
      var next: ContinuousClock.Instant?
      for (id, socket) in state.sockets {
        let due: ContinuousClock.Instant
        if let closedAt = socket.state.closedAt {
          guard now < closedAt + grace else {
            stuck.append(socket)
            state.sockets[id] = nil
            continue
          }
          due = closedAt + grace
        } else if now >= socket.expiry {
          expired.append((socket, .tokenExpired))
          due = now + grace
        } else if now - socket.state.lastHeard >= idleTimeout {
          expired.append((socket, .idleTimeout))
          due = now + grace
        } else {
          due = deadline(of: socket)
        }
        next = min(next ?? due, due)
      }
      return next
    }
    for (socket, reason) in expired { socket.expired(reason) }
    for socket in stuck { socket.stuck() }
    if let next { wake(by: max(next, now + granularity)) }
  }
}
