import Converge
import ConvergeTestSupport
import Testing

/// Anchors stay on their character through edits from any replica, resolve alike on every
/// converged replica, and encode to a few bytes that decode with typed errors.
@Suite struct TextAnchorTests {
  static func text(_ string: String, replica: UInt64 = 1) -> SharedText {
    var text = SharedText(replica: ReplicaID(rawValue: replica))
    _ = text.insert(string, at: 0)
    return text
  }

  /// The README's sample, verbatim.
  @Test func readmeSampleKeepsTheCursorBeforeW() {
    var body = SharedText(replica: ReplicaID(rawValue: 1))
    _ = body.insert("Hello world", at: 0)
    let cursor = body.anchor(at: 6)  // before "w"; cursor.encoded() is 10 bytes
    _ = body.insert("big ", at: 6)  // a paste from another device, say
    let offset = body.utf16Offset(of: cursor)  // 10: still before "w"
    #expect(offset == 10)
    #expect(cursor.encoded().count == 10)
  }

  /// The `TextAnchor` documentation's sample, verbatim.
  @Test func docCommentSampleKeepsTheCursorBeforeW() {
    var text = SharedText(replica: ReplicaID(rawValue: 1))
    _ = text.insert("Hello world", at: 0)
    let cursor = text.anchor(at: 6)  // before "w"
    _ = text.insert("big ", at: 6)  // typed at the cursor by another device, say
    let offset = text.position(of: cursor)  // 10: still before "w"
    #expect(offset == 10)
  }

