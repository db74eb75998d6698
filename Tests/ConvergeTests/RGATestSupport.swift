import Converge
import ConvergeTestSupport

/// Scalars the random tests draw from: ASCII, accents, a combining mark, an emoji
/// outside the BMP, the pieces of a ZWJ family, CJK.
let richAlphabet: [Unicode.Scalar] = Array(
  "ab é\u{301}😀👩\u{200D}👧中文\n".unicodeScalars)
let asciiAlphabet: [Unicode.Scalar] = Array("abcdefgh ".unicodeScalars)
/// Scalars of one UTF-8 width each (three bytes; four bytes), whose runs locate an offset
/// without counting, and two widths (two and four bytes) that average three bytes a
/// scalar like the first, which must still be counted.
let threeByteAlphabet: [Unicode.Scalar] = Array("中文字\u{E000}".unicodeScalars)
let fourByteAlphabet: [Unicode.Scalar] = Array("😀🌱👩".unicodeScalars)
let twoAndFourByteAlphabet: [Unicode.Scalar] = Array("éñ😀🌱".unicodeScalars)

func randomScalars<G: RandomNumberGenerator>(
  _ alphabet: [Unicode.Scalar], maxLength: Int, using random: inout G
) -> [Unicode.Scalar] {
  let length = Int.random(in: 1...maxLength, using: &random)
  return (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] }
}

/// One editing replica in a random test: an RGA plus its dot counter.
struct TestPeer {
  var rga = RGA()
  let replica: ReplicaID
  var next: UInt64 = 1

  init(_ raw: UInt64) {
    replica = ReplicaID(rawValue: raw)
  }

  mutating func insert(_ scalars: [Unicode.Scalar], at position: Int) -> RGADelta {
    defer { next += UInt64(scalars.count) }
    return rga.insert(scalars, at: position, firstDot: Dot(replica: replica, counter: next))
  }

  mutating func delete(_ range: Range<Int>) -> RGADelta {
    defer { next += UInt64(range.count) }
    return rga.delete(range, firstDot: Dot(replica: replica, counter: next))
  }

  /// One random local edit; returns its delta.
  mutating func randomEdit<G: RandomNumberGenerator>(
    _ alphabet: [Unicode.Scalar], using random: inout G
  ) -> RGADelta {
    if rga.count > 0, Int.random(in: 0..<3, using: &random) == 0 {
      let lower = Int.random(in: 0..<rga.count, using: &random)
      let upper = Int.random(in: lower + 1...Swift.min(rga.count, lower + 4), using: &random)
      return delete(lower..<upper)
    }
    let position = Int.random(in: 0...rga.count, using: &random)
    return insert(randomScalars(alphabet, maxLength: 4, using: &random), at: position)
  }
}

/// A random multi-replica history: peers edit and receive a random subset of the others'
/// deltas in random order, so states hold buffered items too.
struct RandomHistory {
  var peers: [TestPeer]
  var deltas: [RGADelta] = []

  init<G: RandomNumberGenerator>(
    peers count: Int, steps: Int, alphabet: [Unicode.Scalar], using random: inout G
  ) {
    // Replica ids in random order so tie-breaks go both ways.
    var ids: [UInt64] = []
    while ids.count < count {
      let id = UInt64.random(in: 1...1000, using: &random)
      if !ids.contains(id) { ids.append(id) }
    }
    peers = ids.map { TestPeer($0) }
    for _ in 0..<steps {
      let actor = Int.random(in: 0..<count, using: &random)
      if !deltas.isEmpty, Int.random(in: 0..<3, using: &random) == 0 {
        let delta = deltas[Int.random(in: 0..<deltas.count, using: &random)]
        peers[actor].rga.apply(delta)
      } else {
        deltas.append(peers[actor].randomEdit(alphabet, using: &random))
      }
    }
  }
}
