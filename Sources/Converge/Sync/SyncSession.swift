/// One side of a sync conversation with one peer, over any channel that carries bytes
/// (a socket, an HTTP body, a file, a CloudKit record).
///
/// Both sides run the same loop: send what ``makeMessage(for:)`` returns, hand what
/// arrives to ``receive(_:into:)``, and stop when neither side has anything to say.
///
/// ```swift
/// var phoneSession = SyncSession(), laptopSession = SyncSession()
/// while true {
///   let a = phoneSession.makeMessage(for: phone)
///   if let a { laptopSession.receive(a, into: &laptop) }
///   let b = laptopSession.makeMessage(for: laptop)
///   if let b { phoneSession.receive(b, into: &phone) }
///   if a == nil && b == nil { break }
/// }
/// ```
///
/// The handshake: each message carries the sender's ``CausalContext``, the compact
/// summary of every event it has; the answer carries exactly the events that summary
/// lacks (``Replica/delta(since:)``). Two devices offline for a month therefore exchange
/// what changed in that month, not their history. After the handshake, each local
/// transaction's delta can be pushed at once as a live ``SyncMessage`` too.
///
/// Messages may be lost, duplicated or reordered: every message states what its sender
/// knows, so the next one repairs any loss, and applying a delta twice changes nothing.
/// A session that has gone quiet while messages were lost restarts with ``reset()``
/// (run it on reconnect or on a timer).
///
/// ## Live pushes as frames
///
/// ``pushEncoded(_:from:)`` sends a transaction as a *frame* of the session's stream
/// rather than a self-contained message: the two sides remember the replicas, entities
/// and fields named so far and predict counters, Lamport numbers, origins and backspace
/// targets, so a typed character costs about 9 bytes instead of about 50 (`FORMAT.md`,
/// "Session frames"). A frame only decodes in order: one that was lost, repeated or
/// reordered fails with ``ConvergeDecodingError/frameOutOfSequence`` and changes nothing;
/// the session then owes the peer a handshake, whose answer carries the missing events,
/// and a peer that receives a handshake restarts its stream. Frames therefore suit a
/// channel that usually delivers in order (a socket, a relay's per-device queue); the
/// plain ``push(_:from:)`` message suits one that does not.
public struct SyncSession: Sendable {
  /// What the peer is known to have: its last stated context joined with what we sent
  /// it since. `nil` until the peer has spoken.
  public private(set) var peerContext: CausalContext?
  /// The context we last told the peer about.
  private var contextSent: CausalContext?
  /// Whether the peer asked for an answer we have not sent yet.
  private var answerOwed = true
  /// Our live pushes to the peer, as a stream of frames (see ``pushEncoded(_:from:)``).
  var outgoing = SessionStream(streamID: .random(in: 1 ... .max))
  /// The peer's live pushes.
  var incoming = SessionStream()

  /// A session with a peer that has not spoken yet.
  public init() {}

  /// Forgets what the peer was believed to have, so the next message restarts the
  /// handshake. Use it after reconnecting, or when messages may have been lost.
  public mutating func reset() {
    self = SyncSession()
  }

  /// The next message for the peer, or `nil` when the peer is up to date and knows our
  /// state.
  ///
  /// - Complexity: O(e + d) for e entities and d events the peer lacks.
  public mutating func makeMessage(for replica: Replica) -> SyncMessage? {
    guard let peerContext else {
      // The peer has not spoken: open with our context and no data.
      guard contextSent != replica.context || answerOwed else { return nil }
      answerOwed = false
      contextSent = replica.context
      return SyncMessage(context: replica.context, delta: nil)
    }
    let delta = replica.delta(since: peerContext)
    guard !delta.isEmpty || contextSent != replica.context || answerOwed else { return nil }
    answerOwed = false
    contextSent = replica.context
    // Optimistic: assume the peer will integrate it. If it is lost, the peer's next
    // message states its real context and the missing part is sent again.
    self.peerContext = peerContext.union(delta.context)
    return SyncMessage(context: replica.context, delta: delta.isEmpty ? nil : delta)
  }

  /// A live push of one local transaction: a message with no context, just the delta,
  /// so a typed character costs only its own bytes. Send it at once to the peer.
  ///
  /// Call it right after the transaction, with the replica that made it.
  ///
  /// - Complexity: O(r + g) for r replicas and g gaps in the contexts.
  public mutating func push(_ commit: Commit, from replica: Replica) -> SyncMessage {
    let delta = commit.delta
    // If the peer knew everything we had before this transaction, it will know our
    // state once the push arrives, and no context-only message is needed.
    if let sent = contextSent, sent.union(delta.context) == replica.context {
      contextSent = replica.context
    }
    peerContext?.formUnion(delta.context)
    return SyncMessage(context: nil, delta: delta)
  }

  /// Notes that the peer's stream cannot be followed any more: the next message is a
  /// handshake, which makes the peer restart it.
  mutating func noteBrokenStream() {
    answerOwed = true
  }

  /// Starts a new stream of live pushes: the next frame carries no reference to earlier
  /// ones.
  mutating func restartOutgoingStream() {
    outgoing = SessionStream(streamID: .random(in: 1 ... .max))
  }

  /// Integrates a message from the peer and notes what the peer has.
  ///
  /// - Returns: what the message's delta changed in `replica`.
  /// - Complexity: O(d log n) for a delta with d dots, plus O(r + g) to compare
  ///   contexts.
  @discardableResult
  public mutating func receive(_ message: SyncMessage, into replica: inout Replica)
    -> DocumentChanges
  {
    var changes = DocumentChanges()
    if let delta = message.delta { changes = replica.apply(delta) }
    guard let stated = message.context else {
      // A live push: the peer now also has what it pushed, and knows we have it too if
      // it knew everything else we had.
      if let delta = message.delta {
        peerContext?.formUnion(delta.context)
        if let sent = contextSent, sent.union(delta.context) == replica.context {
          contextSent = replica.context
        }
      }
      return changes
    }
    peerContext = stated
    // Answer while the two sides' knowledge differs in either direction: the peer lacks
    // something of ours, or we lack something the peer must send once it knows our
    // context. Equal contexts need no answer, so two synced peers fall quiet.
    answerOwed = !stated.includes(replica.context) || !replica.context.includes(stated)
    return changes
  }
}

/// A message between two sync sessions: the sender's context and, optionally, the
/// events it believes the receiver lacks. A live push has a delta and no context.
public struct SyncMessage: Sendable, Equatable {
  /// Every event the sender had when it wrote the message; `nil` for a live push.
  public var context: CausalContext?
  /// The events the sender believes the receiver lacks.
  public var delta: DocumentDelta?

  /// A message stating `context` (`nil` for a live push) and carrying `delta`.
  public init(context: CausalContext?, delta: DocumentDelta?) {
    self.context = context
    self.delta = delta
  }
}
