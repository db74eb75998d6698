import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

@Suite struct TextUnicodeTests {
  static let samples = [
    "plain ascii",
    "café au lait",  // precomposed
    "cafe\u{301}",  // combining acute
    "👩‍👩‍👧‍👦 family",  // ZWJ sequence
    "🇫🇷🇯🇵 flags",
    "中文字符 and 日本語",
    "mixed 😀 e\u{301} 中 👍🏽 end",
  ]

  @Test(arguments: samples)
  func utf16AndStringIndexRoundTrip(sample: String) {
    var text = SharedText(replica: ReplicaID(rawValue: 1))
    text.insert(sample, at: 0)
    let string = text.string
    #expect(string == sample)
    #expect(text.utf16Count == sample.utf16.count)
    let scalars = Array(sample.unicodeScalars)
    var utf16 = 0
    for position in 0...scalars.count {
      #expect(text.utf16Offset(ofScalarOffset: position) == utf16, "\(sample) at \(position)")
      #expect(text.scalarOffset(ofUTF16Offset: utf16) == position, "\(sample) at \(position)")
      let index = text.stringIndex(ofScalarOffset: position, in: string)
      #expect(index.utf16Offset(in: string) == utf16)
      #expect(text.scalarOffset(of: index, in: string) == position)
      if position < scalars.count {
        let width = scalars[position].utf16.count
        if width == 2 {
          // Inside a surrogate pair: rounds, never splits.
          #expect(text.scalarOffset(ofUTF16Offset: utf16 + 1, rounding: .down) == position)
          #expect(text.scalarOffset(ofUTF16Offset: utf16 + 1, rounding: .up) == position + 1)
        }
        utf16 += width
      }
    }
  }

  @Test func replacingThroughUTF16RangesNeverSplitsAScalar() {
    var text = SharedText(replica: ReplicaID(rawValue: 2))
    text.insert("a😀b", at: 0)
    // UTF-16 range 2..<3 starts inside the emoji's surrogate pair: the whole emoji goes.
    text.replace(utf16Range: 2..<3, with: "X")
    #expect(text.string == "aXb")
    #expect(text.scalarRange(ofUTF16Range: 0..<1) == 0..<1)
    var emoji = SharedText(replica: ReplicaID(rawValue: 3))
    emoji.insert("👩‍👩‍👧", at: 0)
    #expect(emoji.count == 5 && emoji.utf16Count == 8)
    emoji.delete(0..<1)
    #expect(emoji.string == "\u{200D}👩‍👧")
    #expect(emoji.string.unicodeScalars.allSatisfy { $0.value != 0xFFFD })
  }

  @Test func stringIndexInsideAScalarRoundsDown() {
    var text = SharedText(replica: ReplicaID(rawValue: 4))
    text.insert("é中", at: 0)
    let string = text.string
    // The second UTF-8 byte of "é" is not a scalar boundary.
    let inside = string.utf8.index(after: string.startIndex)
    #expect(text.scalarOffset(of: inside, in: string) == 0)
    #expect(text.scalarOffset(of: string.endIndex, in: string) == 2)
  }

  @Test func concurrentRichTextConverges() {
    let start = baseSeed(0x5EED_0007)
    for offset in 0..<UInt64(fuzzIterations(40)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      var left = SharedText(replica: ReplicaID(rawValue: 10))
      var right = SharedText(replica: ReplicaID(rawValue: 11))
      let samples = Self.samples
      var toRight: [RGADelta] = []
      var toLeft: [RGADelta] = []
      for _ in 0..<10 {
        let sample = samples[Int.random(in: 0..<samples.count, using: &random)]
        if Bool.random(using: &random) {
          let position = Int.random(in: 0...left.count, using: &random)
          toRight.append(left.insert(sample, at: position))
        } else if right.count > 0 {
          let lower = Int.random(in: 0..<right.count, using: &random)
          toLeft.append(right.replace(lower..<Swift.min(right.count, lower + 3), with: sample))
        }
      }
      for delta in toLeft { left.apply(delta) }
      for delta in toRight { right.apply(delta) }
      #expect(left.string == right.string, "seed \(seed)")
      #expect(left.utf16Count == left.string.utf16.count, "seed \(seed)")
      #expect(Bool(left == right), "seed \(seed)")
    }
  }
}

