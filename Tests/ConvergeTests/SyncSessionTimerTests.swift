import Converge
import ConvergeTestSupport
import Testing

/// The session entry points a driver without polling needs (the simulator is one):
/// whether the session owes a message, and an anti-entropy restart that keeps streams.
@Suite struct SyncSessionTimerTests {
  static func pair() -> (Replica, Replica) {
    var a = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    let key = EntityKey(type: "note", id: "n")
    a.transact { tx in
      tx.create(key)
      tx.insertText("hello", at: 0, in: "body", of: key)
    }
    return (a, a.forked(as: ReplicaID(rawValue: 2)))
  }

  @Test func restartHandshakeOpensAHandshakeThatRepairsALoss() throws {
    var (a, b) = Self.pair()
    var (sessionA, sessionB) = (SyncSession(streamSeed: 1), SyncSession(streamSeed: 2))
    // Synced: nothing owed after the handshake.
    while let m = sessionA.makeMessage(for: a) {
      sessionB.receive(m, into: &b)
      if let r = sessionB.makeMessage(for: b) { sessionA.receive(r, into: &a) }
    }
    #expect(!sessionA.owesMessage && !sessionB.owesMessage)
    // A's stream starts; then a self-contained push is lost: A's session believes B has
    // it and stays quiet.
    let first = a.transact { tx in
      tx.insertText("¡", at: 0, in: "body", of: EntityKey(type: "note", id: "n"))
    }
    try sessionB.receive(encoded: sessionA.pushEncoded(first, from: a), into: &b)
    let lost = a.transact { tx in
      tx.insertText("!", at: 6, in: "body", of: EntityKey(type: "note", id: "n"))
    }
    _ = sessionA.push(lost, from: a)
    #expect(sessionA.makeMessage(for: a) == nil)
    // The timer restarts the handshake: A owes an opening, B answers with its context,
    // and A sends what B lacks.
    sessionA.restartHandshake()
    #expect(sessionA.owesMessage)
    let openingMessage = sessionA.makeMessage(for: a)
    let opening = try #require(openingMessage)
    #expect(opening.delta == nil && !opening.requestsNewStream)
    #expect(!sessionA.owesMessage)
    try sessionB.receive(encoded: opening.encoded(), into: &b)
    #expect(sessionB.owesMessage)
    let answerMessage = sessionB.makeMessage(for: b)
    let answer = try #require(answerMessage)
    try sessionA.receive(encoded: answer.encoded(), into: &a)
    #expect(sessionA.owesMessage)
    let finishMessage = sessionA.makeMessage(for: a)
    let finish = try #require(finishMessage)
    try sessionB.receive(encoded: finish.encoded(), into: &b)
    #expect(a.document == b.document)
    #expect(!sessionB.owesMessage)
    // The stream was kept: the next frame continues it (no start flag, `FORMAT.md`,
    // "Session frames") and decodes at B.
    let next = a.transact { tx in
      tx.insertText("?", at: 7, in: "body", of: EntityKey(type: "note", id: "n"))
    }
    let frame = sessionA.pushEncoded(next, from: a)
    #expect(frame[1] & 0x10 == 0)
    try sessionB.receive(encoded: frame, into: &b)
    #expect(a.document == b.document)
  }

  @Test func aRefusedFrameMakesTheSessionOweARequestForANewStream() throws {
    var (a, b) = Self.pair()
    var (sessionA, sessionB) = (SyncSession(streamSeed: 3), SyncSession(streamSeed: 4))
    let key = EntityKey(type: "note", id: "n")
    var frames: [[UInt8]] = []
    for character in ["a", "b"] {
      let commit = a.transact { tx in tx.insertText(character, at: 0, in: "body", of: key) }
      frames.append(sessionA.pushEncoded(commit, from: a))
    }
    // B's session is past its opening and owes nothing.
    let openingMessage = sessionB.makeMessage(for: b)
    let opening = try #require(openingMessage)
    sessionA.receive(opening, into: &a)
    #expect(!sessionB.owesMessage)
    // The start frame is lost: the next frame is refused, unchanged replica, and B owes
    // A a handshake that asks for a new stream.
    let before = b.document
    #expect(throws: ConvergeDecodingError.frameOutOfSequence) {
      try sessionB.receive(encoded: frames[1], into: &b)
    }
    #expect(b.document == before)
    #expect(sessionB.owesMessage)
    let requestMessage = sessionB.makeMessage(for: b)
    let request = try #require(requestMessage)
    #expect(request.requestsNewStream)
    #expect(!sessionB.owesMessage)
    try sessionA.receive(encoded: request.encoded(), into: &a)
    // A answers with what B lacks, and its next push starts a stream B can follow.
    let answerMessage = sessionA.makeMessage(for: a)
    let answer = try #require(answerMessage)
    try sessionB.receive(encoded: answer.encoded(), into: &b)
    #expect(a.document == b.document)
    let next = a.transact { tx in tx.insertText("c", at: 0, in: "body", of: key) }
    try sessionB.receive(encoded: sessionA.pushEncoded(next, from: a), into: &b)
    #expect(a.document == b.document)
  }

  /// A handshake ends after the answer to an opening is answered, even when a replica
  /// keeps receiving a third peer's edits meanwhile (they travel by their own pushes):
  /// before, two sessions answered each other for as long as edits kept coming.
  @Test func aHandshakeEndsWhileAThirdPeerKeepsEditing() throws {
    var (a, b) = Self.pair()
    var c = a.forked(as: ReplicaID(rawValue: 3))
    var (sessionA, sessionB) = (SyncSession(streamSeed: 6), SyncSession(streamSeed: 7))
    let key = EntityKey(type: "note", id: "n")
    var exchanged = 0
    var message = sessionA.makeMessage(for: a)
    var toB = true
    while let next = message, exchanged < 10 {
      exchanged += 1
      // C types a character and pushes it to both: it reaches the message's receiver
      // just before the message, and the sender just after the answer leaves.
      let commit = c.transact { tx in tx.insertText("c", at: 0, in: "body", of: key) }
      if toB {
        b.apply(commit.delta)
        sessionB.receive(next, into: &b)
        message = sessionB.owesMessage ? sessionB.makeMessage(for: b) : nil
        a.apply(commit.delta)
      } else {
        a.apply(commit.delta)
        sessionA.receive(next, into: &a)
        message = sessionA.owesMessage ? sessionA.makeMessage(for: a) : nil
        b.apply(commit.delta)
      }
      toB.toggle()
    }
    // Opening, answer, and the answer's answer: then quiet.
    #expect(exchanged <= 3, "\(exchanged) messages")
    #expect(a.document == b.document)
  }
}
