import Converge
import ConvergeStore

/// A device's connection to a relay space, attached to the device's ``DeviceReplica``:
/// it connects, handshakes from what the owner holds, sends the owner's durable edits,
/// hands what arrives to the owner, and reconnects after a failure with exponential
/// backoff and jitter (and after a retirement, once it rejoined), until its task is
/// cancelled or the relay refuses it for good.
///
/// It keeps no replica and saves nothing: the owner holds the data, its durability and
/// what the relay acknowledged (under ``peer``), so the pending badge is the owner's one
/// number and a relaunched app resumes from the owner's acknowledged context.
///
/// ```swift
/// @MainActor final class NotesModel {
///   let notes: DeviceReplica
///   let relay: RelayClient
///
///   init(notes: DeviceReplica, relay: RelayClient) {
///     self.notes = notes
///     self.relay = relay
///   }
///
///   func sync() async { await relay.run(owner: notes) }  // runs on the main actor
/// }
/// ```
///
/// **Tokens.** `token` is called with the owner's replica id (a token names the ids it
/// may write as) at every connection that needs a new token: the first,
/// after the relay closed with ``RelayCloseReason/tokenExpired``, after the owner took
/// a fresh replica id (``DeviceReplica/Event/identityChanged(_:)``: a restored backup),
/// whose edits the old token does not grant, and once per fresh id after the relay refused
/// a token with ``RelayCloseReason/replicaNotGranted`` (a token the app kept from before
/// the store opened a copied or restored folder). The client then reconnects with the new
/// token; edits made meanwhile wait in the owner.
///
/// **Retirement.** A relay closing with ``RelayCloseReason/retired`` (the device was
/// silent past the space's horizon) makes the client rejoin: it takes a fresh id from the
/// owner's store, asks `token` for that id, fetches the space's current state with a
/// connection whose handshake states an empty context (and the ``RelayStableCut`` the
/// relay sends with its answer, if any), calls
/// ``DeviceReplica/rejoin(onto:stable:heldBy:as:)`` and reconnects as the fresh id, which
/// sends the re-applied edits as usual. Statuses meanwhile are `syncing` and `offline`;
/// a failed fetch is retried with backoff under the same fresh id.
///
/// **Isolation.** ``run(owner:isolation:)`` uses the owner in the caller's isolation (the
/// main actor in an app), as the owner requires; the socket's reads and writes happen
/// off it, in the ``RelaySocket``. While it runs it sets the owner's
/// ``DeviceReplica/onDurable`` (calling the one set before) and restores it when it
/// returns. The client itself is `Sendable`: its ``statuses`` can be read from any task.
public final class RelayClient: Sendable {
  /// Reconnection delays (``RelayBackoff``: exponential, bounded, jittered).
  public typealias Backoff = RelayBackoff

  /// The peer name under which the owner records the relay's acknowledgements.
  public let peer: String
  private let connector: any RelaySocketConnector
  private let token: @Sendable (ReplicaID) async throws -> String
  private let backoff: Backoff
  private let tick: Duration
  private let statusContinuation: AsyncStream<RelayClientStatus>.Continuation
  /// Every status change of ``run(owner:isolation:)``, starting with `offline`; it
  /// finishes when the relay refuses the client.
  public let statuses: AsyncStream<RelayClientStatus>

  /// A client that opens its sockets with `connector`, authorized by what `token`
  /// returns for the owner's replica id.
  ///
  /// - Parameters:
  ///   - peer: the owner's name for the relay (see ``DeviceReplica/acknowledgedContext(of:)``).
  ///   - tick: how often a connected client lets the owner take in finished background
  ///     syncs and sends what they made durable (edits typed just before the user
  ///     stopped go out within about one tick of their group commit).
  public init(
    connector: any RelaySocketConnector,
    token: @escaping @Sendable (ReplicaID) async throws -> String,
    peer: String = RelaySession.defaultPeer, backoff: Backoff = Backoff(),
    tick: Duration = .milliseconds(50)
  ) {
    self.connector = connector
    self.token = token
    self.peer = peer
    self.backoff = backoff
    self.tick = tick
    (statuses, statusContinuation) = AsyncStream<RelayClientStatus>.makeStream()
  }

