import Converge
import ConvergeStore

/// Where a relay client stands, as ``RelayClient/statuses`` reports it.
public enum RelayClientStatus: Sendable, Equatable {
  /// Connecting, or waiting to reconnect.
  case offline
  /// The socket is open; the relay has not answered the handshake yet.
  case connected
  /// The handshake has completed and some events of the owner are not acknowledged by
  /// the relay yet (typed edits waiting for the group commit count too).
  case syncing
  /// The relay has made every event of the owner durable and its answer has arrived.
  case upToDate
  /// The relay refused the connection for a reason neither retrying nor a new token can
  /// fix; the client stopped.
  case refused(RelayCloseReason)
}

/// The client's side of one connection to a relay space: what to send when the socket
/// opens, what to do with each message the relay sends, and which live pushes to send
/// when the owner has made edits durable. It holds no replica: every event goes into and
/// comes out of a ``DeviceReplica``, and every acknowledgement of the relay is recorded
/// in that owner under one peer name (``peer``), so the owner's pending badge counts
/// what the relay lacks and the next connection resumes from there.
///
/// It knows nothing of sockets, so a test drives it with bytes. ``RelayClient`` runs one
/// per connection over a ``RelaySocket``:
///
/// ```swift
/// var session = RelaySession()
/// for bytes in session.open(owner) { try await socket.send(bytes) }
///
/// // for each binary message from the relay:
/// for bytes in try session.receive(message, into: owner) { try await socket.send(bytes) }
///
/// // whenever the owner made edits durable (its `onDurable`, or a timer):
/// for bytes in session.outgoing(owner) { try await socket.send(bytes) }
/// ```
///
/// **The protocol.** The client opens with the owner's context (its durable events); the
/// relay answers with the space's context, which is durable there (recorded as the
/// relay's acknowledgement), and the events the client lacks; the client answers with
/// the durable events the relay's context lacks, so a reconnecting device sends only
/// what the relay has not acknowledged. After that, edits go out as live-push frames of
/// the session's stream once the owner's group commit has synced them (a typed
/// character is never sent before it is durable, and typing costs no extra sync), and
/// the relay acknowledges each push with a ``RelayAcknowledgement`` once it is durable
/// there.
///
/// **Isolation.** A value used in the owner's isolation, like the owner itself.
public struct RelaySession {
  /// The peer name the owner records the relay's acknowledgements under by default.
  public static let defaultPeer = "relay"

  /// The peer name the owner records the relay's acknowledgements under.
  public let peer: String
  /// The sync session with the relay; reset by ``open(_:)``.
  private var sync: SyncSession
  /// Whether the relay has answered this connection's handshake.
  public private(set) var isAnswered = false
  /// Calls of ``outgoing(_:)`` in a row that found durable events beside an unsynced
  /// edit and waited for the group commit rather than sync for them.
  private var deferredPushes = 0
  /// How many calls of ``outgoing(_:)`` in a row wait for the group commit before one
  /// syncs the unsynced edit to send what waits beside it (with ``RelayClient``'s 50 ms
  /// tick, about 200 ms).
  static let pushPatience = 4
  /// The relay's latest stable cut this device does not hold the covering context of
  /// yet: forgotten with once it does (see ``RelayStableCut``).
  private var pendingCut: RelayStableCut?
  /// Whether the device's context may have grown (it received or pushed events) since
  /// its last report to the relay.
  private var owesSeenReport = false
  /// The context to report next and the owner's commit count when it was taken: sent
  /// once the store has made that many commits durable.
  private var reportCandidate: (seen: CausalContext, commit: Int)?
  /// The context last reported on this connection.
  private var lastReported = CausalContext()
  /// Calls of ``outgoing(_:)`` since the last report.
  private var callsSinceReport = 0
  /// How many calls of ``outgoing(_:)`` at least separate two reports of what the device
  /// has seen (``RelaySeenReport``): with ``RelayClient``'s 50 ms tick, about a second.
  public static let seenReportPatience = 20

