import ConvergeTestSupport
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// A user at a keyboard: typing at a cursor, pasting, backspacing, selecting and
/// replacing, jumping around, switching between notes and fields, now and then setting a
/// title (a delta that is not a text edit).
struct Typist {
  static let keys = [EntityKey(type: "note", id: "a"), EntityKey(type: "note", id: "b")]
  static let fields = ["body", "summary"]
  static let pastes = ["hello", "é", "😀👍", "中文", " world\n", "a\u{301}"]

  var cursor = 0
  var key = Typist.keys[0]
  var field = Typist.fields[0]

  func length(in replica: Replica) -> Int {
    replica.document.text(of: field, in: key).unicodeScalars.count
  }

  mutating func commit(on replica: inout Replica, using random: inout SeededGenerator) -> Commit {
    let count = length(in: replica)
    cursor = Swift.min(cursor, count)
    let (key, field, cursor) = (self.key, self.field, self.cursor)
    switch Int.random(in: 0..<100, using: &random) {
    case 0..<55:
      let scalar = ["a", "b", " ", "e", "\n", "é"].randomElement(using: &random) ?? "a"
      self.cursor += 1
      return replica.transact { $0.insertText(scalar, at: cursor, in: field, of: key) }
    case 55..<65:
      let text = Self.pastes.randomElement(using: &random) ?? "x"
      self.cursor += text.unicodeScalars.count
      return replica.transact { $0.insertText(text, at: cursor, in: field, of: key) }
    case 65..<80 where cursor > 0:
      let run = Swift.min(cursor, Int.random(in: 1...3, using: &random))
      self.cursor -= run
      return replica.transact { $0.deleteText((cursor - run)..<cursor, in: field, of: key) }
    case 80..<85 where cursor < count:
      let run = Swift.min(count - cursor, Int.random(in: 1...4, using: &random))
      return replica.transact { $0.deleteText(cursor..<(cursor + run), in: field, of: key) }
    case 85..<90 where cursor < count:
      let end = Swift.min(count, cursor + Int.random(in: 1...5, using: &random))
      self.cursor += 1
      return replica.transact { $0.replaceText(cursor..<end, with: "Z", in: field, of: key) }
    case 90..<94:
      self.cursor = Int.random(in: 0...count, using: &random)
      return commit(on: &replica, using: &random)
    case 94..<97:
      self.key = Self.keys.randomElement(using: &random) ?? key
      self.field = Self.fields.randomElement(using: &random) ?? field
      self.cursor = Int.random(in: 0...length(in: replica), using: &random)
      return commit(on: &replica, using: &random)
    default:
      let title = FieldValue.string("title \(Int.random(in: 0..<100, using: &random))")
      return replica.transact { $0.setValue(title, for: "title", of: key) }
    }
  }
}

@Suite struct SessionFrameTests {
  /// Streams commits of two local authors (the second one stands for a replica id that
  /// changed) while remote edits arrive in between, frame by frame.
  @Test func framesCarryExactlyTheCommittedDeltas() throws {
    try forEachSeed(count: 120, base: 0x5712_EA30) { random in
      var author = Replica(id: ReplicaID(rawValue: 0xA11CE), wallClock: .fixed(0))
      var other = Replica(id: ReplicaID(rawValue: 0xB0B), wallClock: .fixed(0))
      var typist = Typist()
      var otherTypist = Typist()
      var encoder = SessionStream(streamID: random.next())
      var decoder = SessionStream()
      for step in 0..<80 {
        let commit: Commit
        if step % 30 == 29 {
          // Another author's edit passes through the same stream.
          commit = otherTypist.commit(on: &other, using: &random)
        } else {
          commit = typist.commit(on: &author, using: &random)
        }
        if Int.random(in: 0..<8, using: &random) == 0 {
          // A remote edit reaches the author outside the stream: Lamport numbers jump
          // and the next origin may be another replica's scalar.
          author.apply(otherTypist.commit(on: &other, using: &random).delta)
          other.apply(author.delta(since: other.context))
        }
        let frame = encoder.encode(commit.delta)
        let decoded = try decoder.decode(frame[...])
        try ensure(
          decoded == commit.delta,
          "frame \(step) decoded to another delta: \(decoded) vs \(commit.delta)")
        try ensure(encoder == decoder, "the two sides of the stream disagree after frame \(step)")
      }
    }
  }

