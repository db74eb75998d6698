/// How a document state writes its texts' content (`FORMAT.md` §8.4.1): every text's
/// UTF-8 raw, or every text's coded with one code the document declares once, a
/// canonical Huffman code with one table (order 0) or a table per previous byte (order 1).
///
/// A library's notes share their words and letters. A code of its own (§8.3.1) makes
/// every note pay for a table and sees each byte alone; one code for the whole document,
/// with a table per previous byte, is paid once and knows that `q` is followed by `u`.
/// The bodies of `converge bench --library` code to under a third of their UTF-8
/// (per-text codes took about four fifths), and a loader builds the decoding tables
/// once instead of once per text.
///
/// The form is canonical, like the rest of the format: the code lengths are
/// ``ContentCoding/codeLengths(frequencies:)`` of each context's byte counts over all the
/// document's content, the form is the one that costs fewest bits
/// (``cheapestCode(_:countBytes:)``), and a decoder recomputes both and refuses any other
/// choice.
///
/// - Complexity: O(n) for n content bytes, plus O(c · 256 log 256) for c contexts.
enum DocumentContentCode {
  /// The form byte: every text raw.
  static let raw: UInt8 = 0
  /// The form byte: every text coded with one table (an order-0 code).
  static let oneTable: UInt8 = 1
  /// The form byte: every text coded with a table per previous byte (an order-1 code).
  static let tablePerContext: UInt8 = 2

  /// How often each byte follows each context (the byte before it in its text; 0 before
  /// a text's first byte), as 256 rows of 256 counts, and which contexts some byte
  /// follows (so that a small document's checks visit a few rows, not 256).
  struct Counts {
    /// Empty until the first byte is counted.
    private(set) var rows: [Int] = []
    /// Per context, whether some byte follows it; empty with `rows`.
    private var used: [Bool] = []
    /// The bytes counted.
    private(set) var total = 0

    /// Whether no byte was counted.
    var isEmpty: Bool { total == 0 }

    /// The contexts some byte follows, ascending.
    var usedContexts: [Int] { used.indices.filter { used[$0] } }

    mutating func add(_ content: ArraySlice<UInt8>) {
      guard !content.isEmpty else { return }
      withCounting(content.count) { rows, used in
        content.withUnsafeBufferPointer { content in
          var context = 0
          for byte in content {
            rows[context << 8 | Int(byte)] += 1
            used[context] = true
            context = Int(byte)
          }
        }
      }
    }

    /// Calls `body` with the 256 × 256 counts (row by context) and the used flags, to
    /// count `counted` bytes in place.
    mutating func withCounting<R>(
      _ counted: Int,
      _ body: (UnsafeMutableBufferPointer<Int>, UnsafeMutableBufferPointer<Bool>) throws -> R
    ) rethrows -> R {
      if rows.isEmpty {
        rows = [Int](repeating: 0, count: 256 * 256)
        used = [Bool](repeating: false, count: 256)
      }
      total += counted
      return try rows.withUnsafeMutableBufferPointer { rows in
        try used.withUnsafeMutableBufferPointer { used in try body(rows, used) }
      }
    }

    /// Marks as used the contexts among `candidates` (all when nil) that some counted
    /// byte follows, for counts made without marking them.
    mutating func markUsed(among candidates: [Int]?) {
      guard !rows.isEmpty else { return }
      for context in candidates ?? Array(0..<256)
      where rows[context << 8..<(context + 1) << 8].contains(where: { $0 > 0 }) {
        used[context] = true
      }
    }

    /// The counts of the bytes that follow `context`.
    func row(_ context: Int) -> [Int] {
      guard !rows.isEmpty else { return [Int](repeating: 0, count: 256) }
      return Array(rows[context << 8..<(context + 1) << 8])
    }
  }

  /// A code: its order, the contexts that have a table (ascending), and each table's code
  /// lengths of the 256 byte values (0 for a value that never follows it). An order-0
  /// code has one table, which serves every context.
  struct Code: Equatable {
    /// 0 (one table) or 1 (a table per previous byte).
    let order: Int
    private(set) var contexts: [UInt8] = []
    /// 256 lengths per table, in the order of `contexts`.
    private(set) var lengths: [UInt8] = []
    /// Per context (byte value), the index of its table, or -1.
    private(set) var slots = [Int](repeating: -1, count: 256)

