import Converge
import ConvergeTestSupport
import Testing

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

@Suite struct ByteCodingTests {
  static let shortestForms: [(UInt64, [UInt8])] = [
    (0, [0x00]),
    (1, [0x01]),
    (127, [0x7F]),
    (128, [0x80, 0x01]),
    (300, [0xAC, 0x02]),
    (16_383, [0xFF, 0x7F]),
    (16_384, [0x80, 0x80, 0x01]),
    (UInt64(1) << 63, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
    (UInt64.max, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
  ]

  @Test(arguments: shortestForms)
  func leb128HasOneShortestForm(value: UInt64, bytes: [UInt8]) throws {
    var writer = ByteWriter()
    writer.writeVarUInt(value)
    #expect(writer.bytes == bytes)
    var reader = ByteReader(bytes)
    #expect(try reader.readVarUInt() == value)
    #expect(reader.isAtEnd)
  }

  static let badForms: [([UInt8], ConvergeDecodingError)] = [
    ([], .truncated(offset: 0)),
    ([0x80], .truncated(offset: 1)),
    ([0xFF, 0xFF], .truncated(offset: 2)),
    ([0x80, 0x00], .overlongInteger(offset: 0)),
    ([0xFF, 0x80, 0x00], .overlongInteger(offset: 0)),
    ([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], .overlongInteger(offset: 0)),
    ([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02], .integerOverflow(offset: 0)),
    ([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], .integerOverflow(offset: 0)),
    // Eleven bytes: the tenth byte has its continuation bit set.
    (
      [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
      .integerOverflow(offset: 0)
    ),
    (
      [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x81, 0x00],
      .integerOverflow(offset: 0)
    ),
  ]

  @Test(arguments: badForms)
  func leb128RejectsBadForms(bytes: [UInt8], error: ConvergeDecodingError) {
    var reader = ByteReader(bytes)
    #expect(throws: error) { try reader.readVarUInt() }
  }

  /// Numbers with at least eight bytes after their start (read eight bytes at once) and
  /// fewer, inside a slice that does not start at 0: the same values, the same errors at
  /// the same offsets, the same bytes consumed.
  @Test func leb128ReadsAlikeWithAndWithoutEightBytesLeft() throws {
    let eightBytes = UInt64(1) << 56 - 1
    let forms: [([UInt8], Result<UInt64, ConvergeDecodingError>)] =
      Self.shortestForms.map { ($0.1, .success($0.0)) } + [
        ([0x80, 0x00], .failure(.overlongInteger(offset: 1))),
        ([0xFF, 0x80, 0x00], .failure(.overlongInteger(offset: 1))),
        ([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], .failure(.overlongInteger(offset: 1))),
        ([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], .success(eightBytes)),
        ([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], .success(eightBytes + 1)),
        (
          [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02],
          .failure(.integerOverflow(offset: 1))
        ),
      ]
    for (bytes, expected) in forms {
      for trailing in [0, 9] {
        let input = ([0x01, 0x02] + bytes + Array(repeating: 0x7F, count: trailing))[1...]
        var reader = ByteReader(input)
        #expect(try reader.readVarUInt() == 2)
        var read: Result<UInt64, ConvergeDecodingError>
        do {
          read = .success(try reader.readVarUInt())
        } catch let error as ConvergeDecodingError {
          read = .failure(error)
        } catch {
          read = .failure(.truncated(offset: -1))
        }
        #expect(read == expected, "\(bytes), \(trailing) bytes after")
        if case .success = expected { #expect(reader.offset == 1 + bytes.count) }
      }
    }
  }

  @Test func leb128AndZigzagRoundTripRandomValues() throws {
    let seed = baseSeed(0x1EB1_28)
    var random = SeededGenerator(seed: seed)
    var writer = ByteWriter()
    var unsigned: [UInt64] = []
    var signed: [Int64] = []
    for _ in 0..<fuzzIterations(2000) {
      let bits = Int.random(in: 0...64, using: &random)
      let raw = random.next()
      let value = bits == 64 ? raw : raw & ((1 << UInt64(bits)) - 1)
      unsigned.append(value)
      signed.append(Int64(bitPattern: value) >> Int64.random(in: 0...63, using: &random))
      writer.writeVarUInt(unsigned[unsigned.count - 1])
      writer.writeVarInt(signed[signed.count - 1])
    }
    var reader = ByteReader(writer.bytes)
    for (value, signedValue) in zip(unsigned, signed) {
      #expect(try reader.readVarUInt() == value, "seed \(seed)")
      #expect(try reader.readVarInt() == signedValue, "seed \(seed)")
    }
    #expect(reader.isAtEnd, "seed \(seed)")
  }

  @Test func zigzagMapsSmallMagnitudesToSmallNumbers() throws {
    let cases: [(Int64, UInt64)] = [
      (0, 0), (-1, 1), (1, 2), (-2, 3), (2, 4), (Int64.max, UInt64.max - 1),
      (Int64.min, UInt64.max),
    ]
    for (value, encoded) in cases {
      #expect(ByteWriter.zigzag(value) == encoded)
      #expect(ByteReader.unzigzag(encoded) == value)
    }
  }

  @Test func fixedWidthValuesAreLittleEndian() throws {
    var writer = ByteWriter()
    writer.writeUInt16(0x0102)
    writer.writeUInt32(0x0304_0506)
    writer.writeUInt64(0x0708_090A_0B0C_0D0E)
    writer.writeBool(true)
    writer.writeBool(false)
    #expect(
      writer.bytes == [
        0x02, 0x01, 0x06, 0x05, 0x04, 0x03, 0x0E, 0x0D, 0x0C, 0x0B, 0x0A, 0x09, 0x08, 0x07, 1, 0,
      ])
    var reader = ByteReader(writer.bytes)
    #expect(try reader.readUInt16() == 0x0102)
    #expect(try reader.readUInt32() == 0x0304_0506)
    #expect(try reader.readUInt64() == 0x0708_090A_0B0C_0D0E)
    #expect(try reader.readBool() == true)
    #expect(try reader.readBool() == false)
    #expect(throws: ConvergeDecodingError.truncated(offset: 16)) { try reader.readUInt32() }
    // The same from a slice that does not start at 0 (numbers are loaded from the storage).
    var sliced = ByteReader(([0xFF] + writer.bytes)[1...])
    #expect(try sliced.readUInt16() == 0x0102)
    #expect(try sliced.readUInt32() == 0x0304_0506)
    #expect(try sliced.readUInt64() == 0x0708_090A_0B0C_0D0E)
    var badBool = ByteReader([2])
    #expect(throws: ConvergeDecodingError.self) { try badBool.readBool() }
  }

  @Test func doublesKeepEveryBit() throws {
    let values: [Double] = [
      0, -0.0, 1.5, -.infinity, .infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
      Double(bitPattern: 0x7FF8_0000_DEAD_BEEF),
    ]
    var writer = ByteWriter()
    for value in values { writer.writeDouble(value) }
    var reader = ByteReader(writer.bytes)
    for value in values {
      #expect(try reader.readDouble().bitPattern == value.bitPattern)
    }
  }

  @Test func stringsAndBytesAreLengthPrefixed() throws {
    var writer = ByteWriter()
    writer.writeString("hé")
    writer.writeString("")
    writer.writeString("🦤 ok")
    writer.writeLengthPrefixedBytes([9, 8, 7])
    #expect(Array(writer.bytes.prefix(5)) == [0x03, 0x68, 0xC3, 0xA9, 0x00])
    var reader = ByteReader(writer.bytes)
    #expect(try reader.readString() == "hé")
    #expect(try reader.readString() == "")
    #expect(try reader.readString() == "🦤 ok")
    #expect(Array(try reader.readLengthPrefixedBytes()) == [9, 8, 7])
    try reader.expectEnd()
  }

  static let invalidStrings: [[UInt8]] = [
    [0x02, 0xC0, 0x80],  // overlong NUL
    [0x03, 0xED, 0xA0, 0x80],  // UTF-16 surrogate
    [0x01, 0xFF],
    [0x04, 0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
    [0x02, 0x61, 0xE2],  // cut in the middle of a scalar
  ]

  @Test(arguments: invalidStrings)
  func invalidUTF8IsRejected(bytes: [UInt8]) {
    var reader = ByteReader(bytes)
    #expect(throws: ConvergeDecodingError.invalidUTF8(offset: 0)) { try reader.readString() }
  }

  @Test func sectionsMustBeConsumedExactly() throws {
    var writer = ByteWriter()
    writer.writeLengthPrefixedSection { section in
      section.writeVarUInt(300)
      section.writeVarUInt(5)
    }
    writer.writeUInt8(0xEE)
    // Reading only the first value leaves the section half read.
    var strict = ByteReader(writer.bytes)
    #expect(throws: ConvergeDecodingError.lengthMismatch(offset: 3)) {
      try strict.readLengthPrefixedSection { try $0.readVarUInt() }
    }
    var whole = ByteReader(writer.bytes)
    let values = try whole.readLengthPrefixedSection {
      [try $0.readVarUInt(), try $0.readVarUInt()]
    }
    #expect(values == [300, 5])
    #expect(try whole.readUInt8() == 0xEE)
  }

  @Test func boundedReadsAndNestingLevelsAreRestored() throws {
    var reader = ByteReader([0x05, 0x06, 0x01, 0x01, 0x01, 0x01, 0x00], maximumDepth: 2)
    #expect(try reader.readVarUInt(maximum: 5) == 5)
    #expect(throws: ConvergeDecodingError.invalidValue(offset: 1, reason: "6 > 5")) {
      try reader.readVarUInt(maximum: 5)
    }
    // Two levels twice in a row: leaving a level gives it back.
    for _ in 0..<2 {
      let depth = try reader.nested { outer in
        try outer.readUInt8() == 1 ? try outer.nested { try $0.readUInt8() } : 9
      }
      #expect(depth == 1)
    }
    #expect(throws: ConvergeDecodingError.truncated(offset: 6)) { try reader.readBytes(count: 2) }
    #expect(throws: ConvergeDecodingError.truncated(offset: 6)) { try reader.readBytes(count: -1) }
    #expect(Array(try reader.readBytes(count: 1)) == [0])
    #expect(reader.isAtEnd && reader.remainingCount == 0)
  }

  @Test func crc32cMatchesItsCheckValue() {
    #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
    #expect(CRC32C.checksum([UInt8]()) == 0)
    #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
  }
}

@Suite struct EnvelopeTests {
  @Test func anEmptyBodyHasTheDocumentedLayout() throws {
    let message = Envelope.seal(kind: .syncMessage, body: [UInt8]())
    #expect(Array(message.prefix(7)) == [0x43, 0x4E, 0x56, 0x47, 0x02, 0x05, 0x00])
    #expect(message.count == 11)
    var checksum = ByteWriter()
    checksum.writeUInt32(CRC32C.checksum(message.prefix(7)))
    #expect(Array(message.suffix(4)) == checksum.bytes)
    let opened = try Envelope.open(message)
    #expect(opened.kind == .syncMessage && opened.body.isEmpty)
  }

  @Test func bodiesSurviveSealing() throws {
    let seed = baseSeed(0xE4E1_0BE)
    var random = SeededGenerator(seed: seed)
    for _ in 0..<fuzzIterations(200) {
      let count = Int.random(in: 0...300, using: &random)
      let body = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
      let kind = MessageKind.allCases.randomElement(using: &random) ?? .syncMessage
      let message = Envelope.seal(kind: kind, body: body)
      #expect(message.count == Envelope.overhead(bodyLength: count) + count, "seed \(seed)")
      let opened = try Envelope.open(message)
      #expect(opened.kind == kind && Array(opened.body) == body, "seed \(seed)")
    }
  }
}

@Suite struct CausalityWireTests {
  @Test func versionVectorsRoundTrip() throws {
    let seed = baseSeed(0x7E_C702)
    var random = SeededGenerator(seed: seed)
    for _ in 0..<fuzzIterations(300) {
      let vector = randomVersionVector(using: &random)
      let bytes = vector.encoded()
      #expect(try VersionVector(decoding: bytes) == vector, "seed \(seed): \(vector)")
    }
  }

  @Test func causalContextsRoundTrip() throws {
    let seed = baseSeed(0xCA05_A1)
    var random = SeededGenerator(seed: seed)
    for _ in 0..<fuzzIterations(300) {
      let context = randomCausalContext(using: &random)
      let bytes = context.encoded()
      #expect(try CausalContext(decoding: bytes) == context, "seed \(seed): \(context)")
    }
  }

  @Test func counterRangesAtTheEdgesRoundTrip() throws {
    let sets: [CounterRanges] = [
      CounterRanges(),
      CounterRanges(0...0),
      CounterRanges(0...UInt64.max),
      CounterRanges(ranges: [1...1, 3...3, UInt64.max...UInt64.max]),
      CounterRanges(ranges: [5...9, UInt64.max - 2...UInt64.max - 1]),
    ]
    for ranges in sets {
      var writer = ByteWriter()
      ranges.write(to: &writer)
      var reader = ByteReader(writer.bytes)
      #expect(try CounterRanges(from: &reader) == ranges)
      try reader.expectEnd()
    }
    var writer = ByteWriter()
    CounterRanges(ranges: [2...4, 7...7, 9...108]).write(to: &writer)
    // 3 ranges; gap 2 width 2; gap 7-(4+2)=1 width 0; gap 9-(7+2)=0 width 99.
    #expect(writer.bytes == [3, 2, 2, 1, 0, 0, 99])
  }

  @Test func dotsAndTimestampsRoundTrip() throws {
    let dots = [
      Dot(replica: ReplicaID(rawValue: 9), counter: 1),
      Dot(replica: ReplicaID(rawValue: 3), counter: UInt64.max),
      Dot(replica: ReplicaID(rawValue: 9), counter: 200),
    ]
    let table = ReplicaTable(dots.map(\.replica))
    var writer = ByteWriter()
    table.write(to: &writer)
    for dot in dots { dot.write(to: &writer, replicas: table) }
    Timestamp(wallMilliseconds: 1_763_000_000_000, logical: 7).write(to: &writer)
    var reader = ByteReader(writer.bytes)
    var decoded = try DecodedReplicaTable(from: &reader)
    #expect(decoded.replicas == [ReplicaID(rawValue: 3), ReplicaID(rawValue: 9)])
    for dot in dots { #expect(try Dot(from: &reader, replicas: &decoded) == dot) }
    #expect(
      try Timestamp(from: &reader) == Timestamp(wallMilliseconds: 1_763_000_000_000, logical: 7))
    try reader.expectEnd()
    try decoded.checkAllReferenced(offset: reader.offset)

    var zero = ByteReader([0x00, 0x00])
    var emptyTable = try DecodedReplicaTable(from: &zero)
    var zeroDot = ByteReader([0x00, 0x00])
    #expect(throws: ConvergeDecodingError.unknownReplicaIndex(offset: 0)) {
      try Dot(from: &zeroDot, replicas: &emptyTable)
    }
  }

  @Test func equalValuesEncodeToEqualBytesWhateverTheirHistory() throws {
    let seed = baseSeed(0xCA_0011)
    var random = SeededGenerator(seed: seed)
    for _ in 0..<fuzzIterations(100) {
      let context = randomCausalContext(using: &random)
      let dots = context.entries.flatMap { entry in
        entry.counters.ranges.prefix(3).flatMap { range in
          let upper =
            range.upperBound - range.lowerBound > 5 ? range.lowerBound + 5 : range.upperBound
          return (range.lowerBound...upper).map {
            Dot(replica: entry.replica, counter: $0)
          }
        }
      }
      let forward = CausalContext(dots: dots)
      let backward = CausalContext(dots: dots.shuffled(using: &random))
      #expect(forward.encoded() == backward.encoded(), "seed \(seed)")
      let vector = randomVersionVector(using: &random)
      var rebuilt = VersionVector()
      for (replica, counter) in vector.entries.shuffled(using: &random) {
        rebuilt[replica] = counter
      }
      #expect(rebuilt.encoded() == vector.encoded(), "seed \(seed)")
    }
  }

  @Test func dataSlicesWithANonZeroStartIndexDecode() throws {
    let vector = VersionVector([ReplicaID(rawValue: 5): 12, ReplicaID(rawValue: 0xFFFF): 1])
    let message = vector.encoded()
    let padded = Data([0xAA, 0xBB, 0xCC] + message + [0xDD])
    let slice = padded[3..<(3 + message.count)]
    #expect(slice.startIndex == 3)
    #expect(try VersionVector(decoding: slice) == vector)
    let opened = try Envelope.open(slice)
    #expect(opened.kind == .versionVector)
    let arraySlice = ([0xAA, 0xBB] + message)[2...]
    #expect(try VersionVector(decoding: arraySlice) == vector)

    let context = CausalContext(dots: [Dot(replica: ReplicaID(rawValue: 5), counter: 3)])
    let contextMessage = context.encoded()
    let contextData = Data([1, 2, 3, 4, 5] + contextMessage)
    #expect(try CausalContext(decoding: contextData[5...]) == context)
    // A reader over a Data slice counts offsets from the slice's start.
    var reader = ByteReader(Data([7, 0xAC, 0x02])[1...])
    #expect(try reader.readVarUInt() == 300 && reader.offset == 2)
  }

  @Test func replicaTablesMustBeCanonical() throws {
    func table(_ ids: [UInt64]) -> [UInt8] {
      var writer = ByteWriter()
      writer.writeVarUInt(ids.count)
      for id in ids { writer.writeUInt64(id) }
      return writer.bytes
    }
    var sorted = ByteReader(table([1, 2, 0xFFFF_FFFF_FFFF_FFFF]))
    #expect(try DecodedReplicaTable(from: &sorted).count == 3)
    var duplicate = ByteReader(table([1, 2, 2]))
    #expect(throws: ConvergeDecodingError.self) { try DecodedReplicaTable(from: &duplicate) }
    var unsorted = ByteReader(table([2, 1]))
    #expect(throws: ConvergeDecodingError.self) { try DecodedReplicaTable(from: &unsorted) }

    // A vector message whose table holds a replica the vector never mentions.
    let extra = Envelope.seal(kind: .versionVector, body: table([1, 2]) + [1, 0, 5])
    #expect(throws: ConvergeDecodingError.self) { try VersionVector(decoding: extra) }
    let exact = Envelope.seal(kind: .versionVector, body: table([1, 2]) + [2, 0, 5, 1, 1])
    #expect(
      try VersionVector(decoding: exact)
        == VersionVector([ReplicaID(rawValue: 1): 5, ReplicaID(rawValue: 2): 1]))
    let outOfOrder = Envelope.seal(kind: .versionVector, body: table([1, 2]) + [2, 1, 5, 0, 1])
    #expect(throws: ConvergeDecodingError.self) { try VersionVector(decoding: outOfOrder) }
    let unknown = Envelope.seal(kind: .versionVector, body: table([1]) + [1, 1, 5])
    #expect(throws: ConvergeDecodingError.unknownReplicaIndex(offset: 17)) {
      try VersionVector(decoding: unknown)
    }
    let zeroCounter = Envelope.seal(kind: .versionVector, body: table([1]) + [1, 0, 0])
    #expect(throws: ConvergeDecodingError.self) { try VersionVector(decoding: zeroCounter) }
  }
}

