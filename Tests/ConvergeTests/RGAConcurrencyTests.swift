import Converge
import ConvergeTestSupport
import Testing

@Suite struct RGAConcurrencyTests {
  @Test(arguments: [(UInt64(1), UInt64(2)), (UInt64(2), UInt64(1))])
  func concurrentRunsAtOnePlaceNeverInterleave(first: UInt64, second: UInt64) {
    var left = TestPeer(first)
    var right = TestPeer(second)
    let base = left.insert(Array("[]".unicodeScalars), at: 0)
    right.rga.apply(base)
    // Typed one scalar at a time, as a keyboard does.
    var leftDeltas: [RGADelta] = []
    var rightDeltas: [RGADelta] = []
    for (offset, scalar) in "abc".unicodeScalars.enumerated() {
      leftDeltas.append(left.insert([scalar], at: 1 + offset))
    }
    for (offset, scalar) in "xyz".unicodeScalars.enumerated() {
      rightDeltas.append(right.insert([scalar], at: 1 + offset))
    }
    for delta in rightDeltas { left.rga.apply(delta) }
    for delta in leftDeltas.reversed() { right.rga.apply(delta) }
    #expect(Bool(left.rga == right.rga))
    #expect(["[abcxyz]", "[xyzabc]"].contains(left.rga.string), "\(left.rga.string)")
    #expect(right.rga.pendingCount == 0)
  }

  @Test func causallyLaterInsertAtTheSameOriginGoesFirst() {
    var left = TestPeer(9)
    var right = TestPeer(1)
    let a = left.insert(Array("a".unicodeScalars), at: 0)
    right.rga.apply(a)
    let x = right.insert(Array("x".unicodeScalars), at: 1)  // after a
    left.rga.apply(x)
    let y = left.insert(Array("y".unicodeScalars), at: 1)  // after a, having seen x
    right.rga.apply(y)
    #expect(left.rga.string == "ayx" && right.rga == left.rga)
  }

  @Test func deleteAndConcurrentInsertAfterTheDeletedScalar() {
    for order in [false, true] {
      var left = TestPeer(1)
      var right = TestPeer(2)
      let base = left.insert(Array("abc".unicodeScalars), at: 0)
      right.rga.apply(base)
      let deleteB = left.delete(1..<2)
      let insertX = right.insert(Array("X".unicodeScalars), at: 2)
      if order {
        left.rga.apply(insertX)
        right.rga.apply(deleteB)
      } else {
        right.rga.apply(deleteB)
        left.rga.apply(insertX)
      }
      #expect(left.rga.string == "aXc" && right.rga.string == "aXc")
      #expect(Bool(left.rga == right.rga))
    }
  }

  /// Three replicas insert around a tombstone (the y-octo #53 shape): one deletes "b",
  /// one inserts after "b", one before "c"; every delivery order converges.
  @Test func threeReplicasAroundATombstoneConverge() {
    var origin = TestPeer(5)
    let base = origin.insert(Array("abc".unicodeScalars), at: 0)
    var peers = [TestPeer(1), TestPeer(2), TestPeer(3)]
    for index in peers.indices { peers[index].rga.apply(base) }
    let deltas = [
      peers[0].delete(1..<2),
      peers[1].insert(Array("X".unicodeScalars), at: 2),
      peers[2].insert(Array("Y".unicodeScalars), at: 1),
    ]
    let orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
    var results: [RGA] = []
    for order in orders {
      var rga = RGA()
      rga.apply(base)
      for index in order { rga.apply(deltas[index]) }
      results.append(rga)
    }
    for index in peers.indices {
      for delta in deltas { peers[index].rga.apply(delta) }
      results.append(peers[index].rga)
    }
    for result in results {
      #expect(Bool(result == results[0]), "\(result.string) vs \(results[0].string)")
    }
    #expect(["aXYc", "aYXc"].contains(results[0].string), "\(results[0].string)")
  }