  /// The `Document` anchors' documentation sample, verbatim, on a note body.
  @Test func documentAnchorsKeepANoteBodysCursor() {
    let note = EntityKey(type: "note", id: "n1")
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(0))
    laptop.apply(phone.transact { $0.insertText("Standup", at: 0, in: "body", of: note) }.delta)
    let fromLaptop = laptop.transact { $0.insertText("Monday ", at: 0, in: "body", of: note) }.delta
    var document = phone.document
    let cursor = document.anchor(at: 7, affinity: .preceding, inText: "body", of: note)
    document.apply(fromLaptop)  // another device typed before the cursor
    let offset = document.utf16Offset(of: cursor, inText: "body", of: note)
    #expect(offset == 14)
    #expect(document.position(of: cursor, inText: "body", of: note) == 14)
    // A text that does not exist yet has only its start and end.
    let missing = document.anchor(at: 3, inText: "summary", of: note)
    #expect(missing.character == nil)
    #expect(document.position(of: missing, inText: "summary", of: note) == 0)
    #expect(document.position(of: cursor, inText: "summary", of: note) == nil)
  }

  @Test func aCursorStaysBeforeItsCharacterThroughARemotePasteAndDeletes() {
    var phone = Self.text("Hello world")
    var laptop = SharedText(replica: ReplicaID(rawValue: 2))
    laptop.merge(phone)
    let cursor = phone.anchor(at: 6)  // before "w"
    #expect(phone.position(of: cursor) == 6)
    // The laptop pastes at the cursor's place and deletes "Hello".
    let paste = laptop.insert("big ", at: 6)
    let cut = laptop.delete(0..<5)
    _ = phone.apply(paste)
    _ = phone.apply(cut)
    #expect(phone.string == " big world")
    #expect(phone.position(of: cursor) == 5)
    #expect(laptop.position(of: cursor) == 5)
    // The same position bound the other way keeps before the paste.
    let preceding = phone.anchor(at: 1, affinity: .preceding)  // after " "
    _ = phone.insert("!", at: 1)
    #expect(phone.position(of: preceding) == 1)
  }

  @Test func anAnchorWhoseCharacterIsDeletedSticksToTheGap() {
    var text = Self.text("abcdef")
    let following = text.anchor(at: 3)  // before "d"
    let preceding = text.anchor(at: 4, affinity: .preceding)  // after "d"
    _ = text.delete(2..<5)  // "cde"
    #expect(text.string == "abf")
    #expect(text.position(of: following) == 2)
    #expect(text.position(of: preceding) == 2)
    _ = text.insert("XY", at: 2)
    // Text typed into the gap goes right after "b", before the deleted characters, so
    // both anchors (bound to deleted ones) stay after it, on the side of "f".
    #expect(text.string == "abXYf")
    #expect(text.position(of: following) == 4)
    #expect(text.position(of: preceding) == 4)
  }

  @Test func theStartAndEndAnchorsFollowTheText() {
    var text = Self.text("ab")
    let end = text.anchor(at: 2)
    let start = text.anchor(at: 0, affinity: .preceding)
    #expect(end.character == nil && start.character == nil)
    _ = text.insert("xy", at: 2)
    _ = text.insert("0", at: 0)
    #expect(text.position(of: end) == 5)
    #expect(text.position(of: start) == 0)
  }

  @Test func utf16OffsetsAndIndexesCountSurrogatePairs() {
    var text = Self.text("a😀b😀c")
    let beforeC = text.anchor(at: 4)
    #expect(text.position(of: beforeC) == 4)
    #expect(text.utf16Offset(of: beforeC) == 6)
    let string = text.string
    #expect(text.index(of: beforeC, in: string).map { string[$0] } == "c")
    _ = text.insert("🎉", at: 0)
    #expect(text.utf16Offset(of: beforeC) == 8)
    let selection = text.selection(1..<3)  // "a😀"
    #expect(text.utf16Range(of: selection) == 2..<5)
    _ = text.insert("é", at: 2)  // inside the selection
    #expect(text.range(of: selection) == 1..<4)
  }

  @Test func aSelectionDoesNotGrowAtItsEdgesAndACursorIsOneAnchor() {
    var text = Self.text("one two three")
    let selection = text.selection(4..<7)  // "two"
    _ = text.insert("[", at: 4)
    _ = text.insert("]", at: 8)
    #expect(text.range(of: selection) == 5..<8)
    let cursor = text.selection(3..<3)
    #expect(cursor.start == cursor.end)
    _ = text.delete(0..<text.count)
    #expect(text.range(of: selection) == 0..<0)
  }

  @Test func anAnchorFromAReplicaThatHasNotArrivedResolvesToNil() {
    let phone = Self.text("abc")
    let laptop = SharedText(replica: ReplicaID(rawValue: 2))
    let anchor = phone.anchor(at: 1)
    #expect(laptop.position(of: anchor) == nil)
    #expect(laptop.range(of: phone.selection(0..<2)) == nil)
  }

  /// Random edits on three replicas, anchors taken at random moments on random replicas;
  /// once every delta has arrived (in a different order at each replica), every replica
  /// resolves every anchor to the same place, and an anchor whose character survives
  /// is still next to it.
  @Test func anchorsResolveAlikeOnEveryConvergedReplica() throws {
    try forEachSeed(count: 60, base: 0xA7C4) { random in
      var replicas = (1...3).map { SharedText(replica: ReplicaID(rawValue: UInt64($0))) }
      var deltas: [RGADelta] = []
      var anchors: [TextAnchor] = []
      for _ in 0..<Int.random(in: 20...60, using: &random) {
        let at = Int.random(in: 0..<3, using: &random)
        if Bool.random(using: &random), let delta = deltas.randomElement(using: &random) {
          _ = replicas[at].apply(delta)
          continue
        }
        let count = replicas[at].count
        if count > 0, Int.random(in: 0..<3, using: &random) == 0 {
          let start = Int.random(in: 0..<count, using: &random)
          let end = Int.random(in: start...Swift.min(count, start + 3), using: &random)
          deltas.append(replicas[at].delete(start..<end))
        } else {
          let position = Int.random(in: 0...count, using: &random)
          let letters = (0..<Int.random(in: 1...4, using: &random)).map { _ in
            "abcdefgh".randomElement(using: &random).map(String.init) ?? "a"
          }
          deltas.append(replicas[at].insert(letters.joined(), at: position))
        }
        let affinity: TextAnchor.Affinity = Bool.random(using: &random) ? .following : .preceding
        anchors.append(
          replicas[at].anchor(
            at: Int.random(in: 0...replicas[at].count, using: &random),
            affinity: affinity))
      }
      for index in replicas.indices {
        for delta in deltas.shuffled(using: &random) { _ = replicas[index].apply(delta) }
      }
      let string = replicas[0].string
      for anchor in anchors {
        let positions = replicas.map { $0.position(of: anchor) }
        guard let position = positions[0], positions.allSatisfy({ $0 == position }) else {
          throw LawViolation(
            law: "anchor \(anchor) resolves to \(positions) in \(string)", witnesses: [])
        }
        guard let character = anchor.character else { continue }
        // Taking an anchor again at the resolved place gives the same one while its
        // character is visible.
        let again = replicas[0].anchor(at: position, affinity: anchor.affinity)
        // Its character is visible when its two sides are one character apart.
        let after = replicas[0].position(of: TextAnchor(character: character, affinity: .preceding))
        let before = replicas[0].position(
          of: TextAnchor(character: character, affinity: .following))
        let visible = after.map { $0 - (before ?? $0) } == 1
        if visible && again != anchor {
          throw LawViolation(
            law: "anchor \(anchor) at \(position) is now \(again) in \(string)", witnesses: [])
        }
      }
    }
  }

  @Test func anchorsEncodeToAFewBytesAndRejectDamage() throws {
    let text = Self.text("hello")
    let anchors = [
      text.anchor(at: 2), text.anchor(at: 2, affinity: .preceding), text.anchor(at: 5),
      text.anchor(at: 0, affinity: .preceding),
    ]
    for anchor in anchors {
      let bytes = anchor.encoded()
      #expect(bytes.count <= 19)
      #expect(try TextAnchor(decoding: bytes) == anchor)
      // Every truncation is a typed error; every single-byte change decodes to some
      // anchor or throws a typed error, never traps.
      for length in 0..<bytes.count {
        #expect(throws: ConvergeDecodingError.self) {
          try TextAnchor(decoding: Array(bytes[..<length]))
        }
      }
      for index in bytes.indices {
        for value in [UInt8(0), 0x01, 0x7F, 0x80, 0xFF] {
          var damaged = bytes
          damaged[index] = value
          _ = try? TextAnchor(decoding: damaged)
        }
      }
      #expect(throws: ConvergeDecodingError.self) { try TextAnchor(decoding: bytes + [0]) }
    }
    #expect(throws: ConvergeDecodingError.unsupportedVersion(2)) {
      try TextAnchor(decoding: [0x20])
    }
    let selection = text.selection(1..<4)
    #expect(try SelectionAnchors(decoding: selection.encoded()) == selection)
  }
}

