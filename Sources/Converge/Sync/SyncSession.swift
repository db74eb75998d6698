/// One side of a sync conversation with one peer, over any channel that carries bytes
/// (a socket, an HTTP body, a file, a CloudKit record).
///
/// Both sides run the same loop: send what ``makeMessage(for:)`` returns, hand what
/// arrives to ``receive(_:into:)``, and stop when neither side has anything to say.
///
/// ```swift
/// var phoneSession = SyncSession()
/// var laptopSession = SyncSession()
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
/// "Session frames"). Frames decode in order: a frame that arrives a little early waits
/// for the ones before it and a repeated one is ignored, but a lost one breaks the
/// stream; the next frame then fails with ``ConvergeDecodingError/frameOutOfSequence``
/// and changes nothing, the session owes the peer a handshake that asks for a new
/// stream, and the answer carries the missing events. Frames therefore suit a channel
/// that delivers in order and rarely loses (a socket, a relay's per-device queue); the
/// plain ``push(_:from:)`` message suits one that does not.
public struct SyncSession: Sendable {
  /// What the peer is known to have: its last stated context joined with what we sent
  /// it since. `nil` until the peer has spoken.
  public private(set) var peerContext: CausalContext?
  /// The context we last told the peer about.
  private var contextSent: CausalContext?
  /// Whether the peer asked for an answer we have not sent yet.
  private var answerOwed = true
  /// Whether we opened a handshake and the peer's answer has not arrived yet.
  private var awaitingAnswer = false
  /// Where the ids of our streams come from: each stream takes the next value.
  private var streamSeed: UInt64
  /// Our live pushes to the peer, as a stream of frames (see ``pushEncoded(_:from:)``).
  var outgoing: SessionStream
  /// The peer's live pushes.
  var incoming = SessionStream()
  /// Whether the next handshake message asks the peer to start a new stream.
  private var newStreamWanted = false
  /// Whether a new stream was asked for and no frame has decoded since.
  private var newStreamRequested = false
  /// Frames refused since the last request, so that a lost request is repeated.
  private var refusalsSinceRequest = 0

  /// A session with a peer that has not spoken yet.
  public init() {
    self.init(streamSeed: .random(in: 0 ... .max))
  }

  /// A session whose streams of live pushes take their ids from `streamSeed`, so that a
  /// test or a simulation sends the same bytes on every run. Sessions that talk to the
  /// same peer must use different seeds.
  public init(streamSeed: UInt64) {
    self.streamSeed = streamSeed
    outgoing = SessionStream(streamID: Self.nextStreamID(&self.streamSeed))
  }

  /// Forgets what the peer was believed to have, so the next message restarts the
  /// handshake. Use it after reconnecting, or when messages may have been lost.
  public mutating func reset() {
    self = SyncSession(streamSeed: streamSeed)
  }

  /// Forgets what the peer was believed to have, so the next message opens a handshake,
  /// but keeps both streams of live pushes: an anti-entropy timer on a connection that
  /// still works, where ``reset()`` would also restart the stream the peer follows.
  public mutating func restartHandshake() {
    peerContext = nil
    contextSent = nil
    answerOwed = true
    awaitingAnswer = false
  }

  /// Whether the session owes the peer a message now: an answer to a handshake whose
  /// contexts differ, a handshake opened by ``restartHandshake()``, or a request for a
  /// new stream after a refused frame. A channel that is not polled sends what
  /// ``makeMessage(for:)`` returns as soon as this becomes true.
  public var owesMessage: Bool { answerOwed }