  @Test func mergeIsCommutativeAssociativeAndIdempotent() {
    let start = baseSeed(0x5EED_0002)
    for offset in 0..<UInt64(fuzzIterations(400)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      let alphabet = offset % 2 == 0 ? asciiAlphabet : richAlphabet
      let history = RandomHistory(peers: 3, steps: 24, alphabet: alphabet, using: &random)
      let a = history.peers[0].rga
      let b = history.peers[1].rga
      let c = history.peers[2].rga
      #expect(throws: Never.self) { try checkJoinLaws(a, b, c, seed: seed) }
      let all = a.merging(b).merging(c)
      all._checkInvariants()
      #expect(Bool(all.merging(a) == all), "seed \(seed): absorbs its parts")
      #expect(a.merging(b).string == b.merging(a).string, "seed \(seed)")
    }
  }

  @Test func deltasDecomposeTheirMutators() {
    let start = baseSeed(0x5EED_0003)
    for offset in 0..<UInt64(fuzzIterations(150)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      var history = RandomHistory(peers: 2, steps: 16, alphabet: richAlphabet, using: &random)
      let old = history.peers[0].rga
      var deltas: [RGADelta] = []
      for _ in 0..<3 {
        let delta = history.peers[0].randomEdit(richAlphabet, using: &random)
        deltas.append(delta)
      }
      let new = history.peers[0].rga
      var stepwise = old
      for delta in deltas { stepwise.apply(delta) }
      #expect(Bool(stepwise == new), "seed \(seed): delta equals mutator")
      #expect(Bool(new.merging(deltas[0]) == new), "seed \(seed): re-applying is a no-op")
      let joined = deltas[2].merged(with: deltas[0]).merged(with: deltas[1])
      #expect(Bool(old.merging(joined) == new), "seed \(seed): joined group")
      var reversed = old
      for delta in deltas.reversed() { reversed.apply(delta) }
      #expect(Bool(reversed == new), "seed \(seed): any order")
      let lone = history.peers[1].rga
      #expect(
        lone.merging(deltas[0]).merging(deltas[1])
          == lone.merging(deltas[0].merged(with: deltas[1])),
        "seed \(seed): apply(a); apply(b) == apply(a.merged(b))")
    }
  }

  @Test func deltaSinceIsExact() {
    let start = baseSeed(0x5EED_0004)
    for offset in 0..<UInt64(fuzzIterations(150)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      let history = RandomHistory(peers: 2, steps: 30, alphabet: asciiAlphabet, using: &random)
      let source = history.peers[0].rga
      let peer = history.peers[1].rga
      let peerDots = peer.dots
      let delta = source.delta(since: peerDots)
      for insert in delta.inserts {
        #expect(!peerDots.contains(insert.id), "seed \(seed): resent insert \(insert.id)")
      }
      for delete in delta.deletes {
        #expect(!peerDots.contains(delete.dot), "seed \(seed): resent delete \(delete.dot)")
      }
      #expect(Bool(peer.merging(delta) == peer.merging(source)), "seed \(seed)")
      #expect(source.delta(since: source.dots).isEmpty, "seed \(seed): nothing lacking")
      #expect(Bool(RGA().merging(source.delta(since: CausalContext())) == source), "seed \(seed)")
    }
  }

  @Test func outOfOrderAndDuplicatedDeliveryConverges() {
    let start = baseSeed(0x5EED_0005)
    for offset in 0..<UInt64(fuzzIterations(100)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      let history = RandomHistory(peers: 3, steps: 30, alphabet: richAlphabet, using: &random)
      var inOrder = RGA()
      for delta in history.deltas { inOrder.apply(delta) }
      #expect(inOrder.pendingCount == 0, "seed \(seed)")
      var shuffled = history.deltas + history.deltas.prefix(5)
      shuffled.shuffle(using: &random)
      var receiver = RGA()
      for delta in shuffled { receiver.apply(delta) }
      receiver._checkInvariants()
      #expect(Bool(receiver == inOrder), "seed \(seed)")
      #expect(receiver.pendingCount == 0, "seed \(seed)")
      #expect(receiver.string == inOrder.string, "seed \(seed)")
    }
  }

  @Test func bufferedDeletesWaitForTheirTargets() {
    var writer = TestPeer(1)
    let insert = writer.insert(Array("hello".unicodeScalars), at: 0)
    let delete = writer.delete(1..<4)
    var reader = RGA()
    let early = reader.apply(delete)
    #expect(early.isEmpty && reader.pendingCount == 3 && reader.string.isEmpty)
    let changes = reader.apply(insert)
    #expect(reader.string == "ho" && reader.pendingCount == 0)
    #expect(reader == writer.rga)
    #expect(changes.first?.kind == .insert && changes.first?.scalarRange == 0..<5)
    #expect(changes.dropFirst().first?.scalarRange == 1..<4)
  }

  /// Replaying the returned changes on the old text, with placeholders for inserted
  /// scalars, must put every surviving scalar (and UTF-16 unit) where the new text has it.
  @Test func textChangesReplayOnAPlainString() {
    let start = baseSeed(0x5EED_0006)
    for offset in 0..<UInt64(fuzzIterations(60)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      let history = RandomHistory(peers: 2, steps: 20, alphabet: richAlphabet, using: &random)
      var receiver = RGA()
      for delta in history.deltas.shuffled(using: &random) {
        var mirror: [Unicode.Scalar?] = receiver.scalars
        var mirrorUTF16: [UInt16?] = Array(receiver.string.utf16)
        for change in receiver.apply(delta) {
          switch change.kind {
          case .insert:
            mirror.insert(
              contentsOf: [Unicode.Scalar?](repeating: nil, count: change.scalarRange.count),
              at: change.scalarRange.lowerBound)
            mirrorUTF16.insert(
              contentsOf: [UInt16?](repeating: nil, count: change.utf16Range.count),
              at: change.utf16Range.lowerBound)
          case .delete:
            mirror.removeSubrange(change.scalarRange)
            mirrorUTF16.removeSubrange(change.utf16Range)
          }
        }
        let scalars = receiver.scalars
        let utf16 = Array(receiver.string.utf16)
        #expect(mirror.count == scalars.count && mirrorUTF16.count == utf16.count, "seed \(seed)")
        guard mirror.count == scalars.count, mirrorUTF16.count == utf16.count else { return }
        for (position, kept) in mirror.enumerated() where kept != nil {
          #expect(kept == scalars[position], "seed \(seed) at \(position)")
        }
        for (position, kept) in mirrorUTF16.enumerated() where kept != nil {
          #expect(kept == utf16[position], "seed \(seed) at UTF-16 \(position)")
        }
      }
    }
  }
}