  /// How one connection ended.
  private enum Ending {
    /// The socket could not open, failed, or sent bytes that are not a relay message.
    case failed
    /// The relay closed the socket, for `reason` if it gave one of its own.
    case closed(RelayCloseReason?)
    /// The owner took a fresh replica id: the token names the old one.
    case identityChanged
    /// The task was cancelled.
    case cancelled
  }

  /// What wakes a connected client.
  private enum Wakeup: Sendable {
    case socket(RelaySocketEvent)
    case durable([[UInt8]])
    case tick
  }

  /// Connects and keeps the connection up until the task is cancelled or the relay
  /// refuses the client for a reason a new token cannot fix.
  ///
  /// Run one at a time per owner; the owner is used in `isolation` only.
  public func run(owner: DeviceReplica, isolation: isolated (any Actor)? = #isolation) async {
    var attempt = 0
    var lastStatus: RelayClientStatus?
    func report(_ status: RelayClientStatus) {
      guard status != lastStatus else { return }
      lastStatus = status
      statusContinuation.yield(status)
    }
    var currentToken: String?
    // The id for which a `replicaNotGranted` refusal already asked for a new token.
    var regrantedFor: ReplicaID?
    // The fresh id a rejoin took a token for, until the rejoin is done.
    var rejoinID: ReplicaID?
    // Whether a rejoin's snapshot failed: its edits go out only once a flush wrote them.
    var mustFlush = false
    report(.offline)
    while !Task.isCancelled {
      if mustFlush {
        if (try? owner.flush()) == nil {
          report(.offline)
          try? await Task.sleep(for: backoff.delay(attempt: attempt))
          attempt += 1
          continue
        }
        mustFlush = false
      }
      if currentToken == nil {
        currentToken = try? await token(owner.id)
      }
      var ending = Ending.failed
      var answered = false
      if let currentToken {
        (ending, answered) = await connection(
          owner: owner, token: currentToken, report: report)
      }
      if answered { attempt = 0 }
      switch ending {
      case .cancelled:
        report(.offline)
        return
      case .identityChanged:
        currentToken = nil
        report(.offline)
        continue
      case .closed(.tokenExpired):
        currentToken = nil
      case .closed(.retired):
        // Retired (silent past the space's horizon): fetch the current state under a
        // fresh id, re-apply this device's edits on it, and reconnect as that id.
        report(.syncing)
        let fresh = rejoinID ?? owner.store.takeFreshID()
        rejoinID = fresh
        if let freshToken = try? await token(fresh),
          let (state, stable) = await bootstrap(token: freshToken, id: fresh)
        {
          do {
            try owner.rejoin(onto: state, stable: stable, heldBy: peer, as: fresh)
          } catch {
            // Reported in the owner's `lastError`; the store holds the rebased state
            // unless the failure came first, and its next flush writes it.
            mustFlush = owner.id == fresh
          }
          if owner.id == fresh {
            rejoinID = nil
            currentToken = freshToken
            if !mustFlush { continue }
          }
        }
      case .closed(let reason?) where !reason.isRetryable:
        // A refusal of a token for the old id after a fresh one (taken while running, or
        // when the store opened a copied or restored folder): the provider is asked once
        // more, for the new id.
        if reason == .replicaNotGranted, regrantedFor != owner.id,
          owner.identityChanges.contains(where: { $0 != .firstLaunch })
        {
          regrantedFor = owner.id
          currentToken = nil
        } else {
          report(.refused(reason))
          statusContinuation.finish()
          return
        }
      case .closed, .failed:
        break
      }
      report(.offline)
      try? await Task.sleep(for: backoff.delay(attempt: attempt))
      attempt += 1
    }
    report(.offline)
  }

  /// The wake-ups of one connection: each event of its socket (then a close when their
  /// stream ends) and a tick every ``tick``; `stop` ends both and finishes the stream.
  private func wakeups(from events: AsyncStream<RelaySocketEvent>) -> (
    AsyncStream<Wakeup>, AsyncStream<Wakeup>.Continuation, () -> Void
  ) {
    let (wakeups, wake) = AsyncStream<Wakeup>.makeStream()
    let reader = Task {
      for await event in events { wake.yield(.socket(event)) }
      wake.yield(.socket(.closed(code: nil)))
    }
    let tick = tick
    let ticker = Task {
      while !Task.isCancelled {
        try? await Task.sleep(for: tick)
        wake.yield(.tick)
      }
    }
    return (
      wakeups, wake,
      {
        reader.cancel()
        ticker.cancel()
        wake.finish()
      }
    )
  }