/// A list row reads a body's length and first characters without building the text.
@Suite struct TextPrefixTests {
  @Test func prefixAndLengthOfANoteBodyMatchTheWholeText() throws {
    try forEachSeed(count: 40, base: 0x9F1) { random in
      var text = SharedText(replica: ReplicaID(rawValue: 1))
      for _ in 0..<Int.random(in: 1...200, using: &random) {
        let count = text.count
        if count > 0, Int.random(in: 0..<4, using: &random) == 0 {
          let start = Int.random(in: 0..<count, using: &random)
          _ = text.delete(start..<Swift.min(count, start + Int.random(in: 1...5, using: &random)))
        } else {
          let piece = ["a", "é", "😀", "word "].randomElement(using: &random) ?? "a"
          _ = text.insert(piece, at: Int.random(in: 0...count, using: &random))
        }
      }
      let whole = Array(text.string.unicodeScalars)
      for length in [0, 1, 7, 80, whole.count, whole.count + 3] {
        let expected = String(String.UnicodeScalarView(whole.prefix(length)))
        guard text.rga.prefix(length) == expected else {
          throw LawViolation(law: "prefix(\(length)) of \(text.string)", witnesses: [])
        }
      }
    }
    let note = EntityKey(type: "note", id: "n")
    var replica = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(0))
    replica.transact { $0.insertText("Groceries: milk, eggs", at: 0, in: "body", of: note) }
    let body = replica.document.sequence(of: "body", in: note)
    #expect(body?.count == 21)
    #expect(body?.prefix(9) == "Groceries")
  }
}