@Suite struct RGAHostileInputTests {
  @Test func malformedDeltasNeverTrapAndLeaveAValidText() {
    let start = baseSeed(0x5EED_0008)
    let edges: [UInt64] = [0, 1, 2, 3, .max - 2, .max - 1, .max, 1 << 62, (1 << 62) - 1]
    for offset in 0..<UInt64(fuzzIterations(100)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      func pick() -> UInt64 {
        Bool.random(using: &random)
          ? edges[Int.random(in: 0..<edges.count, using: &random)]
          : UInt64.random(in: 0...5, using: &random)
      }
      var peer = TestPeer(1)
      _ = peer.insert(Array("hello".unicodeScalars), at: 0)
      var inserts: [RGADelta.Insert] = []
      var deletes: [RGADelta.Delete] = []
      for _ in 0..<6 {
        let replica = ReplicaID(rawValue: UInt64.random(in: 0...2, using: &random))
        inserts.append(
          RGADelta.Insert(
            id: Dot(replica: replica, counter: pick()), lamport: pick(),
            origin: Bool.random(using: &random)
              ? nil : Dot(replica: replica, counter: pick()), rightOrigin: nil,
            scalars: randomScalars(richAlphabet, maxLength: 3, using: &random)))
        deletes.append(
          RGADelta.Delete(
            dot: Dot(replica: replica, counter: pick()),
            target: Dot(replica: ReplicaID(rawValue: 1), counter: pick()), count: pick(),
            isDescending: Bool.random(using: &random)))
      }
      let delta = RGADelta(inserts: inserts, deletes: deletes)
      var text = peer.rga
      text.apply(delta)
      text._checkInvariants()
      // Forged runs may reuse ids with other content, which the contract rules out, so
      // only safety is checked here: no trap, consistent storage, usable afterwards.
      var other = RGA()
      other.apply(delta)
      other.merge(peer.rga)
      other._checkInvariants()
      text.insert(
        "x".unicodeScalars, at: 2, firstDot: Dot(replica: ReplicaID(rawValue: 9), counter: 1))
      text.delete(0..<3, firstDot: Dot(replica: ReplicaID(rawValue: 9), counter: 2))
      text._checkInvariants()
      _ = text.delta(since: CausalContext())
      _ = text.dots
    }
  }
}
