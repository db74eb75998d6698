import Converge
import ConvergeTestSupport
import Testing

/// Hostile document and delta messages: every one is answered with a typed error or
/// decodes to a value whose encoding is exactly the input, quickly and without traps.
@Suite struct DocumentWireRobustnessTests {
  /// Valid document and delta messages from seeded random networks.
  private static func sampleMessages(seed: UInt64, count: Int) -> [[UInt8]] {
    var random = SeededGenerator(seed: seed)
    var messages = [
      Document().encoded(), DocumentDelta().encoded(),
      DocumentFixtureScenario.document.encoded(), DocumentFixtureScenario.delta.encoded(),
    ]
    // Long texts, whose content is coded (FORMAT.md §8.3.1).
    let longNote = CodedTextMessageTests.longNote(seed: seed)
    messages += [longNote.state.encoded(), longNote.delta.encoded()]
    for _ in 0..<count {
      let network = DocumentNetwork(replicaCount: 3, rounds: 8, using: &random)
      messages.append(network.replicas[0].encodedState())
      if let delta = network.deltas.randomElement(using: &random) {
        messages.append(delta.encoded())
      }
      messages.append(network.replicas[1].delta(since: network.replicas[2].context).encoded())
    }
    return messages
  }

  @Test func everyTruncatedPrefixIsRejected() {
    let seed = baseSeed(0x7_2D)
    DecodingRobustness.expectEveryPrefixRejected(
      Self.sampleMessages(seed: seed, count: fuzzIterations(4)), seed: seed)
  }

  @Test func randomMutationsAreRejectedOrCanonical() {
    let seed = baseSeed(0xD0C_F1_1B)
    DecodingRobustness.expectMutationsRejectedOrCanonical(
      Self.sampleMessages(seed: seed, count: 10), seed: seed,
      iterations: fuzzIterations(10_000), wholeMessageEvery: 4)
  }

  // MARK: Hand-made bodies

  /// A causal context holding every counter of replica #0, `1…2^64 - 1`: a text's runs
  /// must be in their message's context.
  private static let everyCounter: [UInt8] = {
    var writer = ByteWriter()
    writer.writeBytes([1, 0, 1, 1])  // one replica, #0, one range from 1
    writer.writeVarUInt(UInt64.max - 1)  // its width: up to 2^64 - 1
    return writer.bytes
  }()

  /// A delta body with one replica (id 1), the context `context` (by default empty, so
  /// that offsets stay short: only a body that is read to its end is refused for it) and
  /// one entity `n/1` whose field `body` is text with the runs `text` writes.
  private static func textDelta(
    context: [UInt8] = [0], _ text: (inout ByteWriter) -> Void
  ) -> [UInt8] {
    Envelope.seal(kind: .documentDelta) { writer in
      writer.writeVarUInt(1)
      writer.writeUInt64(1)
      writer.writeBytes(context)
      writer.writeVarUInt(1)  // one entity
      writer.writeString("n")
      writer.writeString("1")
      writer.writeBytes([0, 0])  // presence: two empty vectors
      writer.writeVarUInt(1)  // one field
      writer.writeString("body")
      writer.writeUInt8(2)  // text
      text(&writer)
    }
  }

  /// One insert group of replica #0 holding one run, then `content`, then no deletes.
  private static func oneRun(
    gap: UInt64 = 0, length: UInt64 = 1, skew: Int64 = 0, origin: [UInt8] = [0],
    rightOrigin: [UInt8] = [0], content: [UInt8] = [0x61], context: [UInt8] = [0]
  ) -> [UInt8] {
    textDelta(context: context) { writer in
      writer.writeBytes([1, 0, 1])
      writer.writeVarUInt(gap)
      writer.writeVarUInt(length)
      writer.writeVarInt(skew)
      writer.writeBytes(origin)
      writer.writeBytes(rightOrigin)
      writer.writeLengthPrefixedBytes(content)
      writer.writeVarUInt(0)
    }
  }

  /// No inserts, then one delete group of replica #0 holding one run: `packedCount` is
  /// `count << 2 | descending << 1 | explicit target replica`; the shape written is
  /// `count << 3 | implied dot << 2 | descending << 1 | explicit`, the dot implied (the
  /// first free counter, 1) when `gap` is 0.
  private static func oneDelete(
    packedCount: UInt64, target: Int64, gap: UInt64 = 0, explicitTarget: [UInt8] = [],
    context: [UInt8] = [0]
  ) -> [UInt8] {
    textDelta(context: context) { writer in
      writer.writeBytes([0, 0])  // no insert groups, empty content
      writer.writeBytes([1, 0, 1])
      writer.writeVarUInt((packedCount >> 2) << 3 | (gap == 0 ? 4 : 0) | packedCount & 3)
      if gap != 0 { writer.writeVarUInt(gap) }
      writer.writeBytes(explicitTarget)
      writer.writeVarInt(target)
    }
  }