  @Test func aTypedCharacterCostsNineBytes() throws {
    var replica = Replica(id: ReplicaID(rawValue: 0x0123_4567_89AB_CDEF), wallClock: .fixed(0))
    var session = SyncSession()
    let key = EntityKey(type: "note", id: "7C1A2B9E-54D3-4F61-9A0B-2D7E4C3F8A11")
    var sizes: [Int] = []
    for (offset, scalar) in "Hello".unicodeScalars.enumerated() {
      let commit = replica.transact {
        $0.insertText(String(scalar), at: offset, in: "body", of: key)
      }
      sizes.append(session.pushEncoded(commit, from: replica).count)
    }
    let backspace = replica.transact { $0.deleteText(4..<5, in: "body", of: key) }
    sizes.append(session.pushEncoded(backspace, from: replica).count)
    let again = replica.transact { $0.deleteText(3..<4, in: "body", of: key) }
    sizes.append(session.pushEncoded(again, from: replica).count)
    // The first frame names the stream, the replica, the entity and the field; each later
    // keystroke is magic, flags, length, one record byte, the scalar and the checksum, and
    // a backspace needs no scalar.
    #expect(sizes == [78, 9, 9, 9, 9, 8, 8])
    #expect(commitSize(of: backspace) > 30)
  }

  private func commitSize(of commit: Commit) -> Int { commit.delta.encoded().count }

