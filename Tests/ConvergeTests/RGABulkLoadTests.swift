import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The text wire form of `text` alone: a replica table, then the text's state runs.
func encodeTextState(_ text: RGA) -> [UInt8] {
  encodeTextRuns(text.delta(since: CausalContext()))
}

/// The text wire form of `runs` alone: a replica table, then the runs.
func encodeTextRuns(_ runs: RGADelta) -> [UInt8] {
  var builder = ReplicaTable.Builder()
  runs.collectReplicas(into: &builder)
  let table = builder.build()
  var writer = ByteWriter()
  table.write(to: &writer)
  runs.write(to: &writer, replicas: table)
  return writer.bytes
}

/// Reads bytes made by ``encodeTextState(_:)`` with the loader documents use.
func loadTextState(_ bytes: [UInt8]) throws -> RGA {
  var reader = ByteReader(bytes)
  var table = try DecodedReplicaTable(from: &reader)
  let text = try RGA(from: &reader, replicas: &table)
  try reader.expectEnd()
  try table.checkAllReferenced(offset: reader.offset)
  return text
}

/// The reference the loader must agree with: the runs applied one by one to an empty
/// text, which must then hold every one of them.
func replayTextState(_ bytes: [UInt8]) throws -> RGA {
  var reader = ByteReader(bytes)
  var table = try DecodedReplicaTable(from: &reader)
  let start = reader.offset
  let delta = try RGADelta(from: &reader, replicas: &table)
  var text = RGA()
  text.apply(delta)
  var expected = CausalContext()
  for insert in delta.inserts {
    let first = insert.id.counter
    expected.insert(
      replica: insert.id.replica, counters: first...(first + UInt64(insert.length - 1)))
  }
  for delete in delta.deletes {
    expected.insert(
      replica: delete.dot.replica,
      counters: delete.dot.counter...(delete.dot.counter + delete.count - 1))
  }
  guard text.dots == expected else {
    throw ConvergeDecodingError.invalidValue(
      offset: start, reason: "text run the sequence cannot hold")
  }
  try reader.expectEnd()
  try table.checkAllReferenced(offset: reader.offset)
  return text
}

/// Loading a text's state builds the text directly (`RGA+BulkLoad.swift`); it must give
/// exactly what applying the runs one by one gives, accept exactly the same bytes, and
/// leave a text that edits and merges like any other.
@Suite struct RGABulkLoadTests {
  /// Checks that `text` loads back equal, consistent and canonical, and equal to the
  /// replayed reference.
  private func checkLoads(_ text: RGA) throws {
    let bytes = encodeTextState(text)
    let loaded = try loadTextState(bytes)
    loaded._checkInvariants()
    #expect(loaded == text)
    #expect(loaded == (try replayTextState(bytes)))
    #expect(loaded.string == text.string)
    #expect(loaded.utf16Count == text.utf16Count)
    #expect(loaded.pendingCount == text.pendingCount)
    #expect(loaded.dots == text.dots)
    #expect(encodeTextState(loaded) == bytes)
  }

  @Test func loadedTextEqualsTheTextItWasSavedFrom() throws {
    try forEachSeed(count: 150, base: 0xB01C) { random in
      let history = RandomHistory(
        peers: Int.random(in: 1...4, using: &random), steps: Int.random(in: 1...80, using: &random),
        alphabet: Bool.random(using: &random) ? richAlphabet : asciiAlphabet, using: &random)
      for peer in history.peers { try checkLoads(peer.rga) }
    }
  }

