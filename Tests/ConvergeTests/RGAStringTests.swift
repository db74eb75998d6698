import Converge
import ConvergeTestSupport
import Testing

/// The visible text as a `String` (``RGA/string``, ``RGA/prefix(_:)``) is built from the
/// content's bytes without the string's own UTF-8 check: its bytes, scalars and UTF-16
/// must be exactly the edits', byte for byte (canonical equality would hide a wrong
/// spelling), for one run and many, with tombstones between them, ASCII or not.
@Suite struct RGAStringTests {
  /// Checks `string` against `scalars` byte for byte and view by view.
  static func check(_ string: String, is scalars: ArraySlice<Unicode.Scalar>) throws {
    let expected = String(String.UnicodeScalarView(scalars))
    try ensure(Array(string.utf8) == Array(expected.utf8), "bytes of \(string) are not \(expected)")
    try ensure(Array(string.unicodeScalars) == Array(scalars), "scalars of \(string)")
    try ensure(Array(string.utf16) == Array(expected.utf16), "UTF-16 of \(string)")
    try ensure(string.count == expected.count, "characters of \(string)")
    // Appending and comparing rely on the string's ASCII flag being right.
    try ensure(string + "é" == expected + "é", "\(string) appended")
  }

  @Test(arguments: [
    ("ascii", asciiAlphabet), ("rich", richAlphabet), ("three bytes", threeByteAlphabet),
    ("four bytes", fourByteAlphabet),
  ])
  func stringsAreTheEditsBytes(name: String, alphabet: [Unicode.Scalar]) throws {
    try forEachSeed(count: 40, base: 0x5781_0000) { random in
      var peer = TestPeer(5)
      var oracle: [Unicode.Scalar] = []
      // One run typed in one go: the string is copied straight from it.
      let typed = randomScalars(alphabet, maxLength: 500, using: &random)
      _ = peer.insert(typed, at: 0)
      oracle = typed
      try Self.check(peer.rga.string, is: oracle[...])
      for _ in 0..<40 {
        if !oracle.isEmpty, Bool.random(using: &random) {
          let lower = Int.random(in: 0..<oracle.count, using: &random)
          let upper = Int.random(in: lower...Swift.min(oracle.count, lower + 9), using: &random)
          _ = peer.delete(lower..<upper)
          oracle.removeSubrange(lower..<upper)
        } else {
          let scalars = randomScalars(alphabet, maxLength: 6, using: &random)
          let position = Int.random(in: 0...oracle.count, using: &random)
          _ = peer.insert(scalars, at: position)
          oracle.insert(contentsOf: scalars, at: position)
        }
        try Self.check(peer.rga.string, is: oracle[...])
        let length = Int.random(in: 0...oracle.count + 2, using: &random)
        try Self.check(peer.rga.prefix(length), is: oracle.prefix(length))
      }
    }
  }

  /// A text decoded from a saved state (its content checked by the decoder) reads as
  /// the text it was saved from.
  @Test func decodedTextsReadByteForByte() throws {
    try forEachSeed(count: 20, base: 0x5781_1000) { random in
      var replica = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(1))
      let key = EntityKey(type: "note", id: "n")
      var oracle: [Unicode.Scalar] = []
      for _ in 0..<30 {
        let scalars = randomScalars(richAlphabet, maxLength: 8, using: &random)
        let position = Int.random(in: 0...oracle.count, using: &random)
        replica.transact {
          $0.insertText(
            String(String.UnicodeScalarView(scalars)), at: position, in: "body", of: key)
        }
        oracle.insert(contentsOf: scalars, at: position)
      }
      let loaded = try Replica(restoring: replica.encodedState())
      try Self.check(loaded.document.text(of: "body", in: key), is: oracle[...])
      try Self.check(replica.document.text(of: "body", in: key), is: oracle[...])
    }
  }
}
