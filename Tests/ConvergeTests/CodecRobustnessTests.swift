import Converge
import ConvergeTestSupport
import Testing

/// Hostile input: every decoder must answer it with a typed error, quickly, and without
/// allocating more than the input's size. A trap here would crash the test process, so
/// every test passing also means no input trapped.
@Suite struct CodecRobustnessTests {
  /// Valid messages of both standalone kinds, fixed and random.
  private static func sampleMessages(seed: UInt64, count: Int) -> [[UInt8]] {
    var random = SeededGenerator(seed: seed)
    var messages = [
      VersionVector().encoded(),
      CausalContext().encoded(),
      VersionVector([ReplicaID(rawValue: 1): 1, ReplicaID(rawValue: .max): .max]).encoded(),
      CausalContext(dots: [
        Dot(replica: ReplicaID(rawValue: 7), counter: 2),
        Dot(replica: ReplicaID(rawValue: 7), counter: 4),
        Dot(replica: ReplicaID(rawValue: 9), counter: 1),
      ]).encoded(),
    ]
    for _ in 0..<count {
      messages.append(randomVersionVector(using: &random).encoded())
      messages.append(randomCausalContext(using: &random).encoded())
    }
    return messages
  }

  @Test func everyTruncatedPrefixIsRejected() {
    let seed = baseSeed(0x7_2C)
    DecodingRobustness.expectEveryPrefixRejected(
      Self.sampleMessages(seed: seed, count: fuzzIterations(20)), seed: seed)
  }

  @Test func randomMutationsAreRejectedOrCanonical() {
    let seed = baseSeed(0xF1_1B)
    DecodingRobustness.expectMutationsRejectedOrCanonical(
      Self.sampleMessages(seed: seed, count: 30), seed: seed,
      iterations: fuzzIterations(10_000), wholeMessageEvery: 2)
  }