    /// The canonical code of `order` for `counts` (which count some byte).
    init(order: Int, _ counts: Counts) {
      self.order = order
      guard order == 1 else {
        var total = [Int](repeating: 0, count: 256)
        for context in counts.usedContexts {
          for byte in 0..<256 { total[byte] += counts.rows[context << 8 | byte] }
        }
        append(context: 0, ContentCoding.codeLengths(frequencies: total))
        return
      }
      for context in counts.usedContexts {
        append(context: context, ContentCoding.codeLengths(frequencies: counts.row(context)))
      }
    }

    private init(order: Int) { self.order = order }

    private mutating func append(context: Int, _ row: [UInt8]) {
      if order == 0 {
        slots = [Int](repeating: 0, count: 256)
      } else {
        slots[context] = contexts.count
      }
      contexts.append(UInt8(truncatingIfNeeded: context))
      lengths.append(contentsOf: row)
    }

    /// The form byte of the code.
    var form: UInt8 { order == 0 ? oneTable : tablePerContext }

    /// The lengths of the table at `slot`.
    func row(atSlot slot: Int) -> [UInt8] { Array(lengths[slot << 8..<(slot + 1) << 8]) }

    /// Writes the code (§8.4.1): the table of an order-0 code; the count of contexts,
    /// then each context and its table, of an order-1 code.
    func write(to writer: inout ByteWriter) {
      guard order == 1 else {
        ContentCoding.writeTable(row(atSlot: 0), to: &writer)
        return
      }
      writer.writeVarUInt(contexts.count)
      for slot in contexts.indices {
        writer.writeUInt8(contexts[slot])
        ContentCoding.writeTable(row(atSlot: slot), to: &writer)
      }
    }

    /// The bytes ``write(to:)`` writes.
    var size: Int {
      guard order == 1 else { return ContentCoding.tableSize(row(atSlot: 0)) }
      var size = ContentCoding.varUIntSize(contexts.count)
      for slot in contexts.indices { size += 1 + ContentCoding.tableSize(row(atSlot: slot)) }
      return size
    }

    /// Reads a code of `order` written by ``write(to:)``: an order-1 code has at least one
    /// context, contexts strictly increasing; each table is written the one way (the
    /// caller checks the lengths).
    static func read(order: Int, from reader: inout ByteReader) throws -> Code {
      var code = Code(order: order)
      guard order == 1 else {
        code.append(context: 0, try ContentCoding.readTable(from: &reader))
        return code
      }
      // A context is its byte and a table of at least two bytes.
      let count = try reader.readCount(minimumBytesPerElement: 3)
      guard count >= 1, count <= 256 else {
        throw ConvergeDecodingError.invalidValue(
          offset: reader.offset, reason: "content code without contexts or with more than 256")
      }
      for _ in 0..<count {
        let start = reader.offset
        let context = Int(try reader.readUInt8())
        if let last = code.contexts.last, Int(last) >= context {
          throw ConvergeDecodingError.invalidValue(
            offset: start, reason: "content code contexts not strictly increasing")
        }
        code.append(context: context, try ContentCoding.readTable(from: &reader))
      }
      return code
    }

    /// The bits of `content` coded with this code (every byte must have a code).
    func bitCount(of content: ArraySlice<UInt8>) -> Int {
      var bits = 0
      var context = 0
      for byte in content {
        bits += Int(lengths[slots[context] << 8 | Int(byte)])
        context = Int(byte)
      }
      return bits
    }

    /// The bits all content counted in `counts` takes with this code, or nil if some of
    /// it has no code.
    func bitCount(of counts: Counts) -> Int? {
      var bits = 0
      for context in counts.usedContexts {
        let slot = slots[context]
        guard slot >= 0 else { return nil }
        for byte in 0..<256 {
          let count = counts.rows[context << 8 | byte]
          guard count > 0 else { continue }
          let length = Int(lengths[slot << 8 | byte])
          guard length > 0 else { return nil }
          bits += count * length
        }
      }
      return bits
    }
  }

  /// What a document's content costs in each form, in bits: the raw form its UTF-8; a
  /// coded form its code, a byte count per text (`countBytes`, the bytes of the texts'
  /// counts) and its codes. The form to write is the cheapest, the earlier of equals
  /// (raw, then one table, then a table per context); nil means raw.
  static func cheapestCode(_ counts: Counts, countBytes: Int) -> Code? {
    guard !counts.isEmpty else { return nil }
    var best: (code: Code?, bits: Int) = (nil, counts.total * 8)
    for order in 0...1 {
      let code = Code(order: order, counts)
      guard let bits = code.bitCount(of: counts) else { continue }
      let cost = (code.size + countBytes) * 8 + bits
      if cost < best.bits { best = (code, cost) }
    }
    return best.code
  }

