import ConvergeTestSupport
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeCore
@testable import ConvergeDocument

/// A document state's shared content code (`FORMAT.md` §8.4.1): raw, one table or a table
/// per previous byte, whichever costs least, and nothing else accepted.
@Suite struct DocumentContentCodeTests {
  /// The content form byte of a `documentState` message.
  static func form(of bytes: [UInt8]) throws -> UInt8 {
    try Envelope.decode(bytes, as: .documentState) { reader in
      var table = try DecodedReplicaTable(from: &reader)
      _ = try CausalContext(from: &reader, replicas: &table)
      let form = try reader.readUInt8()
      _ = try reader.readBytes(count: reader.remainingCount)
      return form
    }
  }

  /// The body of `bytes` split where its content code starts and where its entities do.
  static func parts(of bytes: [UInt8]) throws -> (head: [UInt8], code: [UInt8], rest: [UInt8]) {
    let body = Array(try Envelope.open(bytes).body)
    var reader = ByteReader(body)
    var table = try DecodedReplicaTable(from: &reader)
    _ = try CausalContext(from: &reader, replicas: &table)
    let codeStart = reader.offset
    _ = try DocumentContentCode.Reader(from: &reader)
    return (
      Array(body[..<codeStart]), Array(body[codeStart..<reader.offset]),
      Array(body[reader.offset...])
    )
  }

