import Converge
import ConvergeStore

/// How the replicas of a run talk: every message is made by the sending pair's
/// ``SyncSession``, travels as bytes, and is decoded and integrated by the receiving
/// pair's session. The simulator decides only when to call the sessions (an operation,
/// a timer, an arrival); what to send, and how to recover from loss, is theirs.
extension SimulationRun {
  /// Pushes a local transaction of `author` to every peer through their sessions: one
  /// frame per peer, or one self-contained message that every peer receives.
  mutating func push(_ commit: Commit, from author: Int) {
    if configuration.framedPushes {
      for peer in devices.indices where peer != author {
        let frame = PhaseTimings.measure(&statistics.timings, \.transport) {
          sessions[author][peer].pushEncoded(commit, from: devices[author].deviceReplica.replica)
        }
        send(frame, kind: .frame, from: author, to: peer)
      }
      return
    }
    var bytes: [UInt8] = []
    for peer in devices.indices where peer != author {
      let message = sessions[author][peer].push(commit, from: devices[author].deviceReplica.replica)
      // Every peer gets the same message: encode it once, as an app broadcasting would.
      if bytes.isEmpty {
        bytes = PhaseTimings.measure(&statistics.timings, \.transport) { message.encoded() }
      }
      send(bytes, kind: .push, from: author, to: peer)
    }
  }

  /// The anti-entropy timer of `a`'s session with `b`: it forgets what `b` was believed
  /// to have and opens a handshake, if `b` is reachable.
  mutating func startHandshake(from a: Int, to b: Int) {
    guard network.canTalk(a, b, at: now) else { return }
    statistics.handshakes += 1
    sessions[a][b].restartHandshake()
    sendOwedMessage(from: a, to: b)
  }

  /// Sends what `a`'s session with `b` has to say, if it owes `b` a message.
  mutating func sendOwedMessage(from a: Int, to b: Int) {
    guard sessions[a][b].owesMessage, let bytes = makeMessage(from: a, to: b) else { return }
    send(bytes, kind: .handshake, from: a, to: b)
  }

  /// The encoded next message of `a`'s session with `b`, if it has one.
  mutating func makeMessage(from a: Int, to b: Int) -> [UInt8]? {
    // The device replica sends only durable edits, without a flush: those its store has
    // not synced yet go with the first message after the sync.
    let replica = devices[a].deviceReplica
    let message = PhaseTimings.measure(&statistics.timings, \.deltaSince) {
      replica.makeMessage(for: &sessions[a][b])
    }
    guard let message else { return nil }
    return PhaseTimings.measure(&statistics.timings, \.transport) { message.encoded() }
  }

  mutating func send(_ bytes: [UInt8], kind: Message.Kind, from: Int, to: Int) {
    if refusesRetired(from, to) {
      statistics.refusedRetired += 1
      return
    }
    if kind != .handshake { statistics.liveBytes += bytes.count }
    network.send(Message(from: from, to: to, kind: kind, bytes: bytes, sentAt: now), at: now)
  }

  /// Delivers every message due by now; unless `answering` is false, a session that
  /// owes an answer sends it.
  mutating func deliverDue(answering: Bool = true) {
    while let message = network.nextDelivery(upTo: now) {
      receive(message)
      if answering { sendOwedMessage(from: message.to, to: message.from) }
    }
  }

  /// Decodes and integrates `message` through the receiver's session with the sender.
  /// A refused frame is the session's to repair (it then owes a handshake); any other
  /// message that does not decode is a failure of the run.
  mutating func receive(_ message: Message) {
    let (receiver, sender) = (message.to, message.from)
    // A message the sender sent under its old id, before it rejoined, is refused as
    // those it sends while retired are: its events of the old id that no member held
    // were re-applied under the fresh id, and would show twice.
    if refusesRetired(sender, receiver) || message.sentAt < stability.rejoinedAt[sender] {
      statistics.refusedRetired += 1
      return
    }
    let bytes = hooks.damage.map { $0(message.bytes) } ?? message.bytes
    let decoded = PhaseTimings.measure(&statistics.timings, \.transport) {
      try? sessions[receiver][sender].decode(bytes[...])
    }
    guard var decoded else {
      if message.kind == .frame {
        statistics.refusedFrames += 1
      } else {
        statistics.undecodable += 1
      }
      return
    }
    if let delta = decoded.delta, let filter = hooks.applyFilter,
      !filter(receiver, delta, devices[receiver].store.replica.document)
    {
      statistics.filtered += 1
      decoded.delta = nil
    }
    noteStated(decoded.context, in: message)
    let replica = devices[receiver].deviceReplica
    let peer = peerName(sender)
    let received = PhaseTimings.measure(&statistics.timings, \.apply) {
      Result { () throws(StoreError) in
        try replica.receive(decoded, through: &sessions[receiver][sender], from: peer)
      }
    }
    if case .failure(let error) = received {
      ledger.storeErrors.append("device \(receiver): \(error)")
    }
  }

  // MARK: The end

  /// Heals the network, delivers what is in flight, and runs handshake rounds between
  /// replica 0 and every peer until a whole round changes no replica's context.
  mutating func finish() {
    network.healAll()
    flushAll()
    // Without answers: two sessions whose contexts cannot meet (a broken merge) would
    // keep answering each other; the rounds below detect that instead.
    while let time = network.nextDeliveryTime {
      clock.now = Swift.max(now, time)
      deliverDue(answering: false)
    }
    completeRejoins()
    samplePending()
    statistics.virtualMilliseconds = now
    guard devices.count > 1 else { return }
    // Replica 0 gathers everything, then hands it back: two rounds suffice on a correct
    // library; more run until nothing changes, to show quiescence rather than assume it.
    for _ in 0..<(4 + devices.count) {
      statistics.finalRounds += 1
      var changed = false
      for peer in 1..<devices.count {
        changed = finalHandshake(0, peer) || changed
      }
      if !changed { break }
    }
  }

  /// A handshake between `a` and `b` over a reliable, immediate channel: `a` restarts
  /// it, then both sessions send what ``SyncSession/makeMessage(for:)`` returns until
  /// neither has anything to say (the loop of ``SyncSession``'s documentation). Returns
  /// whether either replica's context changed.
  mutating func finalHandshake(_ a: Int, _ b: Int) -> Bool {
    statistics.finalHandshakes += 1
    let before = (devices[a].store.replica.context, devices[b].store.replica.context)
    sessions[a][b].restartHandshake()
    var quiet = false
    for _ in 0..<(Self.finalExchangeLimit / 2) {
      let toB = makeMessage(from: a, to: b)
      if let toB { deliverNow(toB, from: a, to: b) }
      let toA = makeMessage(from: b, to: a)
      if let toA { deliverNow(toA, from: b, to: a) }
      if toA == nil && toB == nil {
        quiet = true
        break
      }
    }
    if !quiet { statistics.unquietPairs.append((a, b)) }
    return devices[a].store.replica.context != before.0
      || devices[b].store.replica.context != before.1
  }

  private mutating func deliverNow(_ bytes: [UInt8], from: Int, to: Int) {
    statistics.finalBytes += bytes.count
    receive(Message(from: from, to: to, kind: .handshake, bytes: bytes, sentAt: now))
  }
}