  /// A text typed in one go into an empty text (one run from the head to the end, the
  /// common note) takes the loader's shortcut: it must load as the walk and the replay
  /// do, edit like any other, and refuse content of another length the same way.
  @Test func aTextTypedInOneGoLoadsAsOneRun() throws {
    let a = ReplicaID(rawValue: 7)
    for (index, body) in ["a", "hello", "café 🌱 中文 naïve", String(repeating: "word ", count: 500)]
      .enumerated()
    {
      let scalars = Array(body.unicodeScalars)
      var text = RGA()
      text.apply(
        RGADelta(
          inserts: [
            RGADelta.Insert(
              id: Dot(replica: a, counter: UInt64(3 + index)), lamport: UInt64(10 + index),
              origin: nil, rightOrigin: nil, scalars: scalars)
          ], deletes: []))
      try checkLoads(text)
      var loaded = try loadTextState(encodeTextState(text))
      #expect(loaded.leaves.count == 1 && loaded.leaves[0].runs.count == 1)
      // It edits like the text it was saved from.
      for edited in [0, 1] {
        var target = edited == 0 ? text : loaded
        let delta = RGADelta(
          inserts: [
            RGADelta.Insert(
              id: Dot(replica: ReplicaID(rawValue: 9), counter: 1), lamport: 2_000,
              origin: Dot(replica: a, counter: UInt64(3 + index)), rightOrigin: nil,
              scalars: Array("!".unicodeScalars))
          ],
          deletes: [
            RGADelta.Delete(
              dot: Dot(replica: ReplicaID(rawValue: 9), counter: 2),
              target: Dot(replica: a, counter: UInt64(3 + index + scalars.count - 1)), count: 1,
              isDescending: false)
          ])
        target.apply(delta)
        target._checkInvariants()
        if edited == 0 { text = target } else { loaded = target }
      }
      #expect(loaded == text)
      #expect(loaded.string == text.string)
    }
    // Content one scalar short or long is refused as the replay refuses it.
    var text = RGA()
    text.apply(
      RGADelta(
        inserts: [
          RGADelta.Insert(
            id: Dot(replica: a, counter: 1), lamport: 1, origin: nil, rightOrigin: nil,
            scalars: Array("abcdef".unicodeScalars))
        ], deletes: []))
    let bytes = encodeTextState(text)
    // The content field is the raw "abcdef" at the end of the insert groups.
    let content = try #require(
      (0..<bytes.count - 6).first { Array(bytes[$0 + 1..<$0 + 7]) == Array("abcdef".utf8) })
    for replacement in [Array("abcde".utf8), Array("abcdefg".utf8)] {
      let damaged =
        Array(bytes[..<content]) + [UInt8(replacement.count)] + replacement
        + Array(bytes[(content + 7)...])
      let loaded = Result { try loadTextState(damaged) }
      let replayed = Result { try replayTextState(damaged) }
      #expect(throws: ConvergeDecodingError.self) { try loaded.get() }
      #expect(throws: ConvergeDecodingError.self) { try replayed.get() }
      // The same error: the shortcut refuses as applying the runs does.
      if case .failure(let shortcut) = loaded, case .failure(let general) = replayed {
        #expect("\(shortcut)" == "\(general)")
      }
    }
  }

  @Test func emptyAndBufferedOnlyTextsLoad() throws {
    try checkLoads(RGA())
    // Only a run whose origin never arrived, and a delete of something never seen.
    let a = ReplicaID(rawValue: 1)
    var buffered = RGA()
    buffered.apply(
      RGADelta(
        inserts: [
          RGADelta.Insert(
            id: Dot(replica: a, counter: 5), lamport: 9, origin: Dot(replica: a, counter: 2),
            rightOrigin: nil,
            scalars: Array("xy".unicodeScalars))
        ],
        deletes: [
          RGADelta.Delete(
            dot: Dot(replica: a, counter: 7), target: Dot(replica: a, counter: 1), count: 1,
            isDescending: false)
        ]))
    #expect(buffered.pendingCount == 3)
    try checkLoads(buffered)
  }

  /// Concurrent runs between the same origins land in id order whatever their Lamport
  /// numbers, a run splits around the runs that sort before its next item, and a run can
  /// follow a later id of its own replica.
  @Test func loadedOrderIsTheSequenceOrder() throws {
    let a = ReplicaID(rawValue: 1)
    let b = ReplicaID(rawValue: 2)
    let c = ReplicaID(rawValue: 3)
    func insert(
      _ replica: ReplicaID, _ counter: UInt64, _ lamport: UInt64, _ origin: Dot?, _ text: String
    ) -> RGADelta.Insert {
      RGADelta.Insert(
        id: Dot(replica: replica, counter: counter), lamport: lamport, origin: origin,
        rightOrigin: nil,
        scalars: Array(text.unicodeScalars))
    }
    let inserts = [
      // Between the head and the end: a, then b, then c.
      insert(c, 1, 1, nil, "abc"),
      insert(b, 1, 2, nil, "XY"),
      insert(a, 1, 2, nil, "Q"),
      // Between "a" and the end, like "bc": a's "m" and b's "n" come before c's "bc",
      // which splits "abc".
      insert(a, 2, 5, Dot(replica: c, counter: 1), "m"),
      insert(b, 3, 2, Dot(replica: c, counter: 1), "n"),
      // After "Y", then after a later id of the same replica.
      insert(a, 4, 9, Dot(replica: a, counter: 7), "z"),
      insert(a, 7, 8, Dot(replica: b, counter: 2), "w"),
    ]
    var applied = RGA()
    for insert in inserts.reversed() { applied.apply(RGADelta(inserts: [insert], deletes: [])) }
    #expect(applied.string == "QXYwzamnbc")
    try checkLoads(applied)
  }

  /// A run's later item and a concurrent sibling with the same origins and the same
  /// Lamport number: the smaller id comes first (YjsMod's rule), which the walk's
  /// descending `(lamport, replica)` order puts the other way. The state stores the
  /// run whole, so the check that the walk is the order must look at the run's later
  /// items too (found by `converge simulate --restarts 0.01 --seed 77`, where devices
  /// that loaded a snapshot showed "😀👩‍💻 " and the one that had merged live "👩‍💻 😀").
  @Test func aSiblingOfARunsLaterItemLoadsInPlace() throws {
    let typist = ReplicaID(rawValue: 2)
    let other = ReplicaID(rawValue: 1)
    for lamportGap: UInt64 in [0, 1] {
      func insert(
        _ replica: ReplicaID, _ counter: UInt64, _ lamport: UInt64, _ origin: Dot?,
        _ text: String
      ) -> RGADelta.Insert {
        RGADelta.Insert(
          id: Dot(replica: replica, counter: counter), lamport: lamport, origin: origin,
          rightOrigin: nil, scalars: Array(text.unicodeScalars))
      }
      // The typist types "abc", then "d" after "c" while the other device, having seen
      // "abc" only, types "x" after "c" (the typist's "d" one Lamport number later when
      // the gap is 1: it had seen something else meanwhile).
      let inserts = [
        insert(typist, 1, 1, nil, "abc"),
        insert(typist, 4, 4 + lamportGap, Dot(replica: typist, counter: 3), "d"),
        insert(other, 1, 4, Dot(replica: typist, counter: 3), "x"),
      ]
      for order in [inserts, [inserts[0], inserts[2], inserts[1]]] {
        var applied = RGA()
        for insert in order { applied.apply(RGADelta(inserts: [insert], deletes: [])) }
        #expect(applied.string == "abcxd", "gap \(lamportGap)")
        try checkLoads(applied)
      }
    }
  }

  /// A loaded text takes local edits, remote deltas and merges exactly as the text it
  /// was saved from.
  @Test func loadedTextKeepsEditingAndMerging() throws {
    try forEachSeed(count: 40, base: 0xED17) { random in
      var history = RandomHistory(
        peers: 3, steps: Int.random(in: 5...60, using: &random), alphabet: richAlphabet,
        using: &random)
      var original = history.peers[0]
      var loaded = original
      loaded.rga = try loadTextState(encodeTextState(original.rga))
      for _ in 0..<30 {
        if Bool.random(using: &random) {
          // The original's own edit, received by the loaded copy.
          let delta = original.randomEdit(richAlphabet, using: &random)
          loaded.rga.apply(delta)
          loaded.next = original.next
        } else {
          let other = Int.random(in: 1..<3, using: &random)
          let delta = history.peers[other].randomEdit(richAlphabet, using: &random)
          history.deltas.append(delta)
          #expect(original.rga.apply(delta) == loaded.rga.apply(delta))
        }
        #expect(loaded.rga == original.rga)
      }
      // Local edits on the loaded text itself, then a merge both ways.
      for _ in 0..<10 { _ = loaded.randomEdit(richAlphabet, using: &random) }
      loaded.rga._checkInvariants()
      var merged = history.peers[1].rga
      merged.merge(loaded.rga)
      var back = loaded.rga
      back.merge(history.peers[1].rga)
      #expect(merged == back)
      merged._checkInvariants()
    }
  }

  /// Damaged text states either throw in both loaders or load to the same text, which
  /// encodes back to exactly the damaged bytes.
  @Test func damagedStatesLoadLikeReplayOrThrow() throws {
    try forEachSeed(count: 300, base: 0xDA7A) { random in
      let history = RandomHistory(
        peers: 3, steps: Int.random(in: 1...40, using: &random), alphabet: richAlphabet,
        using: &random)
      let bytes = encodeTextState(history.peers[0].rga)
      let other = encodeTextState(history.peers[1].rga)
      for _ in 0..<20 {
        let damaged = mutateBytes(bytes, splicingWith: other, using: &random)
        let loaded = Result { try loadTextState(damaged) }
        let replayed = Result { try replayTextState(damaged) }
        switch (loaded, replayed) {
        case (.success(let text), .success(let reference)):
          text._checkInvariants()
          #expect(text == reference)
          #expect(encodeTextState(text) == damaged)
        case (.failure(let error), .failure(let expected)):
          #expect(error is ConvergeDecodingError)
          #expect(error as? ConvergeDecodingError == expected as? ConvergeDecodingError)
        case (.success, .failure(let error)):
          Issue.record("loaded bytes that replay rejects: \(error)")
        case (.failure(let error), .success):
          Issue.record("rejected bytes that replay accepts: \(error)")
        }
      }
    }
  }

  /// Well-formed states a real text may not have: runs given another Lamport number or
  /// another origin (an id of the text, one it does not hold, the head), making siblings
  /// change places, children older than their origin, cycles and chains of buffered
  /// runs. Both loaders agree on each.
  @Test func rewiredStatesLoadLikeReplay() throws {
    var accepted = 0
    var refused = 0
    try forEachSeed(count: 200, base: 0x5EED) { random in
      let history = RandomHistory(
        peers: 3, steps: Int.random(in: 1...40, using: &random), alphabet: richAlphabet,
        using: &random)
      let runs = history.peers[0].rga.delta(since: CausalContext())
      guard !runs.inserts.isEmpty else { return }
      let ids = runs.inserts.map(\.id)
      for _ in 0..<10 {
        var inserts = runs.inserts
        for _ in 0..<Int.random(in: 1...3, using: &random) {
          let target = Int.random(in: 0..<inserts.count, using: &random)
          switch Int.random(in: 0..<4, using: &random) {
          case 0:
            inserts[target].lamport = UInt64.random(in: 0...12, using: &random)
          case 1:
            let shift = Int64.random(in: -3...3, using: &random)
            inserts[target].lamport = UInt64(max(0, Int64(inserts[target].lamport) + shift))
          case 2:
            inserts[target].origin = ids.randomElement(using: &random)
          default:
            inserts[target].origin =
              Bool.random(using: &random)
              ? nil
              : Dot(
                replica: inserts[target].id.replica,
                counter: UInt64.random(in: 1...60, using: &random))
          }
        }
        // Origins inside their own run cannot be written: leave those out.
        let valid = inserts.filter { insert in
          guard let origin = insert.origin, origin.replica == insert.id.replica else {
            return true
          }
          return origin.counter < insert.id.counter
            || origin.counter >= insert.id.counter + UInt64(insert.length)
        }
        let bytes = encodeDelta(RGADelta(inserts: valid, deletes: runs.deletes))
        switch (Result { try loadTextState(bytes) }, Result { try replayTextState(bytes) }) {
        case (.success(let text), .success(let reference)):
          accepted += 1
          text._checkInvariants()
          #expect(text == reference)
          #expect(encodeTextState(text) == bytes)
        case (.failure(let error), .failure(let expected)):
          refused += 1
          #expect(error as? ConvergeDecodingError == expected as? ConvergeDecodingError)
        case (.success, .failure(let error)):
          Issue.record("loaded bytes that replay rejects: \(error)")
        case (.failure(let error), .success):
          Issue.record("rejected bytes that replay accepts: \(error)")
        }
      }
    }
    // Both outcomes must occur, or the test checks nothing.
    #expect(accepted > 100 && refused > 100, "accepted \(accepted), refused \(refused)")
  }

  /// Every prefix of a state is refused.
  @Test func truncatedStatesThrow() throws {
    var random = SeededGenerator(seed: 0x7A11)
    let history = RandomHistory(peers: 3, steps: 40, alphabet: richAlphabet, using: &random)
    let bytes = encodeTextState(history.peers[0].rga)
    for length in 0..<bytes.count {
      #expect(throws: ConvergeDecodingError.self) { try loadTextState(Array(bytes[..<length])) }
    }
  }

  /// A run whose origin is integrated must be younger than it: the sequence would ignore
  /// it, so a state holding it is refused. Under a buffered origin it is buffered too.
  @Test func runsNotYoungerThanTheirOriginAreRefused() throws {
    let a = ReplicaID(rawValue: 1)
    let b = ReplicaID(rawValue: 2)
    let base = RGADelta.Insert(
      id: Dot(replica: a, counter: 1), lamport: 5, origin: nil, rightOrigin: nil,
      scalars: Array("ab".unicodeScalars))
    for lamport: UInt64 in [0, 4, 5] {
      let child = RGADelta.Insert(
        id: Dot(replica: b, counter: 1), lamport: lamport, origin: Dot(replica: a, counter: 1),
        rightOrigin: nil,
        scalars: Array("x".unicodeScalars))
      let bytes = encodeDelta(RGADelta(inserts: [base, child], deletes: []))
      #expect(throws: ConvergeDecodingError.self) { try loadTextState(bytes) }
      #expect(throws: ConvergeDecodingError.self) { try replayTextState(bytes) }
    }
    // The second item of a run has Lamport number 6: a child at 6 is refused too.
    let late = RGADelta.Insert(
      id: Dot(replica: b, counter: 1), lamport: 6, origin: Dot(replica: a, counter: 2),
      rightOrigin: nil,
      scalars: Array("x".unicodeScalars))
    #expect(throws: ConvergeDecodingError.self) {
      try loadTextState(encodeDelta(RGADelta(inserts: [base, late], deletes: [])))
    }
    // Under a missing origin nothing is checked: both runs wait, in a cycle or a chain.
    let waiting = [
      RGADelta.Insert(
        id: Dot(replica: b, counter: 1), lamport: 3, origin: Dot(replica: b, counter: 4),
        rightOrigin: nil,
        scalars: Array("x".unicodeScalars)),
      RGADelta.Insert(
        id: Dot(replica: b, counter: 4), lamport: 1, origin: Dot(replica: b, counter: 1),
        rightOrigin: nil,
        scalars: Array("y".unicodeScalars)),
      RGADelta.Insert(
        id: Dot(replica: b, counter: 8), lamport: 1, origin: Dot(replica: a, counter: 9),
        rightOrigin: nil,
        droppedLength: 3),
    ]
    let bytes = encodeDelta(
      RGADelta(
        inserts: [base] + waiting,
        deletes: [
          RGADelta.Delete(
            dot: Dot(replica: b, counter: 11), target: Dot(replica: b, counter: 8), count: 3,
            isDescending: false)
        ]))
    let loaded = try loadTextState(bytes)
    #expect(loaded == (try replayTextState(bytes)))
    #expect(loaded.string == "ab")
    #expect(loaded.pendingCount == 2 + 3 + 3)
    #expect(encodeTextState(loaded) == bytes)
  }

  /// The content decoder against the standard library's strict UTF-8 decoder: every
  /// sequence of up to three bytes drawn from the boundaries of the UTF-8 ranges, and
  /// random mixes of valid and damaged text.
  @Test func contentDecoderIsStrictUTF8() throws {
    func reference(_ bytes: [UInt8]) -> [Unicode.Scalar]? {
      var decoder = UTF8()
      var iterator = bytes.makeIterator()
      var scalars: [Unicode.Scalar] = []
      while true {
        switch decoder.decode(&iterator) {
        case .scalarValue(let scalar): scalars.append(scalar)
        case .emptyInput: return scalars
        case .error: return nil
        }
      }
    }
    func check(_ bytes: [UInt8]) {
      let decoded = try? TextWire.decodeScalars(bytes[...], offset: 0)
      #expect(decoded?.scalars == reference(bytes), "\(bytes)")
      if let decoded {
        #expect(decoded.hasSupplementary == decoded.scalars.contains { $0.value > 0xFFFF })
      }
    }
    let edges: [UInt8] = [
      0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
      0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
    ]
    for first in edges {
      check([first])
      for second in edges {
        check([first, second])
        for third in edges { check([first, second, third]) }
      }
    }
    var random = SeededGenerator(seed: 0x07F8)
    let text = Array("aé中😀\u{10FFFF}\u{FFFD}z".utf8)
    for _ in 0..<2_000 {
      var bytes = (0..<Int.random(in: 0...6, using: &random)).flatMap { _ in text }
      for _ in 0..<Int.random(in: 0...2, using: &random) where !bytes.isEmpty {
        bytes[Int.random(in: 0..<bytes.count, using: &random)] =
          edges.randomElement(
            using: &random) ?? 0
      }
      check(bytes)
    }
  }

  private func encodeDelta(_ delta: RGADelta) -> [UInt8] {
    var builder = ReplicaTable.Builder()
    delta.collectReplicas(into: &builder)
    let table = builder.build()
    var writer = ByteWriter()
    table.write(to: &writer)
    delta.write(to: &writer, replicas: table)
    return writer.bytes
  }

  /// A whole document saved and restored keeps editing and converging with its peers.
  @Test func restoredReplicasKeepConverging() throws {
    try forEachSeed(count: 60, base: 0x2E57) { random in
      var network = DocumentNetwork(
        replicaCount: 3, rounds: Int.random(in: 1...20, using: &random), using: &random)
      let saved = network.replicas[0].encodedState()
      var restored = try Replica(restoring: saved, wallClock: .fixed(1_700_000_000_000))
      #expect(restored.document == network.replicas[0].document)
      #expect(restored.encodedState() == saved)
      let commit = restored.randomTransaction(using: &random)
      network.deltas.append(commit.delta)
      for delta in network.deltas {
        restored.apply(delta)
        for index in network.replicas.indices { network.replicas[index].apply(delta) }
      }
      #expect(restored.document == network.replicas[0].document)
      #expect(restored.encodedState() == network.replicas[2].encodedState())
    }
  }
}