/// A version vector over up to 6 replicas with counters of every size.
func randomVersionVector(using random: inout SeededGenerator) -> VersionVector {
  var vector = VersionVector()
  for _ in 0..<Int.random(in: 0...6, using: &random) {
    let replica = ReplicaID(rawValue: UInt64.random(in: 0...20, using: &random) << 58 | 1)
    vector[replica] = randomCounter(using: &random)
  }
  return vector
}

/// A causal context over up to 5 replicas, with gaps, single dots and huge counters.
func randomCausalContext(using random: inout SeededGenerator) -> CausalContext {
  var context = CausalContext()
  for _ in 0..<Int.random(in: 0...5, using: &random) {
    let replica = ReplicaID.random(using: &random)
    for _ in 0..<Int.random(in: 1...5, using: &random) {
      let lower = randomCounter(using: &random)
      let width = UInt64.random(in: 0...(Bool.random(using: &random) ? 3 : 1000), using: &random)
      let upper = lower.addingReportingOverflow(width).overflow ? UInt64.max : lower + width
      context.insert(replica: replica, counters: lower...upper)
    }
  }
  return context
}

private func randomCounter(using random: inout SeededGenerator) -> UInt64 {
  switch Int.random(in: 0...3, using: &random) {
  case 0: return UInt64.random(in: 1...20, using: &random)
  case 1: return UInt64.random(in: 1...100_000, using: &random)
  case 2: return UInt64.max - UInt64.random(in: 0...3, using: &random)
  default: return UInt64.random(in: 1...UInt64.max, using: &random)
  }
}

/// A text delta whose runs come from a thousand replicas is a thousand run groups on the
/// wire; it decodes to itself. This checks the result, not the time: decoding once
/// reserved room group by group, quadratic in the groups, and no assertion here can see
/// that (the figures are in the CHANGELOG, measured by hand).
@Suite struct ManyReplicaGroupTests {
  @Test func aTextDeltaFromThousandsOfReplicasRoundTrips() throws {
    let key = EntityKey(type: "note", id: "1")
    var merged = DocumentDelta()
    for replica in 2..<1_002 {
      var other = Replica(id: ReplicaID(rawValue: UInt64(replica)))
      merged.merge(other.transact { $0.insertText("x", at: 0, in: "body", of: key) }.delta)
    }
    let decoded = try DocumentDelta(decoding: merged.encoded())
    try ensure(decoded == merged, "round trip of 1,000 replicas' runs")
    var replica = Replica(id: ReplicaID(rawValue: 1))
    replica.apply(decoded)
    try ensure(replica.document.text(of: "body", in: key).count == 1_000, "every run applied")
  }
}