  // MARK: Writing

  /// The writer of a document's content, in one of the two forms.
  struct Writer {
    /// The code, when the content is coded.
    let code: Code?
    /// Per context slot, the canonical code of each byte value
    /// (``ContentCoding/canonicalCodes(lengths:into:)``).
    private let codes: [UInt32]

    /// Chooses the form for the document whose texts write `contents`.
    init(contents: [[UInt8]]) {
      var counts = Counts()
      var countBytes = 0
      for content in contents {
        counts.add(content[...])
        countBytes += ContentCoding.varUIntSize(content.count)
      }
      code = cheapestCode(counts, countBytes: countBytes)
      var codes: [UInt32] = []
      if let code {
        codes = [UInt32](repeating: 0, count: code.contexts.count << 8)
        codes.withUnsafeMutableBufferPointer { codes in
          for slot in code.contexts.indices {
            ContentCoding.canonicalCodes(
              lengths: code.row(atSlot: slot),
              into: UnsafeMutableBufferPointer(rebasing: codes[slot << 8..<(slot + 1) << 8]))
          }
        }
      }
      self.codes = codes
    }

    /// Writes the form byte and the code.
    func writeHeader(to writer: inout ByteWriter) {
      guard let code else {
        writer.writeUInt8(raw)
        return
      }
      writer.writeUInt8(code.form)
      code.write(to: &writer)
    }

    /// Writes one text's content field: its UTF-8, or its byte count and bits.
    func write(_ content: [UInt8], to writer: inout ByteWriter) {
      guard let code else {
        writer.writeLengthPrefixedBytes(content)
        return
      }
      let bits = code.bitCount(of: content[...])
      writer.writeVarUInt(ContentCoding.varUIntSize(content.count) + (bits + 7) / 8)
      writer.writeVarUInt(content.count)
      codes.withUnsafeBufferPointer { codes in
        code.slots.withUnsafeBufferPointer { slots in
          ContentCoding.writeBits(content, bitCount: bits, to: &writer) { context, byte in
            codes[slots[context] << 8 | byte]
          }
        }
      }
    }
  }

  // MARK: Reading

  /// The reader of a document's content: decodes each text's field, counts what it
  /// decoded, and at the end checks that the form and the code are the canonical ones.
  struct Reader: Sendable {
    /// The declared code; nil for the raw form.
    let code: Code?
    /// Every table's decoding tables (``ContentCoding/buildDecoder(lengths:width:into:)``).
    private let decoders: [Int]
    /// Per context (byte value): the offset of its table's decoder in `decoders` (0, a
    /// decoder of nothing, without a table), its lookup width and its longest code,
    /// packed in one `Int` (``packed(offset:width:longest:)``).
    private let contexts: [Int]

    /// `offset << 8 | width << 4 | longest` (width and longest are 1 ... 12).
    private static func packed(offset: Int, width: Int, longest: Int) -> Int {
      offset << 8 | width << 4 | longest
    }
    private var counts = Counts()
    /// The bytes of the texts' byte counts (``cheapestCode(_:countBytes:)``).
    private var countBytes = 0

