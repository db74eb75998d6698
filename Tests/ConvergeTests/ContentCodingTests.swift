import ConvergeTestSupport
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeCore
@testable import ConvergeDocument

/// The coded form of text content (`FORMAT.md` §8.3.1): a canonical, length-limited
/// Huffman code of the UTF-8, chosen exactly when it is shorter.
@Suite struct ContentCodingTests {
  /// Prose-like bytes: letters, spaces and punctuation with skewed frequencies, and now
  /// and then a scalar outside ASCII.
  static func prose(count: Int, using random: inout SeededGenerator) -> [UInt8] {
    let common = Array("etaoin shrdlu".utf8)
    let rare = Array("ETAOINSHRDLUcmfwypvbgkqjxz0123456789.,;:!?()[]{}\\$%\n".utf8)
    var bytes: [UInt8] = []
    while bytes.count < count {
      switch Int.random(in: 0..<100, using: &random) {
      case 0..<70: bytes.append(common.randomElement(using: &random) ?? 0x20)
      case 70..<98: bytes.append(rare.randomElement(using: &random) ?? 0x20)
      default: bytes.append(contentsOf: Array("é🌱".utf8))
      }
    }
    return bytes
  }

  /// The content field `ContentCoding.write` writes for `content`.
  static func field(_ content: [UInt8]) -> [UInt8] {
    var writer = ByteWriter()
    ContentCoding.write(content, to: &writer)
    var reader = ByteReader(writer.bytes)
    // The length written first must be the field's: nothing may follow it.
    guard let field = try? Array(reader.readLengthPrefixedBytes()), reader.remainingCount == 0
    else { return [] }
    return field
  }

  static func decode(_ field: [UInt8]) throws -> [UInt8] {
    // A slice that does not start at 0, as a field inside a message is.
    let message = [0xAA, 0xBB] + field
    return Array(try ContentCoding.decode(message[2...], offset: 2))
  }

  /// The cost of an optimal (unlimited) Huffman code: the sum of every join's weight.
  static func optimalBits(_ frequencies: [Int]) -> Int {
    var weights = frequencies.filter { $0 > 0 }.sorted()
    guard weights.count > 1 else { return weights.first ?? 0 }
    var cost = 0
    while weights.count > 1 {
      let joined = weights.removeFirst() + weights.removeFirst()
      cost += joined
      let index = weights.firstIndex { $0 > joined } ?? weights.count
      weights.insert(joined, at: index)
    }
    return cost
  }

  @Test func roundTripsAndIsCodedExactlyWhenShorter() throws {
    try forEachSeed(count: 300, base: 0xC0DE) { random in
      let count = Int.random(in: 0..<3_000, using: &random)
      let content: [UInt8]
      switch Int.random(in: 0..<4, using: &random) {
      case 0: content = Self.prose(count: count, using: &random)
      case 1: content = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
      case 2: content = [UInt8](repeating: UInt8.random(in: 0...0x7F, using: &random), count: count)
      default: content = (0..<count).map { _ in UInt8.random(in: 0x61...0x62, using: &random) }
      }
      let field = Self.field(content)
      let decoded = try Self.decode(field)
      #expect(decoded == content)
      // The coded field's size counted from its parts as written: the marker, the
      // length, the table, and the bits of every byte's code.
      let frequencies = ContentCoding.frequencies(content[...])
      let lengths = ContentCoding.codeLengths(frequencies: frequencies)
      var header = ByteWriter()
      header.writeUInt8(ContentCoding.marker)
      header.writeVarUInt(content.count)
      ContentCoding.writeTable(lengths, to: &header)
      let bits = (0..<256).reduce(0) { $0 + frequencies[$1] * Int(lengths[$1]) }
      let coded = header.count + (bits + 7) / 8
      let shouldCode = content.count >= ContentCoding.minimumCodedLength && coded < content.count
      #expect((field.first == ContentCoding.marker) == shouldCode)
      #expect(field.count == (shouldCode ? coded : content.count))
    }
  }