@Suite struct TextSyncTests {
  @Test func mergeAndResumeNeverReuseDots() {
    let phoneID = ReplicaID(rawValue: 1)
    var phone = SharedText(replica: phoneID)
    phone.insert("Hello", at: 0)
    phone.delete(0..<1)
    var laptop = SharedText(replica: ReplicaID(rawValue: 2))
    laptop.merge(phone)
    laptop.insert("J", at: 0)
    // A new session of the phone resumes from stored state: its next dots are fresh.
    var resumed = SharedText(phone.rga, replica: phoneID)
    let delta = resumed.insert("!", at: resumed.count)
    #expect(delta.inserts.first?.id == Dot(replica: phoneID, counter: 7))
    resumed.merge(laptop)
    laptop.apply(delta)
    #expect(resumed.string == "Jello!" && laptop.string == "Jello!")
    #expect(resumed == laptop)
    #expect(laptop.delta(since: resumed.dots).isEmpty)
  }
}

/// The one-pass UTF-8 decoder behind `insertText` against the standard library's scalar
/// and UTF-16 views, on every UTF-8 length's boundaries and on seeded random strings.
@Suite struct StringScalarDecodingTests {
  static func check(_ string: String) throws {
    var storage = string
    let (scalars, utf16Count) = storage.withUTF8 { UTF8Scalars.scalarsAndUTF16Count(ofValid: $0) }
    try ensure(scalars == Array(string.unicodeScalars), "scalars of \(string.debugDescription)")
    try ensure(utf16Count == string.utf16.count, "UTF-16 count of \(string.debugDescription)")
    try checkInsertingTheStringsOwnUTF8(string)
  }

  /// `insertText` hands the string's own UTF-8 to the text, which copies it rather than
  /// encoding the scalars again: the text must come out as the scalars' insert makes it,
  /// at the start, the end and inside an earlier insert.
  static func checkInsertingTheStringsOwnUTF8(_ string: String) throws {
    let replica = ReplicaID(rawValue: 7)
    var storage = string
    var earlier = RGA()
    earlier.insert(Array("aé😀".unicodeScalars), at: 0, firstDot: Dot(replica: replica, counter: 1))
    for position in [0, 1, 3] {
      var encoded = earlier
      var copied = earlier
      let first = Dot(replica: replica, counter: 4)
      let scalars = Array(string.unicodeScalars)
      let expected = encoded.insert(scalars, at: position, firstDot: first)
      let delta = storage.withUTF8 { utf8 in
        copied.insert(
          scalars, content: (utf8, string.utf16.count), at: position, firstDot: first)
      }
      try ensure(delta == expected, "the delta of \(string.debugDescription)")
      try ensure(
        copied == encoded && copied.content == encoded.content
          && copied.utf16Count == encoded.utf16Count && copied.string == encoded.string,
        "the text after inserting \(string.debugDescription) at \(position)")
      copied._checkInvariants()
    }
  }

  @Test func boundariesOfEveryUTF8Length() throws {
    let boundaries: [UInt32] = [
      0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF,
    ]
    try Self.check("")
    for value in boundaries {
      let scalar = try #require(Unicode.Scalar(value))
      try Self.check(String(String.UnicodeScalarView([scalar])))
    }
    for sample in TextUnicodeTests.samples { try Self.check(sample) }
  }

  /// The same decoder validating, as for a wire's text content: it refuses overlong
  /// forms, surrogates, values above U+10FFFF, stray bytes and cut scalars, and reads
  /// valid UTF-8 as the standard library does.
  @Test func validatingRefusesMalformedUTF8AndReadsValid() throws {
    let malformed: [[UInt8]] = [
      [0xC0, 0x80], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
      [0xF0, 0x80, 0x80, 0x80], [0xFF], [0x80], [0x61, 0xE2], [0xF0, 0x9F, 0x98],
    ]
    for bytes in malformed {
      let refused = bytes.withUnsafeBufferPointer { (try? UTF8Scalars.decode($0)) == nil }
      try ensure(refused, "refuses \(bytes)")
    }
    for sample in TextUnicodeTests.samples + ["\u{10FFFF}\u{FFFF}\u{80}"] {
      let decoded = try Array(sample.utf8).withUnsafeBufferPointer { try UTF8Scalars.decode($0) }
      try ensure(decoded.scalars == Array(sample.unicodeScalars), "reads \(sample)")
      try ensure(
        decoded.scalars.count + decoded.supplementary == sample.utf16.count, "UTF-16 of \(sample)")
    }
  }