  private static func reason(_ bytes: [UInt8]) -> String? {
    do {
      if try Envelope.open(bytes).kind == .documentState {
        _ = try Document(decoding: bytes)
      } else {
        _ = try DocumentDelta(decoding: bytes)
      }
      return nil
    } catch ConvergeDecodingError.invalidValue(_, let reason) {
      return reason
    } catch {
      return "\(error)"
    }
  }

  @Test func handMadeRunsAreCheckedExactly() throws {
    // The well-formed baseline decodes and re-encodes exactly.
    let valid = Self.oneRun(context: Self.everyCounter)
    #expect(try DocumentDelta(decoding: valid).encoded() == valid)
    #expect(Self.reason(Self.oneRun()) == "text run that is not in the message's context")
    #expect(Self.reason(Self.oneRun(length: 0, content: [])) == "empty run")
    #expect(Self.reason(Self.oneRun(content: [0xFE])) == "string at byte 39 is not valid UTF-8")
    // 0xFF starts coded content (FORMAT.md §8.3.1), here cut short.
    #expect(Self.reason(Self.oneRun(content: [0xFF])) == "input ends too early (at byte 40)")
    // A UTF-16 surrogate is not a Unicode scalar.
    #expect(Self.reason(Self.oneRun(content: [0xED, 0xA0, 0x80])) != nil)
    #expect(
      Self.reason(Self.oneRun(content: [0x61, 0x62])) == "text content does not match its runs")
    #expect(Self.reason(Self.oneRun(gap: .max)) == "integer overflows 64 bits at byte 34")
    #expect(Self.reason(Self.oneRun(gap: .max - 1, length: 2, content: [0x61, 0x62])) != nil)
    #expect(Self.reason(Self.oneRun(skew: 1 << 62)) == "Lamport number out of range")
    #expect(Self.reason(Self.oneRun(origin: [1, 0, 0])) == "zero dot counter")
    #expect(
      Self.reason(Self.oneRun(origin: [1, 7, 1]))
        == "replica index at byte 38 is not in the replica table")
    #expect(Self.reason(Self.oneRun(origin: [1, 0, 1])) == "origin inside its own run")
    #expect(Self.reason(Self.oneRun(origin: [2])) == "origin before counter 1")
    #expect(
      Self.reason(Self.oneRun(gap: 3, origin: [1, 0, 2]))
        == "explicit origin that has a shorter form")
    let ownOrigin = Self.oneRun(gap: 3, origin: [3], context: Self.everyCounter)
    #expect(try DocumentDelta(decoding: ownOrigin).encoded() == ownOrigin)
    // Right origins: inside the run, before counter 1, a longer form than needed, the
    // id after a missing origin.
    #expect(Self.reason(Self.oneRun(rightOrigin: [1, 0, 1])) == "right origin inside its own run")
    #expect(Self.reason(Self.oneRun(rightOrigin: [1, 0, 0])) == "zero dot counter")
    #expect(Self.reason(Self.oneRun(rightOrigin: [3])) == "right origin before counter 1")
    #expect(
      Self.reason(Self.oneRun(gap: 3, rightOrigin: [1, 0, 2]))
        == "explicit right origin that has a shorter form")
    #expect(
      Self.reason(Self.oneRun(gap: 3, origin: [3], rightOrigin: [3]))
        == "right origin that has a shorter form")
    #expect(
      Self.reason(Self.oneRun(rightOrigin: [2]))
        == "right origin after an origin that has no next id")
    for form: (origin: [UInt8], right: [UInt8]) in [([3], [2]), ([4], [3]), ([0], [1, 0, 9])] {
      let message = Self.oneRun(
        gap: 3, origin: form.origin, rightOrigin: form.right, context: Self.everyCounter)
      #expect(try DocumentDelta(decoding: message).encoded() == message)
    }
    // Deletes: zero, a single one marked descending, targets running out of range.
    #expect(Self.reason(Self.oneDelete(packedCount: 0, target: 1)) == "empty run")
    #expect(
      Self.reason(Self.oneDelete(packedCount: 6, target: 1)) == "a single delete marked descending")
    #expect(Self.reason(Self.oneDelete(packedCount: 8, target: 0)) == "zero target")
    #expect(Self.reason(Self.oneDelete(packedCount: 10, target: 1)) != nil)  // 2 descending from 1
    #expect(Self.reason(Self.oneDelete(packedCount: 8, target: -1)) != nil)  // up to 2^64
    #expect(Self.reason(Self.oneDelete(packedCount: 8, target: 1, gap: .max)) != nil)
    #expect(
      Self.reason(Self.oneDelete(packedCount: 9, target: 1, explicitTarget: [0]))
        == "explicit target replica that is implied")
    let validDelete = Self.oneDelete(packedCount: 8, target: 1, context: Self.everyCounter)
    #expect(try DocumentDelta(decoding: validDelete).encoded() == validDelete)
    #expect(
      Self.reason(Self.oneDelete(packedCount: 8, target: 1))
        == "text run that is not in the message's context")
  }

  /// Found by the fuzzer (`CONVERGE_FUZZ_ITERATIONS=30 CONVERGE_SEED=31337`): a text run
  /// whose Lamport number is not above its origin's is ignored by the sequence, so a
  /// document state holding one would decode to a value without it.
  @Test func textRunsOlderThanTheirOriginAreRefused() throws {
    let message = DocumentFixtureScenario.document.encoded()
    let body = Array(try Envelope.open(message).body)
    let run: [UInt8] = [1, 1, 0, 4, 16, 1, 0, 8]  // "oat ": #1@1…4, Lamport 1 + 8, origin #0@8
    let start = try #require(
      body.indices.first { body[$0...].starts(with: run) }, "the fixture's run moved")
    var damaged = body
    damaged[start + 4] = 1  // Lamport 1 - 1 = 0, older than its origin
    #expect(
      Self.reason(Envelope.seal(kind: .documentState, body: damaged))
        == "text run the sequence cannot hold")
  }

  @Test func hugeButValidRunsDecodeAndApplyQuickly() throws {
    // 2^61 - 1 deletes of missing targets: one record, buffered as one range.
    let huge = Self.oneDelete(
      packedCount: ((1 << 61) - 1) << 2, target: 1, context: Self.everyCounter)
    let delta = try DocumentDelta(decoding: huge)
    #expect(delta.encoded() == huge)
    var document = Document()
    document.apply(delta)
    #expect(document.encoded() == (try Document(decoding: document.encoded())).encoded())
  }

  @Test func runsAtTheTopOfTheCounterSpaceApplyWithoutTraps() throws {
    // The id 2^64 - 2 (the last one a run can end at) with Lamport number 1 (wrapping).
    let top = Self.oneRun(gap: .max - 2, skew: 3, context: Self.everyCounter)
    #expect(Self.reason(Self.oneRun(gap: .max - 1)) != nil)
    let deleteTop = Self.oneDelete(  // 2^64 - 2
      packedCount: 4, target: -2, gap: .max - 2, context: Self.everyCounter)
    let deleteDown = Self.oneDelete(  // 2^64 - 2, 2^64 - 3
      packedCount: 10, target: -2, context: Self.everyCounter)
    var document = Document()
    for message in [top, deleteTop, deleteDown] {
      let delta = try DocumentDelta(decoding: message)
      #expect(delta.encoded() == message)
      document.apply(delta)
      let state = document.encoded()
      #expect(try Document(decoding: state) == document)
    }
  }

  @Test func deleteRunsLongerThanOneRecordAreSplit() throws {
    // The longest run one record holds, then five more deletes that continue it.
    let longest: UInt64 = (1 << 61) - 1
    let first = try DocumentDelta(
      decoding: Self.oneDelete(packedCount: longest << 2, target: 1, context: Self.everyCounter))
    let second = try DocumentDelta(
      decoding: Self.oneDelete(
        packedCount: 5 << 2, target: Int64(longest) + 1, gap: longest,
        context: Self.everyCounter))
    let joined = first.merging(second)
    let bytes = joined.encoded()
    let decoded = try DocumentDelta(decoding: bytes)
    #expect(decoded.encoded() == bytes)
    #expect(decoded.merging(first).encoded() == bytes)
  }

  @Test func absurdCountsAreRefusedBeforeAllocating() {
    let hugeCounts: [[UInt8]] = [
      [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],  // UInt64.max
      [0x80, 0x80, 0x80, 0x80, 0x10],  // 2^32
    ]
    for count in hugeCounts {
      // As the entity count after an empty table and context and the raw content form.
      let entities = Envelope.seal(kind: .documentState, body: [0, 0, 0] + count)
      #expect(throws: ConvergeDecodingError.countTooLarge(offset: 10)) {
        try Document(decoding: entities)
      }
      // As a field count, an insert group count and a record's size.
      let fields = Envelope.seal(
        kind: .documentDelta, body: [0, 0, 1, 1, 0x6E, 1, 0x31, 0, 0] + count)
      #expect(throws: ConvergeDecodingError.countTooLarge(offset: 16)) {
        try DocumentDelta(decoding: fields)
      }
      let groups = Self.textDelta { $0.writeBytes(count + [0, 0]) }
      #expect(throws: ConvergeDecodingError.self) { try DocumentDelta(decoding: groups) }
      let record = Self.textDelta { writer in
        writer.writeBytes([1, 0, 1, 0])
        writer.writeBytes(count)  // a run of 2^32 or 2^64-1 scalars
        writer.writeBytes([0, 0, 1, 0x61, 0])
      }
      #expect(throws: ConvergeDecodingError.self) { try DocumentDelta(decoding: record) }
    }
  }

  @Test func deepRecordsAreRefused() {
    var writer = ByteWriter()
    for _ in 0..<10_000 { writer.writeBytes([7, 1, 0]) }  // record { "": record { … } }
    writer.writeUInt8(0)
    var reader = ByteReader(writer.bytes)
    #expect(throws: ConvergeDecodingError.nestingTooDeep(offset: 193)) {
      try FieldValue(from: &reader)
    }
  }

  @Test func nonCanonicalMapsAreRefused() {
    // Two entities out of order, and two field names that are equal strings.
    let entities = Envelope.seal(kind: .documentState) { writer in
      writer.writeBytes([0, 0, 0, 2])
      for id in ["b", "a"] {
        writer.writeString("n")
        writer.writeString(id)
        writer.writeBytes([0, 0, 0])
      }
    }
    #expect(
      throws: ConvergeDecodingError.invalidValue(
        offset: 18, reason: "entities not strictly increasing")
    ) {
      try Document(decoding: entities)
    }
    let fields = Envelope.seal(kind: .documentState) { writer in
      writer.writeBytes([0, 0, 0, 1])
      writer.writeString("n")
      writer.writeString("a")
      writer.writeBytes([0, 0, 2])
      writer.writeString("e\u{301}")
      writer.writeUInt8(3)
      writer.writeString("é")
      writer.writeUInt8(3)
    }
    #expect(throws: ConvergeDecodingError.invalidValue(offset: 23, reason: "duplicate field name"))
    {
      try Document(decoding: fields)
    }
  }

  /// An entity's field names are matched against the entity's before it as bytes while
  /// they repeat them: more names, fewer, names that part ways, none, decode to the same
  /// tables; a name equal as a string to one of the repeated ones is still a duplicate.
  @Test func fieldNamesRepeatedFromTheEntityBeforeDecodeAsThemselves() throws {
    var replica = Replica(id: ReplicaID(rawValue: 4), wallClock: .fixed(0))
    // A name of 128 bytes or more (a two-byte length, 0x82 0x01) is read in full even when
    // repeated, also where its length's second byte would pass for its first.
    let long = String(repeating: "\u{01}", count: 130)
    let names = [
      ["a", "b", "c"], ["a", "b"], ["a", "b", "c"], ["a", "c"], [], ["b"], ["a", "b", "c", "d"],
      [long], [long], [long, "a"], [long, "a", "p"],
    ]
    for (index, fields) in names.enumerated() {
      let key = EntityKey(type: "n", id: "\(index)")
      replica.transact { tx in
        tx.create(key)
        for name in fields { tx.setValue(.int(Int64(index)), for: name, of: key) }
      }
    }
    let bytes = replica.document.encoded()
    let decoded = try Document(decoding: bytes)
    #expect(decoded == replica.document)
    #expect(decoded.encoded() == bytes)
    for (index, fields) in names.enumerated() {
      let key = EntityKey(type: "n", id: "\(index)")
      #expect(decoded.fieldNames(of: key) == fields, "entity \(index)")
    }
    // The second entity repeats the first one's two names, then adds "é", equal as a
    // string to the second of them.
    let duplicate = Envelope.seal(kind: .documentState) { writer in
      writer.writeBytes([0, 0, 0, 2])
      for (id, fields) in [("a", ["a", "e\u{301}"]), ("b", ["a", "e\u{301}", "é"])] {
        writer.writeString("n")
        writer.writeString(id)
        writer.writeBytes([0, 0, UInt8(fields.count)])
        for name in fields {
          writer.writeString(name)
          writer.writeUInt8(3)
        }
      }
    }
    #expect(throws: ConvergeDecodingError.self) { try Document(decoding: duplicate) }
    do {
      _ = try Document(decoding: duplicate)
    } catch let error as ConvergeDecodingError {
      #expect("\(error)".contains("duplicate field name"), "\(error)")
    }
  }
}