  @Test func codeLengthsAreCompleteLimitedAndMonotone() throws {
    try forEachSeed(count: 500, base: 0x1E9) { random in
      var frequencies = [Int](repeating: 0, count: 256)
      let symbols = Int.random(in: 1...256, using: &random)
      for symbol in (0..<256).shuffled(using: &random).prefix(symbols) {
        // Exponential spreads make deep trees, which the limit must flatten.
        frequencies[symbol] =
          1 << Int.random(in: 0..<40, using: &random)
          + Int.random(in: 0..<3, using: &random)
      }
      let lengths = ContentCoding.codeLengths(frequencies: frequencies)
      var kraft = 0
      for symbol in 0..<256 {
        #expect((lengths[symbol] > 0) == (frequencies[symbol] > 0))
        #expect(Int(lengths[symbol]) <= ContentCoding.maximumCodeLength)
        if lengths[symbol] > 0 { kraft += 1 << (12 - Int(lengths[symbol])) }
      }
      // Complete (Kraft sum 1), but for a lone symbol's one-bit code.
      #expect(kraft == (symbols == 1 ? 1 << 11 : 1 << 12))
      for a in 0..<256 where frequencies[a] > 0 {
        for b in 0..<256 where frequencies[b] > frequencies[a] {
          #expect(lengths[b] <= lengths[a])
        }
      }
    }
  }

  @Test func unlimitedCodesAreOptimal() throws {
    try forEachSeed(count: 300, base: 0x0B7) { random in
      var frequencies = [Int](repeating: 0, count: 256)
      for _ in 0..<Int.random(in: 2...300, using: &random) {
        frequencies[Int.random(in: 0..<96, using: &random)] += Int.random(
          in: 1...50, using: &random)
      }
      let lengths = ContentCoding.codeLengths(frequencies: frequencies)
      let bits = (0..<256).reduce(0) { $0 + frequencies[$1] * Int(lengths[$1]) }
      // Such frequencies never need codes longer than 12 bits: the code is optimal.
      #expect(bits == Self.optimalBits(frequencies))
    }
  }

  @Test func fibonacciFrequenciesAreLimitedTo12Bits() throws {
    // Fibonacci weights make the deepest possible Huffman tree (one more level a symbol).
    var frequencies = [Int](repeating: 0, count: 256)
    var (a, b) = (1, 1)
    for symbol in 0..<40 {
      frequencies[symbol] = a
      (a, b) = (b, a + b)
    }
    let lengths = ContentCoding.codeLengths(frequencies: frequencies)
    #expect(lengths.max() == 12)
    var content: [UInt8] = []
    for symbol in 0..<12 {
      content += [UInt8](repeating: UInt8(symbol), count: frequencies[symbol])
    }
    content += Array(0..<40)
    #expect(try Self.decode(Self.field(content)) == content)
  }