  /// The checker accepts exactly what the standard library's strict validation accepts,
  /// and counts its scalars and UTF-16 code units: every sequence of up to three bytes
  /// drawn from the bytes where UTF-8's rules change (four after a four-byte lead), alone,
  /// inside a word and across a word's end (the checker reads eight bytes at a time),
  /// then random mixes of valid and malformed pieces.
  @Test func checkerAgreesWithTheStandardLibrary() throws {
    func agree(_ bytes: [UInt8]) throws {
      let counted = try? TextWire.countScalars(bytes[...], offset: 0)
      let string = String(validating: bytes, as: UTF8.self)
      let expected = string.map {
        [$0.unicodeScalars.count, $0.utf16.count - $0.unicodeScalars.count]
      }
      try ensure(
        counted.map { [$0.scalars, $0.supplementary] } == expected,
        "\(bytes): counted \(String(describing: counted)), expected \(String(describing: expected))"
      )
      let decoded = bytes.withUnsafeBufferPointer { try? UTF8Scalars.decode($0) }
      try ensure(
        decoded?.scalars == string.map { Array($0.unicodeScalars) }, "\(bytes): decoded")
    }
    let boundaries: [UInt8] = [
      0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
      0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
    ]
    // Up to three bytes of any kind, and four after a four-byte lead.
    var sequences: [[UInt8]] = [[]]
    var last: [[UInt8]] = [[]]
    for _ in 1...3 {
      last = last.flatMap { prefix in boundaries.map { prefix + [$0] } }
      sequences += last
    }
    sequences += last.filter { $0[0] >= 0xF0 && $0[0] <= 0xF4 }.flatMap { prefix in
      boundaries.map { prefix + [$0] }
    }
    for sequence in sequences {
      try agree(sequence)
      for lead in [5, 7] {
        try agree(Array(repeating: 0x61, count: lead) + sequence + Array("bc".utf8))
      }
    }
    let pieces: [[UInt8]] = [
      Array("milk and eggs ".utf8), Array("é".utf8), Array("中文".utf8), Array("🌱".utf8),
      [0x80], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF0, 0x9F, 0x98], [0xFF], [0x41],
    ]
    try forEachSeed(count: 300, base: 0xC0C7) { random in
      var bytes: [UInt8] = []
      for _ in 0..<Int.random(in: 0..<30, using: &random) {
        // Mostly valid pieces, now and then a malformed one.
        let piece =
          Int.random(in: 0..<100, using: &random) < 95
          ? pieces[Int.random(in: 0..<4, using: &random)]
          : pieces[Int.random(in: 4..<pieces.count, using: &random)]
        bytes += piece
      }
      try agree(bytes)
    }
  }

  @Test func randomStringsDecodeAsTheScalarView() throws {
    try forEachSeed(count: 200, base: 0x5CA1A) { random in
      var view = String.UnicodeScalarView()
      for _ in 0..<Int.random(in: 0..<40, using: &random) {
        // Each UTF-8 length about equally often.
        let ranges: [ClosedRange<UInt32>] = [
          0...0x7F, 0x80...0x7FF, 0x800...0xD7FF, 0x10000...0x10FFFF,
        ]
        let range = ranges[Int.random(in: 0..<ranges.count, using: &random)]
        if let scalar = Unicode.Scalar(UInt32.random(in: range, using: &random)) {
          view.append(scalar)
        }
      }
      try Self.check(String(view))
    }
  }
}

/// `utf8Precedes`, which orders field names, entity keys and string values, agrees with
/// comparing the strings' Unicode scalars, on strings that share long prefixes, differ in
/// length, and mix every UTF-8 length.
@Suite struct UTF8OrderTests {
  @Test func ordersAsTheScalarsDo() throws {
    try forEachSeed(count: 200, base: 0x0DE7) { random in
      func draw() -> String {
        var view = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0..<24, using: &random) {
          // A small alphabet of each UTF-8 length, so prefixes are often shared.
          let alphabet: [UInt32] = [0x61, 0x62, 0x7F, 0xE9, 0x7FF, 0x4E2D, 0xFFFD, 0x1F600]
          if let scalar = Unicode.Scalar(alphabet[Int.random(in: 0..<8, using: &random)]) {
            view.append(scalar)
          }
        }
        return String(view)
      }
      let left = draw()
      let right = Bool.random(using: &random) ? left + draw() : draw()
      for (a, b) in [(left, right), (right, left), (left, left)] {
        let expected = a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
        try ensure(utf8Precedes(a, b) == expected, "\(a.debugDescription) < \(b.debugDescription)")
      }
    }
  }
}