  /// The next value of a SplitMix64 sequence: distinct for 2^64 calls.
  private static func nextStreamID(_ state: inout UInt64) -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var mixed = state
    mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
    mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
    return mixed ^ (mixed >> 31)
  }

  /// The next message for the peer, or `nil` when the peer is up to date and knows our
  /// state.
  ///
  /// - Complexity: O(e + d) for e entities and d events the peer lacks.
  public mutating func makeMessage(for replica: Replica) -> SyncMessage? {
    makeMessage(for: replica, withholding: CausalContext())
  }

  /// The next message for the peer as if `replica` lacked the events of `withheld`: the
  /// message states the rest of its context and sends none of them. A durable owner
  /// withholds the edits its store has not made durable yet, so a peer never holds one
  /// the device could lose, without forcing a sync for each message.
  ///
  /// `withheld` must hold only events no other event of `replica` depends on that is not
  /// withheld too (a replica's newest own events, for instance).
  ///
  /// - Complexity: O(e + d) for e entities and d events the peer lacks, plus O(r + g) to
  ///   subtract `withheld`.
  package mutating func makeMessage(for replica: Replica, withholding withheld: CausalContext)
    -> SyncMessage?
  {
    let context = withheld.isEmpty ? replica.context : replica.context.subtracting(withheld)
    guard let peerContext else {
      // The peer has not spoken: open with our context and no data.
      guard contextSent != context || answerOwed else { return nil }
      answerOwed = false
      awaitingAnswer = true
      contextSent = context
      defer { newStreamWanted = false }
      return SyncMessage(context: context, delta: nil, requestsNewStream: newStreamWanted)
    }
    let delta = replica.delta(since: withheld.isEmpty ? peerContext : peerContext.union(withheld))
    guard !delta.isEmpty || contextSent != context || answerOwed else { return nil }
    answerOwed = false
    contextSent = context
    // Optimistic: assume the peer will integrate it. If it is lost, the peer's next
    // message states its real context and the missing part is sent again.
    self.peerContext = peerContext.union(delta.context)
    defer { newStreamWanted = false }
    return SyncMessage(
      context: context, delta: delta.isEmpty ? nil : delta, requestsNewStream: newStreamWanted)
  }

  /// A live push of one local transaction: a message with no context, just the delta,
  /// so a typed character costs only its own bytes. Send it at once to the peer.
  ///
  /// Call it right after the transaction, with the replica that made it.
  ///
  /// - Complexity: O(r + g) for r replicas and g gaps in the contexts.
  public mutating func push(_ commit: Commit, from replica: Replica) -> SyncMessage {
    notePush(of: commit.delta, from: replica)
    return SyncMessage(context: nil, delta: commit.delta)
  }

  /// Notes that `delta`, a transaction of `replica`, is being pushed to the peer.
  mutating func notePush(of delta: DocumentDelta, from replica: Replica) {
    // If the peer knew everything we had before this transaction, it will know our
    // state once the push arrives, and no context-only message is needed.
    if let sent = contextSent, sent.union(delta.context) == replica.context {
      contextSent = replica.context
    }
    peerContext?.formUnion(delta.context)
  }

  /// Notes that the peer's stream cannot be followed any more: the next message is a
  /// handshake that asks the peer for a new stream, unless one was asked for already
  /// (frames of the old stream still on their way are refused too). The request is
  /// repeated after ``SessionStream/holdLimit`` more refusals, in case it was lost.
  mutating func noteBrokenStream() {
    refusalsSinceRequest += 1
    guard !newStreamRequested || refusalsSinceRequest > SessionStream.holdLimit else { return }
    newStreamRequested = true
    newStreamWanted = true
    refusalsSinceRequest = 0
    answerOwed = true
  }

  /// Notes that a frame of the peer's stream decoded.
  mutating func noteFrameDecoded() {
    newStreamRequested = false
    refusalsSinceRequest = 0
  }

  /// Starts a new stream of live pushes: the next frame of ``pushEncoded(_:from:)`` is a
  /// start frame, which refers to nothing earlier. ``receive(_:into:)`` does this when the
  /// peer asks for it (``SyncMessage/requestsNewStream``); call it from a protocol of
  /// your own that carries that request differently.
  public mutating func restartOutgoingStream() {
    outgoing = SessionStream(streamID: Self.nextStreamID(&streamSeed))
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
    receive(message, into: &replica, withholding: CausalContext())
  }

  /// Integrates a message from the peer as ``receive(_:into:)`` does, for a replica whose
  /// messages withhold `withheld` (see ``makeMessage(for:withholding:)``): the events
  /// withheld do not make it answer.
  package mutating func receive(
    _ message: SyncMessage, into replica: inout Replica, withholding withheld: CausalContext
  ) -> DocumentChanges {
    var changes = DocumentChanges()
    if let delta = message.delta, Self.canApply(message, to: replica.context) {
      changes = replica.apply(delta)
    }
    noteReceived(message, appliedTo: replica, withholding: withheld)
    return changes
  }

  /// Whether a replica whose context is `context` holds every event the message's sender
  /// assumed it held: only then is its delta applied.
  ///
  /// An answer is the sender's delta since what it believed the receiver had: the
  /// receiver's last stated context joined with what it sent since, assumed arrived. When
  /// a message on the way was lost, that belief overstates, and the delta, which omits
  /// what the receiver was believed to have, still carries each changed entity's whole
  /// presence (its latest event of each replica): the receiver would hold a summary of an
  /// event it lacks. Should that event then be lost for good (its device restored from a
  /// stale backup), the receiver would keep a presence no other replica has, for ever.
  /// The sender's stated context minus the delta's context is what it assumed, so a
  /// receiver that lacks part of it applies nothing, states its real context in its
  /// answer (it lacks what the sender stated, so it owes one), and the sender's next
  /// delta is computed from that. A live push (no stated context) is one transaction's
  /// own events and needs no check.
  ///
  /// Call it before applying a message's delta some other way (a relay committing it
  /// through its store), then ``noteReceived(_:appliedTo:)`` with the message.
  ///
  /// - Complexity: O(r + g) for r replicas and g gaps in the contexts.
  public static func canApply(_ message: SyncMessage, to context: CausalContext) -> Bool {
    guard let stated = message.context, let delta = message.delta else { return true }
    return context.includes(stated.subtracting(delta.context))
  }

  /// Notes what a message from the peer says the peer has, when the caller has already
  /// applied the message's delta to `replica` some other way: a relay that commits it
  /// through its store before its cache holds it. The session's side of
  /// ``receive(_:into:)``, which is this after applying the delta; pass the message
  /// whole, delta included, since whether it carried one decides whether it is answered.
  ///
  /// - Complexity: O(r + g) to compare contexts, for r replicas and g gaps.
  public mutating func noteReceived(_ message: SyncMessage, appliedTo replica: Replica) {
    noteReceived(message, appliedTo: replica, withholding: CausalContext())
  }

  /// Notes what a message from the peer says the peer has, comparing it with what
  /// `replica` states while it withholds `withheld`.
  package mutating func noteReceived(
    _ message: SyncMessage, appliedTo replica: Replica, withholding withheld: CausalContext
  ) {
    let context = withheld.isEmpty ? replica.context : replica.context.subtracting(withheld)
    // The peer lost our stream (a refused frame, a restart): the next push starts anew.
    if message.requestsNewStream { restartOutgoingStream() }
    guard let stated = message.context else {
      // A live push: the peer now also has what it pushed, and knows we have it too if
      // it knew everything else we had.
      if let delta = message.delta {
        peerContext?.formUnion(delta.context)
        if let sent = contextSent, sent.union(delta.context) == context {
          contextSent = context
        }
      }
      return
    }
    peerContext = stated
    // An opening, a request for a new stream, or the answer to our own opening is
    // answered while the two sides' knowledge differs in either direction. An answer
    // that carried a delta is answered only while we still lack something it stated
    // (the peer believed we had it: it was lost). Otherwise two sessions whose replicas
    // keep receiving edits from other peers would answer each other forever; those
    // edits come by their own pushes and the next handshake. Equal contexts need no
    // answer, so two synced peers fall quiet.
    let lacking = !context.includes(stated)
    let differs = lacking || !stated.includes(context)
    let opens = message.delta == nil || message.requestsNewStream || awaitingAnswer
    answerOwed = opens ? differs : lacking
    awaitingAnswer = false
  }
}