  /// A session recording the relay's acknowledgements in the owner under `peer`.
  public init(peer: String = RelaySession.defaultPeer) {
    self.peer = peer
    sync = SyncSession()
  }

  /// A session whose live-push streams take their ids from `streamSeed` (a test or a
  /// simulation that wants the same bytes on every run).
  public init(peer: String = RelaySession.defaultPeer, streamSeed: UInt64) {
    self.peer = peer
    sync = SyncSession(streamSeed: streamSeed)
  }

  /// Where the connection stands for a status display: ``RelayClientStatus/connected``
  /// until the relay answers, then syncing or up to date by the owner's acknowledged
  /// context of ``peer``.
  ///
  /// - Complexity: O(r + g) to compare contexts.
  public func status(of owner: DeviceReplica) -> RelayClientStatus {
    guard isAnswered else { return .connected }
    return owner.acknowledgedContext(of: peer).includes(owner.replica.context)
      ? .upToDate : .syncing
  }

  /// Starts a connection: forgets what an earlier one knew of the relay and returns the
  /// opening handshake, which states the owner's durable context and carries no events.
  public mutating func open(_ owner: DeviceReplica) -> [[UInt8]] {
    sync.reset()
    isAnswered = false
    deferredPushes = 0
    // The handshake states the device's context: the relay needs no report of it.
    owesSeenReport = false
    reportCandidate = nil
    lastReported = CausalContext()
    callsSinceReport = 0
    return handshake(owner)
  }

  /// Handles one binary message from the relay and returns the messages to send back.
  ///
  /// Everything the relay sends is durable there: an acknowledgement's context, the
  /// context its handshake states, and the deltas it fans out; the owner records each
  /// as the relay's acknowledgement (the stated context saved at once, the others in
  /// memory, saved with the next stated context or at the owner's close). A frame that does not continue the relay's stream
  /// (one was lost) is answered with a handshake asking for a new stream.
  ///
  /// A ``RelayStableCut`` makes the owner forget the deleted entities stable in it
  /// (``DeviceReplica/forgetDeleted(stable:)``) once it holds the cut's covering context;
  /// until then the cut waits, and is taken up after a later message brings what lacked.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for bytes that are not a relay message (the
  ///   owner is unchanged; close the connection), or a ``StoreError`` from the owner (its
  ///   delta is integrated all the same).
  public mutating func receive(_ bytes: [UInt8], into owner: DeviceReplica) throws -> [[UInt8]] {
    if RelayAcknowledgement.envelopeKind(bytes[...]) == RelayStableCut.kind {
      let cut = try RelayStableCut(decoding: bytes[...])
      // Cuts only grow: a later one replaces an earlier one still waiting.
      pendingCut = cut
      forgetIfCovered(owner)
      return []
    }
    if RelayAcknowledgement.isRelayEnvelope(bytes[...]) {
      let acknowledgement = try RelayAcknowledgement(decoding: bytes[...])
      // Noted in memory (the badge follows) and saved with the next handshake's stated
      // context or at close: a save per push would cost two fsyncs per group commit.
      try owner.noteAcknowledgement(acknowledgement.durable, from: peer)
      return outgoing(owner)
    }
    let message: SyncMessage
    do {
      message = try sync.decode(bytes[...])
    } catch ConvergeDecodingError.frameOutOfSequence {
      // The session now owes the relay a handshake that asks for a new stream.
      return handshake(owner)
    }
    try owner.receive(message, through: &sync, from: peer)
    if message.context != nil { isAnswered = true }
    if message.delta != nil {
      owesSeenReport = true
      forgetIfCovered(owner)
    }
    return handshake(owner) + outgoing(owner)
  }

  /// Forgets with the waiting cut once the owner holds its covering context.
  private mutating func forgetIfCovered(_ owner: DeviceReplica) {
    guard let cut = pendingCut, owner.replica.context.includes(cut.covering) else { return }
    pendingCut = nil
    _ = owner.forgetDeleted(stable: cut.stable)
  }