  @Test func sessionsConvergeThroughFramesInBothDirections() throws {
    try forEachSeed(count: 60, base: 0xF4A3E) { random in
      var a = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
      var b = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(0))
      var (sessionA, sessionB) = (SyncSession(), SyncSession())
      var (typistA, typistB) = (Typist(), Typist())
      for _ in 0..<60 {
        if Bool.random(using: &random) {
          let frame = sessionA.pushEncoded(typistA.commit(on: &a, using: &random), from: a)
          try sessionB.receive(encoded: frame, into: &b)
        } else {
          let frame = sessionB.pushEncoded(typistB.commit(on: &b, using: &random), from: b)
          try sessionA.receive(encoded: frame, into: &a)
        }
      }
      try ensure(a.encodedState() == b.encodedState(), "replicas differ after live frames")
      // Both already have everything: the handshake falls quiet at once.
      try settle(&a, &sessionA, &b, &sessionB)
      try ensure(a.encodedState() == b.encodedState(), "replicas differ after the handshake")
    }
  }

  /// Reordered and repeated frames within the stream's windows are put back in order or
  /// ignored; a lost frame is noticed once more than ``SessionStream/holdLimit`` frames
  /// wait for it, refused with a typed error that changes nothing, and repaired by the
  /// handshake, which asks the sender for a new stream.
  @Test func reorderingIsAbsorbedAndALossIsRepairedByTheHandshake() throws {
    try forEachSeed(count: 40, base: 0x1057) { random in
      var a = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
      var b = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(0))
      var (sessionA, sessionB) = (SyncSession(streamSeed: 1), SyncSession(streamSeed: 2))
      var typist = Typist()
      try settle(&a, &sessionA, &b, &sessionB)
      for round in 0..<8 {
        // Each round's first frame arrives in order: it may start a new stream, and a
        // frame that arrives before its stream's start frame cannot be placed.
        let first = sessionA.pushEncoded(typist.commit(on: &a, using: &random), from: a)
        try sessionB.receive(encoded: first, into: &b)
        var frames: [[UInt8]] = []
        let count =
          round % 4 == 2
          ? Int.random(in: 12...20, using: &random) : Int.random(in: 2...8, using: &random)
        for _ in 0..<count {
          frames.append(sessionA.pushEncoded(typist.commit(on: &a, using: &random), from: a))
        }
        var refused = 0
        switch round % 4 {
        case 0:
          // Reordered: the first frame arrives last.
          frames.append(frames.removeFirst())
        case 1:
          // Repeated: a frame arrives again, later.
          frames.insert(frames[0], at: Int.random(in: 1...frames.count, using: &random))
        case 2:
          // Lost, with enough frames after it to notice.
          frames.remove(at: 0)
        default:
          // The last frame lost: nothing follows it to notice it.
          frames.removeLast()
        }
        for frame in frames {
          let before = b.encodedState()
          do {
            try sessionB.receive(encoded: frame, into: &b)
          } catch let error as ConvergeDecodingError {
            refused += 1
            try ensure(error == .frameOutOfSequence, "unexpected error \(error)")
            try ensure(b.encodedState() == before, "a refused frame changed the replica")
          }
        }
        switch round % 4 {
        case 0, 1:
          try ensure(refused == 0, "round \(round): \(refused) frames refused")
          try ensure(a.encodedState() == b.encodedState(), "round \(round) lost an edit")
        case 2:
          try ensure(refused > 0, "round \(round): the loss went unnoticed")
        default:
          // The periodic reset the session documents.
          sessionA.reset()
          sessionB.reset()
        }
        try settle(&a, &sessionA, &b, &sessionB)
        try ensure(a.encodedState() == b.encodedState(), "round \(round) did not converge")
      }
    }
  }

  /// A frame's text is checked by the library's one UTF-8 validator: with the two bytes of
  /// "é" replaced (and the frame resealed), another valid scalar decodes, and an overlong
  /// form, a stray continuation byte or a lead byte with no continuation is `invalidUTF8`.
  @Test func aFramesTextIsStrictUTF8() throws {
    var replica = Replica(id: ReplicaID(rawValue: 0xFACE), wallClock: .fixed(0))
    let key = EntityKey(type: "note", id: "n")
    let commit = replica.transact { $0.insertText("é", at: 0, in: "body", of: key) }
    var session = SyncSession()
    let frame = session.pushEncoded(commit, from: replica)
    let at = try #require(
      frame.indices.dropLast().first { frame[$0] == 0xC3 && frame[$0 + 1] == 0xA9 })
    func decoded(_ replacement: [UInt8]) throws -> String {
      var bytes = frame
      bytes.replaceSubrange(at..<(at + 2), with: replacement)
      var decoder = SessionStream()
      let delta = try decoder.decode(Self.reseal(bytes, stream: 0, sequence: 0)[...])
      var peer = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(0))
      peer.apply(delta)
      return peer.document.text(of: "body", in: key)
    }
    #expect(try decoded([0xC3, 0xA9]) == "é")
    #expect(try decoded([0xC3, 0xA8]) == "è")
    for invalid: [UInt8] in [[0xC1, 0xA9], [0xA9, 0xA9], [0xC3, 0x41], [0xF8, 0x80]] {
      #expect(throws: ConvergeDecodingError.self, "\(invalid)") { _ = try decoded(invalid) }
      do {
        _ = try decoded(invalid)
      } catch let error as ConvergeDecodingError {
        guard case .invalidUTF8 = error else {
          Issue.record("\(invalid): \(error)")
          continue
        }
      }
    }
  }

  /// Damaged frames, resealed with a valid checksum so that the record decoder sees the
  /// damage, are refused with a typed error or decode to some delta; the stream only
  /// moves on when a frame decodes.
  @Test func damagedFramesAreRefusedWithTypedErrors() throws {
    try forEachSeed(count: 40, base: 0xDA3A6E) { random in
      var replica = Replica(id: ReplicaID(rawValue: 0xFACE), wallClock: .fixed(0))
      var typist = Typist()
      var encoder = SessionStream(streamID: random.next())
      var decoder = SessionStream()
      let iterations = Swift.max(1, fuzzIterations(300) / 40)
      for _ in 0..<30 {
        let frame = encoder.encode(typist.commit(on: &replica, using: &random).delta)
        for length in 0..<frame.count {
          var copy = decoder
          #expect(throws: ConvergeDecodingError.self) { _ = try copy.decode(frame[..<length]) }
        }
        for _ in 0..<iterations {
          let damaged = Self.reseal(
            mutateBytes(frame, splicingWith: frame, using: &random), stream: decoder.streamID,
            sequence: decoder.sequence)
          var copy = decoder
          do {
            _ = try copy.decode(damaged[...])
          } catch is ConvergeDecodingError {
            try ensure(copy == decoder, "a refused frame moved the stream")
          }
        }
        _ = try decoder.decode(frame[...])
      }
    }
  }

  /// The frame decoder behind a session: a damaged frame (resealed half the time, so that
  /// the record decoder sees the damage) handed to `receive(encoded:into:)` is refused
  /// with a typed error and leaves the replica exactly as it was, or is applied; the
  /// replicas still converge through the undamaged frames and a handshake.
  @Test func aRefusedFrameLeavesTheReceivingReplicaUnchanged() throws {
    try forEachSeed(count: 12, base: 0xF3A3_0016) { random in
      var sender = Replica(id: ReplicaID(rawValue: 0xFACE), wallClock: .fixed(0))
      var receiver = Replica(id: ReplicaID(rawValue: 0xBEEF), wallClock: .fixed(0))
      var sending = SyncSession()
      var receiving = SyncSession()
      try settle(&sender, &sending, &receiver, &receiving)
      var typist = Typist()
      var refused = 0
      for _ in 0..<25 {
        let frame = sending.pushEncoded(typist.commit(on: &sender, using: &random), from: sender)
        for _ in 0..<Swift.max(1, fuzzIterations(200) / 50) {
          var damaged = mutateBytes(frame, splicingWith: frame, using: &random)
          if Bool.random(using: &random) {
            damaged = Self.reseal(
              damaged, stream: receiving.incoming.streamID,
              sequence: receiving.incoming.sequence)
          }
          var session = receiving
          var copy = receiver
          do {
            try session.receive(encoded: damaged, into: &copy)
          } catch is ConvergeDecodingError {
            refused += 1
            try ensure(
              copy.document == receiver.document && copy.context == receiver.context,
              "a refused frame changed the replica")
          }
        }
        // The damaged frames went to copies: the real one continues the stream.
        try receiving.receive(encoded: frame, into: &receiver)
      }
      try ensure(refused > 0, "no damaged frame was refused")
      try settle(&sender, &sending, &receiver, &receiving)
      try ensure(sender.document == receiver.document, "the replicas did not converge")
    }
  }

  /// The golden stream pins the frame format: it must decode, frame by frame, to the
  /// deltas that made it, whose replay gives the pinned text.
  @Test func goldenFrameStreamDecodes() throws {
    let url = try #require(
      Bundle.module.url(
        forResource: "session-frames-v2.bin", withExtension: nil, subdirectory: "Fixtures"))
    let golden = Array(try Data(contentsOf: url))
    let deltas = SessionFramesFixture.frames().deltas
    #expect(golden == SessionFramesFixture.stream)
    var reader = ByteReader(golden)
    var decoder = SessionStream()
    var replica = Replica(id: ReplicaID(rawValue: 9), wallClock: .fixed(0))
    var index = 0
    while !reader.isAtEnd {
      let decoded = try decoder.decode(try reader.readLengthPrefixedBytes())
      #expect(index < deltas.count && decoded == deltas[index])
      replica.apply(decoded)
      index += 1
    }
    #expect(index == deltas.count)
    let key = EntityKey(type: "note", id: "golden")
    // The remote "!" reached the sender outside this stream; " 😀", typed before it (its
    // right origin), waits for it.
    #expect(replica.document.text(of: "body", in: key) == "Hi, wörld")
  }

  @Test func aRefusedFrameMakesTheHandshakeAskForANewStreamOnce() throws {
    var a = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    var b = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(0))
    var (sessionA, sessionB) = (SyncSession(streamSeed: 1), SyncSession(streamSeed: 2))
    let key = EntityKey(type: "note", id: "n")
    var frames: [[UInt8]] = []
    for offset in 0..<12 {
      let commit = a.transact { $0.insertText("x", at: offset, in: "body", of: key) }
      frames.append(sessionA.pushEncoded(commit, from: a))
    }
    try sessionB.receive(encoded: frames[0], into: &b)
    // Frame 1 is lost; 8 frames wait for it, the ninth shows it is gone.
    var refused = 0
    for frame in frames[2...] {
      do { try sessionB.receive(encoded: frame, into: &b) } catch { refused += 1 }
    }
    #expect(refused == 2)
    let message = sessionB.makeMessage(for: b)
    let request = try #require(message)
    #expect(request.requestsNewStream)
    let decoded = try SyncMessage(decoding: request.encoded())
    #expect(decoded == request)
    sessionA.receive(decoded, into: &a)
    let next = a.transact { $0.insertText("y", at: 0, in: "body", of: key) }
    let restart = sessionA.pushEncoded(next, from: a)
    #expect(restart[1] & SessionStream.startFlag != 0, "the next push starts a new stream")
    try sessionB.receive(encoded: restart, into: &b)
    // The handshake's answer carries what the lost and dropped frames held.
    if let answer = sessionA.makeMessage(for: a) { sessionB.receive(answer, into: &b) }
    #expect(a.encodedState() == b.encodedState())
    #expect(sessionB.makeMessage(for: b)?.requestsNewStream != true)
  }

  @Test func inspectSummarizesFrames() throws {
    let (frames, _) = SessionFramesFixture.frames()
    let start = try MessageSummary(decoding: frames[0]).text
    #expect(start.contains("session frame (starts stream ddba115eed)"))
    #expect(start.contains("note/golden"))
    let later = try MessageSummary(decoding: frames[1]).text
    #expect(later.contains("continues a stream"))
    #expect(throws: ConvergeDecodingError.self) {
      _ = try MessageSummary(decoding: Array(frames[1].dropLast()))
    }
  }

  /// The fuzzers seal arbitrary bodies as start frames; a real body sealed that way must
  /// decode, or they would only ever test the checksum.
  @Test func theFuzzersStartFramesFollowTheFormat() throws {
    let (frames, deltas) = SessionFramesFixture.frames()
    let header = try SessionStream.header(of: frames[0][...])
    let body = Array(frames[0].dropLast(4).suffix(header.bodyLength))
    var decoder = SessionStream()
    #expect(try decoder.decode(DecodeProperty.sealStartFrame(body: body)[...]) == deltas[0])
  }

  /// The frame with a checksum that matches its bytes, for a start frame its own stream
  /// id, otherwise `stream` at `sequence`.
  static func reseal(_ bytes: [UInt8], stream: UInt64, sequence: UInt64) -> [UInt8] {
    guard bytes.count >= 4 else { return bytes }
    var writer = ByteWriter()
    writer.writeBytes(bytes.dropLast(4))
    let start = bytes.count > 10 && bytes[1] & SessionStream.startFlag != 0
    var ownStream = stream
    if start {
      var reader = ByteReader(bytes[2..<10])
      ownStream = (try? reader.readUInt64()) ?? stream
    }
    writer.writeUInt32(
      SessionStream.checksum(
        writer.bytes[...], stream: ownStream, sequence: start ? 0 : sequence))
    return writer.bytes
  }

  /// Runs the handshake until both sessions fall quiet.
  func settle(
    _ a: inout Replica, _ sessionA: inout SyncSession, _ b: inout Replica,
    _ sessionB: inout SyncSession
  ) throws {
    for _ in 0..<20 {
      let toB = sessionA.makeEncodedMessage(for: a)
      if let toB { try sessionB.receive(encoded: toB, into: &b) }
      let toA = sessionB.makeEncodedMessage(for: b)
      if let toA { try sessionA.receive(encoded: toA, into: &a) }
      if toA == nil && toB == nil { return }
    }
    try ensure(false, "the handshake did not fall quiet")
  }
}