  @Test func absurdCountsAreRefusedBeforeAllocating() throws {
    let hugeCounts: [[UInt8]] = [
      [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],  // UInt64.max
      [0x80, 0x80, 0x80, 0x80, 0x10],  // 2^32
      [0x02],  // two replicas in a one-byte body
    ]
    for count in hugeCounts {
      // As the replica table's count.
      let table = Envelope.seal(kind: .versionVector, body: count)
      #expect(throws: ConvergeDecodingError.countTooLarge(offset: 7)) {
        try VersionVector(decoding: table)
      }
      // As the vector's, the context's and a counter range list's count after an empty
      // table (or a one-replica table).
      let vector = Envelope.seal(kind: .versionVector, body: [0x00] + count)
      #expect(throws: ConvergeDecodingError.countTooLarge(offset: 8)) {
        try VersionVector(decoding: vector)
      }
      let context = Envelope.seal(kind: .causalContext, body: [0x00] + count)
      #expect(throws: ConvergeDecodingError.countTooLarge(offset: 8)) {
        try CausalContext(decoding: context)
      }
      let ranges = Envelope.seal(
        kind: .causalContext, body: [0x01, 1, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x00] + count + [0, 0, 0])
      #expect(throws: ConvergeDecodingError.countTooLarge(offset: 18)) {
        try CausalContext(decoding: ranges)
      }
      var reader = ByteReader(count + [0, 0, 0])
      #expect(throws: ConvergeDecodingError.countTooLarge(offset: 0)) {
        try reader.readCount(minimumBytesPerElement: 2)
      }
    }
    // Exactly the bytes the elements need at least: accepted; a byte fewer: refused.
    var exact = ByteReader([0x03] + Array(repeating: 0, count: 6))
    #expect(try exact.readCount(minimumBytesPerElement: 2) == 3)
    var short = ByteReader([0x03] + Array(repeating: 0, count: 5))
    #expect(throws: ConvergeDecodingError.countTooLarge(offset: 0)) {
      try short.readCount(minimumBytesPerElement: 2)
    }
    // A frame whose body length is UInt64.max, and a string claiming 2^32 bytes.
    var frame = ByteWriter()
    frame.writeBytes(Envelope.magic + [Envelope.formatVersion, MessageKind.versionVector.rawValue])
    frame.writeVarUInt(UInt64.max)
    frame.writeUInt32(0)
    #expect(throws: ConvergeDecodingError.truncated(offset: 20)) {
      try VersionVector(decoding: frame.bytes)
    }
    var string = ByteReader([0x80, 0x80, 0x80, 0x80, 0x10, 0x61])
    #expect(throws: ConvergeDecodingError.truncated(offset: 5)) { try string.readString() }
  }

  @Test func badFramesAreRejected() throws {
    let vector = VersionVector([ReplicaID(rawValue: 3): 4])
    let message = vector.encoded()

    var badChecksum = message
    badChecksum[badChecksum.count - 1] ^= 0x01
    #expect(throws: ConvergeDecodingError.checksumMismatch) {
      try VersionVector(decoding: badChecksum)
    }
    var flippedBody = message
    flippedBody[9] ^= 0x40
    #expect(throws: ConvergeDecodingError.checksumMismatch) {
      try VersionVector(decoding: flippedBody)
    }
    for version: UInt8 in [0, 1, 3, 0xFF] {
      var future = message
      future[4] = version
      #expect(throws: ConvergeDecodingError.unsupportedVersion(version)) {
        try VersionVector(decoding: future)
      }
    }
    var badMagic = message
    badMagic[0] = 0x00
    #expect(throws: ConvergeDecodingError.badMagic) { try VersionVector(decoding: badMagic) }
    #expect(throws: ConvergeDecodingError.badMagic) { try Envelope.open([0x7B, 0x22]) }
    #expect(throws: ConvergeDecodingError.truncated(offset: 2)) { try Envelope.open([0x43, 0x4E]) }
    #expect(throws: ConvergeDecodingError.trailingBytes(offset: message.count)) {
      try VersionVector(decoding: message + [0])
    }

    // A well-framed message of a kind this build does not know.
    var unknown = ByteWriter()
    unknown.writeBytes(Envelope.magic + [Envelope.formatVersion, 0x7E, 0])
    unknown.writeUInt32(CRC32C.checksum(unknown.bytes))
    #expect(throws: ConvergeDecodingError.unknownMessageKind(0x7E)) {
      try Envelope.open(unknown.bytes)
    }
    #expect(
      throws: ConvergeDecodingError.unexpectedMessageKind(
        expected: MessageKind.causalContext.rawValue, actual: MessageKind.versionVector.rawValue)
    ) { try CausalContext(decoding: message) }

    // A valid frame whose body has a byte left over after the vector.
    let opened = try Envelope.open(message)
    let padded = Envelope.seal(kind: .versionVector, body: Array(opened.body) + [0])
    #expect(throws: ConvergeDecodingError.trailingBytes(offset: padded.count - 5)) {
      try VersionVector(decoding: padded)
    }
  }

  @Test func counterRangesRefuseOverflowAndEmptyReplicas() throws {
    // One range [UInt64.max...UInt64.max], then another that would start past it.
    var past = ByteWriter()
    past.writeVarUInt(2)
    past.writeVarUInt(UInt64.max)
    past.writeVarUInt(0)
    past.writeVarUInt(0)
    past.writeVarUInt(0)
    var reader = ByteReader(past.bytes)
    #expect(throws: ConvergeDecodingError.integerOverflow(offset: 12)) {
      try CounterRanges(from: &reader)
    }
    // A width that runs past UInt64.max.
    var wide = ByteWriter()
    wide.writeVarUInt(1)
    wide.writeVarUInt(2)
    wide.writeVarUInt(UInt64.max - 1)
    var wideReader = ByteReader(wide.bytes)
    #expect(throws: ConvergeDecodingError.integerOverflow(offset: 2)) {
      try CounterRanges(from: &wideReader)
    }
    // A replica listed with no ranges at all (padded so the context's count passes).
    let empty = Envelope.seal(
      kind: .causalContext, body: [1, 5, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0])
    #expect(
      throws: ConvergeDecodingError.invalidValue(offset: 18, reason: "replica with no counters")
    ) {
      try CausalContext(decoding: empty)
    }
  }

  /// A toy recursive format: `0x01 value` is a box around a value, `0x00` is the leaf.
  private static func readBoxes(_ reader: inout ByteReader) throws -> Int {
    guard try reader.readUInt8() == 1 else { return 0 }
    return try reader.nested { try readBoxes(&$0) } + 1
  }

  @Test func deepNestingIsRefusedWithoutExhaustingTheStack() throws {
    var shallow = ByteReader([1, 1, 1, 0])
    #expect(try Self.readBoxes(&shallow) == 3)
    var limited = ByteReader([1, 1, 1, 0], maximumDepth: 2)
    #expect(throws: ConvergeDecodingError.nestingTooDeep(offset: 3)) {
      try Self.readBoxes(&limited)
    }
    var hostile = ByteReader([UInt8](repeating: 1, count: 100_000) + [0])
    #expect(
      throws: ConvergeDecodingError.nestingTooDeep(offset: ByteReader.defaultMaximumDepth + 1)
    ) {
      try Self.readBoxes(&hostile)
    }
  }
}