    /// Reads the form byte and the code of a coded form.
    init(from reader: inout ByteReader) throws {
      let start = reader.offset
      let form = try reader.readUInt8()
      guard form != raw else {
        (code, decoders, contexts) = (nil, [], [])
        return
      }
      guard form == oneTable || form == tablePerContext else {
        throw ConvergeDecodingError.invalidValue(offset: start, reason: "unknown content form")
      }
      let tableStart = reader.offset
      let code = try Code.read(order: form == oneTable ? 0 : 1, from: &reader)
      var shapes: [(width: Int, longest: Int, size: Int)] = []
      var offsets: [Int] = []
      // First a decoder that decodes nothing (a one-bit table of zeros), for contexts
      // without a table: a byte after one fails as a code its table lacks.
      var size = 2 + 4 * (ContentCoding.maximumCodeLength + 1)
      try code.lengths.withUnsafeBufferPointer { lengths in
        for slot in code.contexts.indices {
          let shape = try ContentCoding.decoderShape(
            lengths: UnsafeBufferPointer(rebasing: lengths[slot << 8..<(slot + 1) << 8]),
            tableOffset: tableStart)
          shapes.append(shape)
          offsets.append(size)
          size += shape.size
        }
      }
      var decoders = [Int](repeating: 0, count: size)
      decoders.withUnsafeMutableBufferPointer { decoders in
        guard let base = decoders.baseAddress else { return }
        code.lengths.withUnsafeBufferPointer { lengths in
          for slot in code.contexts.indices {
            ContentCoding.buildDecoder(
              lengths: UnsafeBufferPointer(rebasing: lengths[slot << 8..<(slot + 1) << 8]),
              width: shapes[slot].width, into: base + offsets[slot])
          }
        }
      }
      var contexts = [Int](repeating: Self.packed(offset: 0, width: 1, longest: 1), count: 256)
      for (context, slot) in code.slots.enumerated() where slot >= 0 {
        contexts[context] = Self.packed(
          offset: offsets[slot], width: shapes[slot].width, longest: shapes[slot].longest)
      }
      (self.code, self.decoders, self.contexts) = (code, decoders, contexts)
    }

    /// The UTF-8 of one text's content field; `offset` is the field's, for errors.
    ///
    /// - Throws: `countTooLarge` for a byte count the bits cannot hold, `invalidValue`
    ///   for bits that do not decode (a code its context does not have) or that do not
    ///   end with the content, padded with zero bits; LEB128 errors and `truncated`.
    ///   Memory stays within eight bytes per input byte.
    mutating func decode(_ field: ArraySlice<UInt8>, offset: Int) throws -> ArraySlice<UInt8> {
      guard case .some = code else {
        counts.add(field)
        countBytes += ContentCoding.varUIntSize(field.count)
        return field
      }
      var reader = ByteReader(
        storage: field, range: field.startIndex..<field.endIndex,
        origin: field.startIndex - offset, maximumDepth: 0)
      let countStart = reader.offset
      let rawCount = try reader.readVarUInt()
      countBytes += reader.offset - countStart
      let bitsStart = reader.offset
      let bits = try reader.readBytes(count: reader.remainingCount)
      let count = try ContentCoding.checkedCount(rawCount, at: countStart, bits: bits)
      return try decodeBits(bits, count: count, offset: bitsStart)[...]
    }

    /// Decodes `count` bytes from `bits`, each with its context's table, counting every
    /// (context, byte) pair for ``checkCanonical(offset:)``.
    @inline(__always)
    private mutating func decodeBits(
      _ bits: ArraySlice<UInt8>, count: Int, offset: Int
    ) throws -> [UInt8] {
      let (decoders, contexts) = (self.decoders, self.contexts)
      return try counts.withCounting(count) { counts, _ in
        try decoders.withUnsafeBufferPointer { decoders in
          try contexts.withUnsafeBufferPointer { contexts in
            // Never empty (the decoder of nothing comes first): no byte decodes without it.
            guard let first = decoders.baseAddress else {
              throw ConvergeDecodingError.invalidValue(
                offset: offset, reason: "text content bits that do not decode")
            }
            let base = UnsafeMutablePointer(mutating: first)
            return try ContentCoding.decodeSymbols(
              bits, count: count, offset: offset,
              table: { context in
                let packed = contexts[context]
                return (base + packed &>> 8, packed &>> 4 & 0x0F, packed & 0x0F)
              },
              decoded: { context, byte in counts[context &<< 8 | byte] &+= 1 })
          }
        }
      }
    }

    /// Throws `invalidValue` at `offset` unless the form and the code are the ones the
    /// encoder chooses for the content read (``cheapestCode(_:countBytes:)``).
    func checkCanonical(offset: Int) throws {
      var counts = self.counts
      // Decoding leaves the used contexts to here: those of the tables (a byte after
      // another context fails to decode), every one under one table.
      if let code { counts.markUsed(among: code.order == 1 ? code.contexts.map(Int.init) : nil) }
      guard cheapestCode(counts, countBytes: countBytes) == code else {
        throw ConvergeDecodingError.invalidValue(
          offset: offset,
          reason: code == nil
            ? "raw text content that has a cheaper coded form"
            : "text content code that is not the canonical one")
      }
    }
  }
}
