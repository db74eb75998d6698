import Converge
import ConvergeTestSupport
import Testing

@Suite struct RGATests {
  @Test func insertAndDeleteBasics() {
    var peer = TestPeer(1)
    _ = peer.insert(Array("hello".unicodeScalars), at: 0)
    _ = peer.insert(Array(" world".unicodeScalars), at: 5)
    _ = peer.insert(Array("!".unicodeScalars), at: 99)  // clamped
    #expect(peer.rga.string == "hello world!")
    _ = peer.delete(0..<6)
    #expect(peer.rga.string == "world!")
    _ = peer.delete(3..<100)  // clamped
    #expect(peer.rga.string == "wor")
    _ = peer.delete(-5..<(-1))
    #expect(peer.rga.string == "wor" && peer.rga.count == 3)
    peer.rga._checkInvariants()
  }

  @Test func reusedDotsAreNoOps() {
    var rga = RGA()
    let dot = Dot(replica: ReplicaID(rawValue: 1), counter: 1)
    rga.insert("ab".unicodeScalars, at: 0, firstDot: dot)
    let again = rga.insert("cd".unicodeScalars, at: 0, firstDot: dot)
    #expect(again.isEmpty && rga.string == "ab")
    let overflow = rga.insert(
      "xy".unicodeScalars, at: 0, firstDot: Dot(replica: ReplicaID(rawValue: 1), counter: .max))
    #expect(overflow.isEmpty && rga.string == "ab")
  }

  @Test(arguments: [
    ("ascii", asciiAlphabet), ("rich", richAlphabet), ("three bytes", threeByteAlphabet),
    ("four bytes", fourByteAlphabet), ("two and four bytes", twoAndFourByteAlphabet),
  ])
  func randomEditsMatchAnArrayOracle(name: String, alphabet: [Unicode.Scalar]) {
    let start = baseSeed(0x5EED_0001)
    for offset in 0..<UInt64(fuzzIterations(60)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      var peer = TestPeer(7)
      var oracle: [Unicode.Scalar] = []
      for _ in 0..<60 {
        if !oracle.isEmpty, Bool.random(using: &random) {
          let lower = Int.random(in: 0..<oracle.count, using: &random)
          let upper = Int.random(in: lower...Swift.min(oracle.count, lower + 6), using: &random)
          _ = peer.delete(lower..<upper)
          oracle.removeSubrange(lower..<upper)
        } else {
          let scalars = randomScalars(alphabet, maxLength: 5, using: &random)
          let position = Int.random(in: 0...oracle.count, using: &random)
          _ = peer.insert(scalars, at: position)
          oracle.insert(contentsOf: scalars, at: position)
        }
        peer.rga._checkInvariants()
        #expect(peer.rga.scalars == oracle, "seed \(seed) (\(name))")
      }
      let utf16 = oracle.reduce(0) { $0 + ($1.value > 0xFFFF ? 2 : 1) }
      #expect(peer.rga.utf16Count == utf16, "seed \(seed)")
      let string = String(String.UnicodeScalarView(oracle))
      #expect(peer.rga.string == string, "seed \(seed)")
      let half = oracle.count / 2
      #expect(
        peer.rga.prefix(half) == String(String.UnicodeScalarView(oracle[..<half])), "seed \(seed)")
      var expected = 0
      for (position, scalar) in oracle.enumerated() {
        #expect(peer.rga.utf16Offset(ofScalarOffset: position) == expected, "seed \(seed)")
        #expect(peer.rga.scalarOffset(ofUTF16Offset: expected) == position, "seed \(seed)")
        expected += scalar.value > 0xFFFF ? 2 : 1
      }
    }
  }

  @Test func largeDocumentBuiltByAppendsDoesNotOverflowTheStack() {
    var text = SharedText(replica: ReplicaID(rawValue: 3))
    let letters = Array("abcdefghij".unicodeScalars)
    for position in 0..<200_000 {
      text.edit(
        at: position, deleting: 0, inserting: letters[(position % 10)..<(position % 10 + 1)])
    }
    #expect(text.count == 200_000)
    // Deleting every other scalar fragments the runs into many leaves.
    for position in stride(from: 0, to: 20_000, by: 1) {
      text.edit(at: position, deleting: 1, inserting: letters[0..<0])
    }
    #expect(text.count == 180_000)
    text.rga._checkInvariants()
    let copy = text.rga
    #expect(copy.merging(text.rga) == text.rga)
  }

  @Test func copiesAreIndependent() {
    var text = SharedText(replica: ReplicaID(rawValue: 9))
    text.insert("snapshot", at: 0)
    let snapshot = text
    text.replace(0..<4, with: "X")
    #expect(snapshot.string == "snapshot")
    #expect(text.string == "Xshot")
    snapshot.rga._checkInvariants()
    text.rga._checkInvariants()
  }
}

@Suite struct RGADocumentationExampleTests {
  @Test func theEssayExampleHolds() {
    let a = ReplicaID(rawValue: 1)
    let b = ReplicaID(rawValue: 2)
    var left = RGA()
    let base = left.insert("ac".unicodeScalars, at: 0, firstDot: Dot(replica: a, counter: 1))
    var right = RGA()
    right.apply(base)
    let x = left.insert("b".unicodeScalars, at: 1, firstDot: Dot(replica: a, counter: 3))
    let y = right.insert("X".unicodeScalars, at: 1, firstDot: Dot(replica: b, counter: 1))
    left.apply(y)
    right.apply(x)
    #expect(left.string == "abXc" && right.string == "abXc")
    #expect(Bool(left == right))
  }
}