  @Test func everyOtherFormIsRefused() throws {
    var random = SeededGenerator(seed: baseSeed(0xF0F))
    let content = Self.prose(count: 500, using: &random)
    let field = Self.field(content)
    try #require(field.first == ContentCoding.marker)
    // The same content raw, though the code is shorter.
    #expect(throws: ConvergeDecodingError.self) { try Self.decode(content) }
    // Short content coded, though short content is always raw.
    let short = Array("a short note body".utf8)
    #expect(Self.field(short) == short)
    // A padding bit set (on content whose bits do not fill their last byte), a byte too
    // many, a byte too few.
    var withPadding = content
    func codedBits(_ bytes: [UInt8]) -> Int {
      let frequencies = ContentCoding.frequencies(bytes[...])
      let lengths = ContentCoding.codeLengths(frequencies: frequencies)
      return (0..<256).reduce(0) { $0 + frequencies[$1] * Int(lengths[$1]) }
    }
    while codedBits(withPadding).isMultiple(of: 8) { withPadding.append(0x65) }
    var padded = Self.field(withPadding)
    try #require(padded.first == ContentCoding.marker)
    padded[padded.count - 1] |= 1
    #expect(throws: ConvergeDecodingError.self) { try Self.decode(padded) }
    #expect(throws: ConvergeDecodingError.self) { try Self.decode(field + [0]) }
    #expect(throws: ConvergeDecodingError.self) { try Self.decode(Array(field.dropLast())) }
    // A length that the bits cannot hold is refused before allocating.
    var writer = ByteWriter()
    writer.writeUInt8(ContentCoding.marker)
    writer.writeVarUInt(UInt64.max)
    writer.writeVarUInt(1)
    writer.writeUInt8(0x10)  // byte value 0 has a 1-bit code
    #expect(throws: ConvergeDecodingError.countTooLarge(offset: 3)) {
      try Self.decode(writer.bytes + [0, 0])
    }
  }

  /// A code table for `lengths` written by hand: `split` cuts each gap of unused values
  /// into skips, `trailing` nibbles follow the last used value (`symbolCount` covers
  /// them), and an odd count of nibbles is padded with `padding`.
  static func table(
    _ lengths: [UInt8], symbolCount: Int? = nil, split: (Int) -> [Int],
    trailing: [UInt8] = [], padding: UInt8 = 0
  ) -> [UInt8] {
    let used = (lengths.lastIndex { $0 > 0 } ?? -1) + 1
    var nibbles: [UInt8] = []
    var symbol = 0
    while symbol < used {
      var gap = 0
      while lengths[symbol + gap] == 0 { gap += 1 }
      for run in split(gap) {
        nibbles +=
          run > 16 ? [13, UInt8((run - 17) >> 4), UInt8((run - 17) & 15)] : [0, UInt8(run - 1)]
      }
      symbol += gap
      nibbles.append(lengths[symbol])
      symbol += 1
    }
    nibbles += trailing
    if !nibbles.count.isMultiple(of: 2) { nibbles.append(padding) }
    var writer = ByteWriter()
    writer.writeVarUInt(symbolCount ?? used)
    for pair in stride(from: 0, to: nibbles.count, by: 2) {
      writer.writeUInt8(nibbles[pair] << 4 | nibbles[pair + 1])
    }
    return writer.bytes
  }

  @Test func tablesWrittenAnotherWayAreRefused() throws {
    // The lengths alone do not pin the table down: a gap could be cut into other skips,
    // the table could describe unused values past the last used one, and padding could
    // be any nibble. Only the one way is accepted, so a content has one encoding.
    func canonicalSplit(_ gap: Int) -> [Int] {
      var runs = [Int](repeating: 272, count: gap / 272)
      if gap % 272 > 0 { runs.append(gap % 272) }
      return runs
    }
    var paddingTried = false
    try forEachSeed(count: 20, base: 0x7AB) { random in
      var content = Self.prose(count: Int.random(in: 300..<900, using: &random), using: &random)
      content += [0x01, 0xFE, 0xFE]  // a first gap of 1, and long gaps
      let field = Self.field(content)
      try #require(field.first == ContentCoding.marker)
      let lengths = ContentCoding.codeLengths(frequencies: ContentCoding.frequencies(content[...]))
      var written = ByteWriter()
      ContentCoding.writeTable(lengths, to: &written)
      let canonical = Self.table(lengths, split: canonicalSplit)
      try #require(canonical == written.bytes)
      var header = ByteWriter()
      header.writeUInt8(ContentCoding.marker)
      header.writeVarUInt(content.count)
      let bits = Array(field[(header.bytes.count + canonical.count)...])
      func coded(table: [UInt8]) -> [UInt8] { header.bytes + table + bits }
      try #require(try Self.decode(coded(table: canonical)) == content)
      let used = (lengths.lastIndex { $0 > 0 } ?? 0) + 1
      var others = [
        // A gap of 2 or more cut into two skips; one of more than 16 into two short ones.
        Self.table(lengths, split: { $0 > 1 ? [1] + canonicalSplit($0 - 1) : canonicalSplit($0) }),
        Self.table(lengths, split: { $0 > 16 ? [16, $0 - 16] : canonicalSplit($0) }),
        // An unused value described after the last used one.
        Self.table(lengths, symbolCount: used + 1, split: canonicalSplit, trailing: [0, 0]),
      ]
      let padded = Self.table(lengths, split: canonicalSplit, padding: 5)
      if padded != canonical {
        others.append(padded)
        paddingTried = true
      }
      for table in others {
        #expect(table != canonical)
        #expect(throws: ConvergeDecodingError.self) { try Self.decode(coded(table: table)) }
      }
    }
    #expect(paddingTried)
  }

  @Test func damagedCodedFieldsAreRefusedOrCanonical() throws {
    // Whatever a damaged field decodes to, it is the one encoding of that content.
    try forEachSeed(count: 2_000, base: 0xDA3) { random in
      let content = Self.prose(count: Int.random(in: 64..<600, using: &random), using: &random)
      var field = Self.field(content)
      for _ in 0..<Int.random(in: 1...3, using: &random) {
        let index = Int.random(in: 0..<field.count, using: &random)
        switch Int.random(in: 0..<3, using: &random) {
        case 0: field[index] ^= 1 << UInt8.random(in: 0..<8, using: &random)
        case 1: field[index] = UInt8.random(in: 0...255, using: &random)
        default: field.remove(at: index)
        }
      }
      if let decoded = try? Self.decode(field) {
        #expect(Self.field(decoded) == field)
      }
    }
  }
}