  @Test func eachFormIsChosenWhereItCostsLeast() throws {
    // A short body: no table pays for itself.
    #expect(
      try Self.form(of: TextStateFixtureScenario.document.encoded()) == DocumentContentCode.raw)
    // One paragraph: one table is cheaper than a table per letter.
    #expect(try Self.form(of: CodedTextFixture.document.encoded()) == DocumentContentCode.oneTable)
    // A library sharing its words: a table per previous byte.
    let library = LibraryFixture.document.encoded()
    #expect(try Self.form(of: library) == DocumentContentCode.tablePerContext)
    #expect(library.count < LibraryFixture.document.legacyEncoded().count)
    // A document without text content has nothing to code.
    var tasks = Replica(id: ReplicaID(rawValue: 7), wallClock: .fixed(0))
    tasks.transact { $0.setValue(.string("Call Bob"), for: "title", of: LibraryFixture.note(0)) }
    #expect(try Self.form(of: tasks.document.encoded()) == DocumentContentCode.raw)
  }

  @Test func libraryFixtureDecodesAndReencodesExactly() throws {
    let url = try #require(
      Bundle.module.url(forResource: "library-v2.bin", withExtension: nil, subdirectory: "Fixtures")
    )
    let bytes = Array(try Data(contentsOf: url))
    let document = try Document(decoding: bytes)
    #expect(document == LibraryFixture.document)
    #expect(document.encoded() == bytes)
    #expect(document.text(of: "body", in: LibraryFixture.note(3)).hasPrefix("milk ") == false)
    // Note 3 lost its first word ("Mom "); the others read as typed.
    #expect(
      document.text(of: "body", in: LibraryFixture.note(3))
        == String(LibraryFixture.body(3).dropFirst(4)))
    for index in [0, 1, 11] {
      #expect(
        document.text(of: "body", in: LibraryFixture.note(index)) == LibraryFixture.body(index))
    }
    var restored = try Replica(restoring: bytes, wallClock: .fixed(1_700_000_001_000))
    restored.transact { $0.insertText("!", at: 0, in: "body", of: LibraryFixture.note(0)) }
    #expect(
      restored.document.text(of: "body", in: LibraryFixture.note(0))
        == "!" + document.text(of: "body", in: LibraryFixture.note(0)))
  }

  /// A context whose rarest successors take codes longer than the lookup table reads
  /// (found past the table by their lengths), each followed by more text: the entry found
  /// there must name the next byte's table as a looked-up one does.
  @Test func codesLongerThanTheLookupTableDecodeUnderATablePerContext() throws {
    // After "a", fourteen letters at Fibonacci frequencies (code lengths up to 12 bits);
    // after each letter, "a" again.
    var fibonacci = [1, 1]
    while fibonacci.count < 14 {
      fibonacci.append(fibonacci[fibonacci.count - 1] + fibonacci[fibonacci.count - 2])
    }
    let letters = Array("bcdefghijklmno")
    var body = ""
    for round in 0..<3 {
      for (index, letter) in letters.enumerated() {
        body += String(repeating: "a" + String(letter), count: fibonacci[(index + round) % 14])
      }
    }
    body += "a"
    var replica = Replica(id: ReplicaID(rawValue: 9), wallClock: .fixed(0))
    replica.transact { $0.insertText(body, at: 0, in: "body", of: LibraryFixture.note(0)) }
    let bytes = replica.document.encoded()
    #expect(try Self.form(of: bytes) == DocumentContentCode.tablePerContext)
    var counts = DocumentContentCode.Counts()
    counts.add(Array(body.utf8)[...])
    let code = try #require(
      DocumentContentCode.cheapestCode(
        counts, countBytes: ContentCoding.varUIntSize(body.utf8.count)))
    #expect(code.order == 1)
    #expect(Int(code.lengths.max() ?? 0) > ContentCoding.lookupBits)
    let decoded = try Document(decoding: bytes)
    #expect(decoded.text(of: "body", in: LibraryFixture.note(0)) == body)
    #expect(decoded.encoded() == bytes)
  }

  /// A reader whose lookup entries hold several bytes (``DocumentContentCode/Reader``'s
  /// `extendsEntries`, chosen for a large content) decodes every text as one whose entries
  /// hold one byte: texts of every short length (a content ends inside an entry), several
  /// alphabets of one to four UTF-8 bytes a scalar, skewed ones whose codes outgrow the
  /// lookup table; damaged bits are refused, or decoded, the same way by both.
  @Test func entriesOfSeveralBytesDecodeAsEntriesOfOne() throws {
    let seed = baseSeed(0xE7E4)
    var random = SeededGenerator(seed: seed)
    let alphabets: [[UInt8]] = [
      Array("the quick brown fox, ".utf8), Array("é🌱中文 \n".utf8), Array("ab".utf8),
      Array("abcdefghijklmn".utf8),
    ]
    var longCodes = false
    for round in 0..<fuzzIterations(24) {
      let alphabet = alphabets[round % alphabets.count]
      // The last alphabet at Fibonacci frequencies: codes up to 12 bits.
      var weights = [Int](repeating: 1, count: alphabet.count)
      if round % alphabets.count == 3 {
        for index in 2..<weights.count { weights[index] = weights[index - 1] + weights[index - 2] }
      }
      let total = weights.reduce(0, +)
      func nextByte() -> UInt8 {
        var pick = Int.random(in: 0..<total, using: &random)
        for (index, weight) in weights.enumerated() {
          if pick < weight { return alphabet[index] }
          pick -= weight
        }
        return alphabet[0]
      }
      // Whole scalars of the alphabet's text, however many bytes each takes.
      let scalars = Array(String(decoding: alphabet, as: UTF8.self).unicodeScalars)
      var contents: [[UInt8]] = (0...9).map { length in
        var content: [UInt8] = []
        while content.count < length { content.append(nextByte()) }
        return content
      }
      for _ in 0..<Int.random(in: 1...30, using: &random) {
        let length = Int.random(in: 0...400, using: &random)
        guard scalars.count < alphabet.count else {
          contents.append((0..<length).map { _ in nextByte() })
          continue
        }
        var text = String.UnicodeScalarView()
        for _ in 0..<length { text.append(scalars.randomElement(using: &random) ?? "a") }
        contents.append(Array(String(text).utf8))
      }
      let writer = DocumentContentCode.Writer(contents: contents)
      var header = ByteWriter()
      writer.writeHeader(to: &header)
      var fields: [[UInt8]] = contents.map { content in
        var field = ByteWriter()
        writer.write(content, to: &field)
        var reader = ByteReader(field.bytes)
        return Array((try? reader.readLengthPrefixedBytes()) ?? [])
      }
      if let code = writer.code, Int(code.lengths.max() ?? 0) > ContentCoding.lookupBits {
        longCodes = true
      }
      // Damaged bits in a few fields, after the undamaged ones decode.
      let damaged = Int.random(in: 0..<fields.count, using: &random)
      var outcomes: [String] = []
      for extending in [false, true] {
        var reader = ByteReader(header.bytes)
        var content = try DocumentContentCode.Reader(from: &reader, extending: extending)
        #expect(content.extendsEntries == extending)
        for (field, original) in zip(fields, contents) {
          #expect(try content.decode(field[...], offset: 0) == original[...], "seed \(seed)")
        }
        try content.checkCanonical(offset: 0)
      }
      guard !fields[damaged].isEmpty else { continue }
      let position = Int.random(in: 0..<fields[damaged].count, using: &random)
      fields[damaged][position] ^= UInt8.random(in: 1...255, using: &random)
      for extending in [false, true] {
        var reader = ByteReader(header.bytes)
        var content = try DocumentContentCode.Reader(from: &reader, extending: extending)
        do {
          let decoded = try fields.map { Array(try content.decode($0[...], offset: 0)) }
          try content.checkCanonical(offset: 0)
          outcomes.append("\(decoded)")
        } catch let error as ConvergeDecodingError {
          outcomes.append("\(error)")
        }
      }
      #expect(outcomes[0] == outcomes[1], "seed \(seed), round \(round)")
    }
    #expect(longCodes, "seed \(seed)")
  }

  /// Random documents (texts of several alphabets, empty ones, deleted runs, many or few
  /// notes) decode to what was encoded and encode to the same bytes.
  @Test func randomDocumentsRoundTripInEveryForm() throws {
    let seed = baseSeed(0xC0DE)
    var random = SeededGenerator(seed: seed)
    var forms: Set<UInt8> = []
    let alphabets = [
      Array("ab"), Array("the quick brown fox, "), Array("é🌱中文 \n"), Array("0123456789"),
    ]
    for round in 0..<fuzzIterations(40) {
      var replica = Replica(id: ReplicaID(rawValue: 3), wallClock: .fixed(0))
      // Long, short and tiny texts, so that every form is the cheapest somewhere.
      let longest = [600, 60, 6][round % 3]
      let notes = Int.random(in: 1...(round % 3 == 2 ? 3 : 40), using: &random)
      let alphabet = alphabets.randomElement(using: &random) ?? alphabets[0]
      for index in 0..<notes {
        let length = Int.random(in: 0...longest, using: &random)
        let body = String((0..<length).map { _ in alphabet.randomElement(using: &random) ?? "a" })
        let key = LibraryFixture.note(index)
        replica.transact { tx in
          tx.create(key)
          tx.insertText(body, at: 0, in: "body", of: key)
        }
        if length > 4, Bool.random(using: &random) {
          replica.transact { $0.deleteText(1..<3, in: "body", of: key) }
        }
      }
      let bytes = replica.document.encoded()
      forms.insert(try Self.form(of: bytes))
      let decoded = try Document(decoding: bytes)
      #expect(decoded == replica.document, "seed \(seed), round \(round)")
      #expect(decoded.encoded() == bytes, "seed \(seed), round \(round)")
    }
    #expect(forms == [0, 1, 2], "seed \(seed): forms reached \(forms.sorted())")
  }

  @Test func anotherFormOrCodeThanTheCanonicalOneIsRefused() throws {
    // 63 bytes of one letter: raw in a legacy state (under 64 bytes), one table here.
    var replica = Replica(id: ReplicaID(rawValue: 5), wallClock: .fixed(0))
    let note = LibraryFixture.note(0)
    replica.transact {
      $0.insertText(String(repeating: "a", count: 63), at: 0, in: "body", of: note)
    }
    let canonical = replica.document.encoded()
    let (head, code, rest) = try Self.parts(of: canonical)
    #expect(code.first == DocumentContentCode.oneTable)
    // The same content raw: the legacy state's text, behind a raw form byte.
    let legacy = try Self.parts(ofLegacy: replica.document.legacyEncoded())
    let raw = Envelope.seal(
      kind: .documentState, body: legacy.head + [DocumentContentCode.raw] + legacy.rest)
    #expect(
      throws: ConvergeDecodingError.invalidValue(
        offset: raw.count - 4, reason: "raw text content that has a cheaper coded form")
    ) { try Document(decoding: raw) }
    // The same bits under a table per previous byte (both contexts code "a" in one bit).
    var table = ByteWriter()
    var lengths = [UInt8](repeating: 0, count: 256)
    lengths[0x61] = 1
    ContentCoding.writeTable(lengths, to: &table)
    let perContext =
      [DocumentContentCode.tablePerContext, 2, 0] + table.bytes + [0x61] + table.bytes
    let costlier = Envelope.seal(kind: .documentState, body: head + perContext + rest)
    #expect(
      throws: ConvergeDecodingError.invalidValue(
        offset: costlier.count - 4, reason: "text content code that is not the canonical one")
    ) { try Document(decoding: costlier) }
    // A table for the first letter's context only: the second "a" has none.
    let missing = Envelope.seal(
      kind: .documentState,
      body: head + [DocumentContentCode.tablePerContext, 1, 0] + table.bytes + rest)
    #expect(throws: ConvergeDecodingError.self) { try Document(decoding: missing) }
    do {
      _ = try Document(decoding: missing)
    } catch let error as ConvergeDecodingError {
      #expect("\(error)".contains("text content bits that do not decode"), "\(error)")
    }
    // An unknown form byte.
    let unknownBody = head + [3] + code.dropFirst() + rest
    let unknown = Envelope.seal(kind: .documentState, body: unknownBody)
    let bodyStart = unknown.count - 4 - unknownBody.count
    #expect(
      throws: ConvergeDecodingError.invalidValue(
        offset: bodyStart + head.count, reason: "unknown content form")
    ) { try Document(decoding: unknown) }
    #expect(
      try Document(decoding: Envelope.seal(kind: .documentState, body: head + code + rest))
        == replica.document)
  }

  /// A legacy state's body split where a current state's content code would start.
  static func parts(ofLegacy bytes: [UInt8]) throws -> (head: [UInt8], rest: [UInt8]) {
    let body = Array(try Envelope.open(bytes).body)
    var reader = ByteReader(body)
    var table = try DecodedReplicaTable(from: &reader)
    _ = try CausalContext(from: &reader, replicas: &table)
    return (Array(body[..<reader.offset]), Array(body[reader.offset...]))
  }

  /// Damaged code sections are refused with a typed error, never a trap, and a replica
  /// restoring them is not made.
  @Test func damagedCodesAreRefused() throws {
    let seed = baseSeed(0xDA3A)
    var random = SeededGenerator(seed: seed)
    let bytes = LibraryFixture.document.encoded()
    let (head, code, rest) = try Self.parts(of: bytes)
    for _ in 0..<fuzzIterations(300) {
      var damaged = code
      let position = Int.random(in: 0..<damaged.count, using: &random)
      damaged[position] ^= UInt8.random(in: 1...255, using: &random)
      let message = Envelope.seal(kind: .documentState, body: head + damaged + rest)
      do {
        let document = try Document(decoding: message)
        // A change that still decodes must be the same canonical message.
        #expect(document.encoded() == message, "seed \(seed)")
      } catch is ConvergeDecodingError {
      } catch {
        Issue.record("seed \(seed): \(error)")
      }
    }
  }
}