  /// A report of the owner's context for the relay (``RelaySeenReport``) when it is due:
  /// the context grew since the last one, ``seenReportPatience`` calls have passed, and
  /// the store has made durable every commit the context holds.
  private mutating func seenReport(_ owner: DeviceReplica) -> [[UInt8]] {
    callsSinceReport += 1
    if reportCandidate == nil {
      guard owesSeenReport, callsSinceReport >= Self.seenReportPatience else { return [] }
      owesSeenReport = false
      let seen = owner.replica.context
      guard !lastReported.includes(seen) else { return [] }
      reportCandidate = (seen, owner.store.committed)
    }
    guard let candidate = reportCandidate, owner.store.durableCommits >= candidate.commit else {
      return []
    }
    reportCandidate = nil
    lastReported = candidate.seen
    callsSinceReport = 0
    return [RelaySeenReport(seen: candidate.seen).encoded()]
  }

  /// The live pushes of the owner's durable events the relay lacks, or a handshake
  /// message when the session owes one; nothing before the relay has answered. Call it
  /// whenever the owner made commits durable (``DeviceReplica/onDurable``) and from a
  /// timer, which also takes in the owner's finished background syncs.
  ///
  /// Typing costs no sync of its own: durable events that would go out beside a typed
  /// character not yet synced (its entity's presence would name it) wait for a call that
  /// finds every edit synced, the window after each group commit; only after
  /// a few calls in a row without one does a call sync the edit first.
  ///
  /// - Complexity: O(r + g) when the relay lacks nothing durable, otherwise O(e + d) for
  ///   e entities and d events sent.
  public mutating func outgoing(_ owner: DeviceReplica) -> [[UInt8]] {
    guard isAnswered else { return [] }
    if sync.owesMessage { return handshake(owner) }
    return pushes(owner) + seenReport(owner)
  }

  /// ``outgoing(_:)``'s live pushes.
  private mutating func pushes(_ owner: DeviceReplica) -> [[UInt8]] {
    guard let known = sync.peerContext else { return [] }
    // Durable events beside an unsynced edit can go only after a sync: wait a few calls
    // for the group commit (typing leaves a window after each sync) before forcing one.
    let forcing = deferredPushes >= Self.pushPatience
    guard let delta = owner.durableDelta(since: known, syncing: forcing) else {
      deferredPushes += 1
      return []
    }
    deferredPushes = 0
    guard !delta.isEmpty else { return [] }
    owesSeenReport = true
    return [sync.pushEncoded(delta, from: owner.replica)]
  }

  /// Live pushes of the owner's commits its store just made durable: what
  /// ``DeviceReplica/onDurable`` hands over, each commit's own delta, pushed as it is.
  ///
  /// A commit's delta names no later event, so it may go while later keystrokes wait
  /// for their sync; this is how typing reaches the relay one group commit at a time
  /// without a sync of its own. Deltas the relay has (sent with the handshake) and
  /// deltas holding other replicas' events (received from elsewhere, which the relay's
  /// token check would refuse from this device unless it holds them) are left to
  /// ``outgoing(_:)``; so is everything before the relay has answered.
  ///
  /// - Complexity: O(d) to decode and encode d bytes of deltas, plus O(r + g) each to
  ///   compare contexts.
  public mutating func durable(_ deltas: [[UInt8]], of owner: DeviceReplica) -> [[UInt8]] {
    guard isAnswered, !sync.owesMessage else { return [] }
    let id = owner.id
    var frames: [[UInt8]] = []
    for bytes in deltas {
      guard let known = sync.peerContext, let delta = try? DocumentDelta(decoding: bytes),
        !known.includes(delta.context)
      else { continue }
      var own = CausalContext()
      own.insert(replica: id, counters: delta.context.counters(of: id))
      guard own == delta.context else { continue }
      frames.append(sync.pushEncoded(delta, from: owner.replica))
    }
    if !frames.isEmpty { owesSeenReport = true }
    return frames
  }

  /// The session's next handshake message, if it has one.
  private mutating func handshake(_ owner: DeviceReplica) -> [[UInt8]] {
    owner.makeMessage(for: &sync).map { [$0.encoded()] } ?? []
  }
}