/// Coded content inside documents and deltas.
@Suite struct CodedTextMessageTests {
  static let note = EntityKey(type: "note", id: "n1")

  /// A note whose body is a few hundred bytes of prose, typed, pasted and partly deleted
  /// on two replicas: its state and deltas carry coded content.
  static func longNote(seed: UInt64) -> (state: Document, delta: DocumentDelta) {
    var random = SeededGenerator(seed: seed)
    var phone = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(0))
    var laptop = Replica(id: ReplicaID(rawValue: 0xB2), wallClock: .fixed(0))
    let prose = String(
      decoding: ContentCodingTests.prose(count: 400, using: &random), as: UTF8.self)
    let created = phone.transact { tx in
      tx.create(note)
      tx.insertText(prose, at: 0, in: "body", of: note)
    }
    laptop.apply(created.delta)
    let fork = laptop.context
    laptop.transact { tx in
      tx.deleteText(10..<60, in: "body", of: note)
      tx.insertText(prose, at: 100, in: "body", of: note)
    }
    return (laptop.document, laptop.delta(since: fork))
  }

  /// States and deltas with long texts decode to what was encoded and re-encode
  /// exactly; coded, the state is smaller than its text.
  @Test func longTextsTravelCodedAndRoundTrip() throws {
    let (state, delta) = Self.longNote(seed: baseSeed(0x10E))
    let stateBytes = state.encoded()
    let deltaBytes = delta.encoded()
    #expect(try Document(decoding: stateBytes) == state)
    #expect(try Document(decoding: stateBytes).encoded() == stateBytes)
    #expect(try DocumentDelta(decoding: deltaBytes) == delta)
    #expect(try DocumentDelta(decoding: deltaBytes).encoded() == deltaBytes)
    // The body holds over 700 bytes of UTF-8; coded, the whole state is smaller.
    let body = state.text(of: "body", in: Self.note)
    #expect(body.utf8.count > 700)
    #expect(stateBytes.count < body.utf8.count)
    var restored = try Replica(restoring: stateBytes, wallClock: .fixed(0))
    #expect(restored.document == state)
    restored.transact { $0.insertText("!", at: 0, in: "body", of: Self.note) }
    #expect(restored.document.text(of: "body", in: Self.note) == "!" + body)
  }

  /// A text edit message carries its scalars as UTF-8, uncoded (the records of a frame);
  /// the earlier form coded them as a state does.
  @Test func aPastedParagraphTakesTheTextEditForm() throws {
    var random = SeededGenerator(seed: baseSeed(0x9A5))
    var replica = Replica(id: ReplicaID(rawValue: 0xC3), wallClock: .fixed(0))
    replica.transact { $0.insertText("Notes: ", at: 0, in: "body", of: Self.note) }
    for length in [40, 63, 64, 65, 200, 2_000] {
      let pasted = String(
        decoding: ContentCodingTests.prose(count: length, using: &random), as: UTF8.self)
      let delta = replica.transact { $0.insertText(pasted, at: 3, in: "body", of: Self.note) }
        .delta
      let bytes = delta.encoded()
      #expect(bytes[5] == MessageKind.textEditDelta.rawValue)
      #expect(try DocumentDelta(decoding: bytes) == delta)
      // The envelope, the target and author records, the insert record, the UTF-8.
      #expect(bytes.count <= pasted.utf8.count + 50, "\(length) bytes pasted")
      let legacy = delta.legacyEncoded()
      #expect(try DocumentDelta(decoding: legacy) == delta)
      if length >= 2_000 { #expect(legacy.count < pasted.utf8.count) }
    }
  }
}

@Suite struct CodedTextFixtureTests {
  @Test func fixtureDecodesAndReencodesExactly() throws {
    let url = try #require(
      Bundle.module.url(
        forResource: "text-coded-v2.bin", withExtension: nil, subdirectory: "Fixtures"),
      "fixture text-coded-v2.bin missing from the test bundle")
    let bytes = Array(try Data(contentsOf: url))
    let document = try Document(decoding: bytes)
    #expect(document == CodedTextFixture.document)
    #expect(document.encoded() == bytes)
    let body = document.text(of: "body", in: CodedTextFixture.note)
    #expect(body == String(CodedTextFixture.paragraph.dropFirst(8)))
    // Coded, the whole state is smaller than the body's UTF-8 alone.
    #expect(bytes.count < body.utf8.count)
  }
}