  /// One connection, from opening its socket to its end; also whether the relay
  /// answered its handshake.
  private func connection(
    owner: DeviceReplica, token: String, report: (RelayClientStatus) -> Void,
    isolation: isolated (any Actor)? = #isolation
  ) async -> (Ending, Bool) {
    guard let (socket, events) = try? await connector.connect(token: token) else {
      return (Task.isCancelled ? .cancelled : .failed, false)
    }
    let (wakeups, wake, stop) = wakeups(from: events)
    let previous = owner.onDurable
    owner.onDurable = { deltas in
      previous?(deltas)
      wake.yield(.durable(deltas))
    }
    defer {
      owner.onDurable = previous
      stop()
    }
    let id = owner.id
    var session = RelaySession(peer: peer)
    var ending = Ending.cancelled
    if !(await send(session.open(owner), to: socket)) {
      await socket.close()
      return (.failed, false)
    }
    report(.connected)
    for await wakeup in wakeups {
      var outgoing: [[UInt8]] = []
      switch wakeup {
      case .socket(.message(let bytes)):
        do {
          outgoing = try session.receive(bytes, into: owner)
        } catch {
          // Bytes that are not a relay message, or a failure of the owner's store
          // (reported in its `lastError`): the next connection starts over from what the
          // owner holds.
          ending = .failed
        }
      case .socket(.closed(let code)):
        return (.closed(code.flatMap(RelayCloseReason.init(rawValue:))), session.isAnswered)
      case .durable(let deltas):
        outgoing = session.durable(deltas, of: owner) + session.outgoing(owner)
      case .tick:
        outgoing = session.outgoing(owner)
      }
      if case .failed = ending { break }
      if !(await send(outgoing, to: socket)) {
        ending = .failed
        break
      }
      if owner.id != id {
        ending = .identityChanged
        break
      }
      report(session.status(of: owner))
    }
    await socket.close()
    return (ending, session.isAnswered)
  }

  /// Fetches the space's current state for a rejoin: a connection under `token`
  /// (granting the fresh `id`) whose handshake states an empty context into an empty
  /// document, so the relay answers with every event it holds, followed by its stable
  /// cut if it has one. The cut is awaited until the next tick after the answer (the
  /// relay sends it with the answer); without one, the state is taken as the relay
  /// already forgot it. `nil` if the socket failed or closed before the answer.
  private func bootstrap(token: String, id: ReplicaID) async -> (Document, CausalContext)? {
    guard let (socket, events) = try? await connector.connect(token: token) else { return nil }
    let (wakeups, _, stop) = wakeups(from: events)
    defer {
      stop()
    }
    var sync = SyncSession()
    var state = Replica(document: Document(), id: id)
    var stable = CausalContext()
    var answered = false
    guard let opening = sync.makeMessage(for: state),
      await send([opening.encoded()], to: socket)
    else {
      await socket.close()
      return nil
    }
    loop: for await wakeup in wakeups {
      switch wakeup {
      case .socket(.message(let bytes)):
        if RelayAcknowledgement.envelopeKind(bytes[...]) == RelayStableCut.kind {
          guard let cut = try? RelayStableCut(decoding: bytes[...]) else { break loop }
          stable = cut.stable
          if answered { break loop }
        } else if !RelayAcknowledgement.isRelayEnvelope(bytes[...]) {
          guard let message = try? sync.decode(bytes[...]) else { break loop }
          sync.receive(message, into: &state)
          if message.context != nil { answered = true }
        }
      case .socket(.closed):
        break loop
      case .tick:
        if answered { break loop }
      case .durable:
        break
      }
    }
    await socket.close()
    return answered ? (state.document, stable) : nil
  }

  /// Sends `messages` in order; `false` if the socket failed.
  private func send(_ messages: [[UInt8]], to socket: any RelaySocket) async -> Bool {
    for bytes in messages {
      do {
        try await socket.send(bytes)
      } catch {
        return false
      }
    }
    return true
  }
}
