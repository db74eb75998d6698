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
/// (``cheapestCode(_:countBytes:known:)``), and a decoder recomputes both and refuses any other
/// choice.
///
/// - Complexity: O(n) for n content bytes, plus O(c · 256 log 256) for c contexts.
package enum DocumentContentCode {
  /// The form byte: every text raw.
  static let raw: UInt8 = 0
  /// The form byte: every text coded with one table (an order-0 code).
  static let oneTable: UInt8 = 1
  /// The form byte: every text coded with a table per previous byte (an order-1 code).
  static let tablePerContext: UInt8 = 2

  /// How often each byte follows each context (the byte before it in its text; 0 before
  /// a text's first byte): a row of 256 counts for each context some byte follows, so
  /// that a document whose texts use a few dozen contexts keeps and visits a few dozen
  /// rows, not 256.
  struct Counts {
    /// Per context (byte value), the index of its row in `rows`, or -1.
    private var rowOf = [Int](repeating: -1, count: 256)
    /// 256 counts per row, the rows in the order their contexts were first counted.
    private var rows: [Int] = []
    /// The bytes counted.
    private(set) var total = 0

    /// Whether no byte was counted.
    package var isEmpty: Bool { total == 0 }

    /// The contexts some byte follows, ascending.
    var usedContexts: [Int] { rowOf.indices.filter { rowOf[$0] >= 0 } }

    /// Counts the bytes of one text.
    package mutating func add(_ content: ArraySlice<UInt8>) {
      total += content.count
      content.withUnsafeBufferPointer { content in
        var position = 0
        var context = 0
        while position < content.count {
          addRow(for: context)
          // Counted in place up to the next context without a row (at most 256 times).
          rows.withUnsafeMutableBufferPointer { rows in
            rowOf.withUnsafeBufferPointer { rowOf in
              while position < content.count {
                let row = rowOf[context]
                guard row >= 0 else { return }
                let byte = Int(content[position])
                rows[row << 8 | byte] += 1
                context = byte
                position += 1
              }
            }
          }
        }
      }
    }

    /// Adds `count` (at least 1) to the bytes `byte` that follow `context`.
    package mutating func add(_ count: Int, of byte: Int, after context: Int) {
      addRow(for: context)
      rows[rowOf[context] << 8 | byte] += count
      total += count
    }

    /// Makes room for `count` more rows.
    mutating func reserveRows(_ count: Int) { rows.reserveCapacity(rows.count + count << 8) }

    private mutating func addRow(for context: Int) {
      guard rowOf[context] < 0 else { return }
      rowOf[context] = rows.count >> 8
      rows.append(contentsOf: repeatElement(0, count: 256))
    }

    /// Calls `body` with the 256 counts of the bytes that follow `context`, a used one.
    func withRow<R>(_ context: Int, _ body: (UnsafeBufferPointer<Int>) -> R) -> R {
      let row = rowOf[context]
      return rows.withUnsafeBufferPointer {
        body(UnsafeBufferPointer(rebasing: $0[row << 8..<(row + 1) << 8]))
      }
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

    /// Equal orders, contexts and lengths (`slots` follows from the first two).
    static func == (a: Code, b: Code) -> Bool {
      a.order == b.order && a.contexts == b.contexts
        && ContentCoding.equal(a.lengths, b.lengths)
    }

    /// The canonical code of `order` for `counts` (which count some byte), and the bits
    /// all that content takes with it.
    static func canonical(order: Int, _ counts: Counts) -> (code: Code, bits: Int) {
      var bits = 0
      let code = Code(order: order, counts, bits: &bits)
      return (code, bits)
    }

    private init(order: Int, _ counts: Counts, bits: inout Int) {
      self.order = order
      let tables = order == 1 ? counts.usedContexts : [0]
      contexts = tables.map { UInt8(truncatingIfNeeded: $0) }
      if order == 1 {
        for (slot, context) in tables.enumerated() { slots[context] = slot }
      } else {
        slots = [Int](repeating: 0, count: 256)
      }
      // Every table's lengths written in place, from the count rows as they lie.
      lengths = [UInt8](unsafeUninitializedCapacity: tables.count << 8) { lengths, written in
        for (slot, context) in tables.enumerated() {
          let table = UnsafeMutableBufferPointer(rebasing: lengths[slot << 8..<(slot + 1) << 8])
          guard order == 0 else {
            bits += counts.withRow(context) {
              ContentCoding.codeLengths(frequencies: $0, into: table)
            }
            continue
          }
          var total = [Int](repeating: 0, count: 256)
          for used in counts.usedContexts {
            counts.withRow(used) { row in for byte in 0..<256 { total[byte] += row[byte] } }
          }
          bits += total.withUnsafeBufferPointer {
            ContentCoding.codeLengths(frequencies: $0, into: table)
          }
        }
        written = tables.count << 8
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

    /// Calls `body` with the lengths of the table at `slot`.
    func withRow<R>(atSlot slot: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
      lengths.withUnsafeBufferPointer {
        body(UnsafeBufferPointer(rebasing: $0[slot << 8..<(slot + 1) << 8]))
      }
    }

    /// The form byte of the code.
    var form: UInt8 { order == 0 ? oneTable : tablePerContext }

    /// Writes the code (§8.4.1): the table of an order-0 code; the count of contexts,
    /// then each context and its table, of an order-1 code.
    package func write(to writer: inout ByteWriter) {
      guard order == 1 else {
        withRow(atSlot: 0) { ContentCoding.writeTable($0, to: &writer) }
        return
      }
      writer.writeVarUInt(contexts.count)
      for slot in contexts.indices {
        writer.writeUInt8(contexts[slot])
        withRow(atSlot: slot) { ContentCoding.writeTable($0, to: &writer) }
      }
    }

    /// The bytes ``write(to:)`` writes.
    var size: Int {
      guard order == 1 else { return withRow(atSlot: 0) { ContentCoding.tableSize($0) } }
      var size = ContentCoding.varUIntSize(contexts.count)
      for slot in contexts.indices {
        size += 1 + withRow(atSlot: slot) { ContentCoding.tableSize($0) }
      }
      return size
    }

    /// Reads a code of `order` written by ``write(to:)``: an order-1 code has at least one
    /// context, contexts strictly increasing; each table is written the one way (the
    /// caller checks the lengths).
    package static func read(order: Int, from reader: inout ByteReader) throws -> Code {
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
      code.contexts.reserveCapacity(count)
      code.lengths.reserveCapacity(count << 8)
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
  }

  /// What a document's content costs in each form, in bits: the raw form its UTF-8; a
  /// coded form its code, a byte count per text (`countBytes`, the bytes of the texts'
  /// counts) and its codes. The form to write is the cheapest, the earlier of equals
  /// (raw, then one table, then a table per context); nil means raw.
  ///
  /// `known` is a code whose written size is known (a decoder's, as read): a code equal to
  /// it takes that size without adding up its tables again.
  static func cheapestCode(
    _ counts: Counts, countBytes: Int, known: (code: Code, size: Int)? = nil
  ) -> Code? {
    guard !counts.isEmpty else { return nil }
    var best: (code: Code?, bits: Int) = (nil, counts.total * 8)
    for order in 0...1 {
      let (code, bits) = Code.canonical(order: order, counts)
      let size = known.flatMap { $0.code == code ? $0.size : nil } ?? code.size
      let cost = (size + countBytes) * 8 + bits
      if cost < best.bits { best = (code, cost) }
    }
    return best.code
  }

  // MARK: Writing

  /// The writer of a document's content, in one of the two forms.
  package struct Writer {
    /// The code, when the content is coded.
    let code: Code?
    /// Per context slot, the canonical code of each byte value
    /// (``ContentCoding/canonicalCodes(lengths:into:)``).
    private let codes: [UInt32]

    /// Chooses the form for the document whose texts write `contents`.
    package init(contents: [[UInt8]]) {
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
            code.withRow(atSlot: slot) {
              ContentCoding.canonicalCodes(
                lengths: $0,
                into: UnsafeMutableBufferPointer(rebasing: codes[slot << 8..<(slot + 1) << 8]))
            }
          }
        }
      }
      self.codes = codes
    }

    /// Writes the form byte and the code.
    package func writeHeader(to writer: inout ByteWriter) {
      guard let code else {
        writer.writeUInt8(raw)
        return
      }
      writer.writeUInt8(code.form)
      code.write(to: &writer)
    }

    /// Writes one text's content field: its UTF-8, or its byte count and bits.
    package func write(_ content: [UInt8], to writer: inout ByteWriter) {
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
  package struct Reader: Sendable {
    /// The declared code; nil for the raw form.
    let code: Code?
    /// Every table's decoding tables
    /// (``ContentCoding/buildDecoder(lengths:width:into:successor:)``, extended by
    /// ``ContentCoding/extendEntries(at:width:base:successors:)``), whose entries name the
    /// table of the byte after their last (``successors``). Under an order-1 code, the
    /// count beside each entry counts its lookups: each stands for one to three (context,
    /// byte) pairs, counted once the content is read.
    private var decoders: [Int]
    /// Per context (byte value), its table as the entries of the bytes before it name it
    /// (``ContentCoding/Entry/successor(offset:width:)``): the decoder of nothing (offset 0)
    /// for a context without a table.
    private let successors: [Int]
    /// An order-1 code's tables: each one's context, and where its tables lie in
    /// `decoders`.
    private let tables: [(context: Int, offset: Int, width: Int, size: Int)]
    /// Whether the lookup tables read ``ContentCoding/lookupBits`` bits and their entries
    /// hold the bytes after theirs that those bits code too
    /// (``ContentCoding/extendEntries(at:width:base:successors:)``): when what follows
    /// the code is at least ``extendingBytesPerTable`` bytes a table. Extending costs
    /// about as much as decoding a few thousand bytes a table and then decodes about three
    /// bytes a lookup instead of one (a third of a 50,000-note library's load); for a
    /// smaller content (automerge-paper's: 109 KB for 94 tables) it cost more than it
    /// saved.
    let extendsEntries: Bool
    static let extendingBytesPerTable = 4096
    /// The most bits a table that is not extended reads: a quarter of 9 bits' slots to
    /// zero, fill and count for the canonical check (automerge-paper's 94 tables: 190 KB
    /// instead of 770 KB), where the codes longer than 7 bits, a context's rare bytes, take
    /// the search by length. 1.7% fewer instructions for automerge-paper's `readBody`
    /// than 9 bits (8 bits: 1.0%, 6 bits: 1.2%; 5 bits: 0.2% more).
    static let narrowLookupBits = 7

    /// What was decoded under a raw form or an order-0 code, (context, byte) pairs.
    private var counts = Counts()
    /// The bytes of the texts' byte counts (``cheapestCode(_:countBytes:known:)``).
    private var countBytes = 0
    /// The bytes the code took after the form byte.
    private let codeSize: Int

    /// Reads the form byte and the code of a coded form. `extending` overrides the choice
    /// of ``extendsEntries`` (for tests: both choices decode alike).
    package init(from reader: inout ByteReader, extending: Bool? = nil) throws {
      let start = reader.offset
      let form = try reader.readUInt8()
      guard form != raw else {
        (code, decoders, successors, tables, codeSize) = (nil, [], [], [], 0)
        extendsEntries = false
        return
      }
      guard form == oneTable || form == tablePerContext else {
        throw ConvergeDecodingError.invalidValue(offset: start, reason: "unknown content form")
      }
      let tableStart = reader.offset
      let code = try Code.read(order: form == oneTable ? 0 : 1, from: &reader)
      codeSize = reader.offset - tableStart
      let extending =
        extending ?? (reader.remainingCount / Self.extendingBytesPerTable >= code.contexts.count)
      extendsEntries = extending
      var shapes: [(width: Int, size: Int)] = []
      var offsets: [Int] = []
      shapes.reserveCapacity(code.contexts.count)
      offsets.reserveCapacity(code.contexts.count)
      // First a decoder that decodes nothing (a one-bit table of zeros), for contexts
      // without a table: a byte after one fails as a code its table lacks.
      var size = ContentCoding.symbolsOffset(width: 1)
      try code.lengths.withUnsafeBufferPointer { lengths in
        for slot in code.contexts.indices {
          let shape = try ContentCoding.decoderShape(
            lengths: UnsafeBufferPointer(rebasing: lengths[slot << 8..<(slot + 1) << 8]),
            tableOffset: tableStart,
            width: extending ? .exactly(ContentCoding.lookupBits) : .atMost(Self.narrowLookupBits))
          shapes.append(shape)
          offsets.append(size)
          size += shape.size
        }
      }
      let tables = (code.order == 1 ? Array(shapes.indices) : []).map {
        (
          context: Int(code.contexts[$0]), offset: offsets[$0], width: shapes[$0].width,
          size: shapes[$0].size
        )
      }
      var successors = [Int](
        repeating: ContentCoding.Entry.successor(offset: 0, width: 1), count: 256)
      for (context, slot) in code.slots.enumerated() where slot >= 0 {
        successors[context] = ContentCoding.Entry.successor(
          offset: offsets[slot], width: shapes[slot].width)
      }
      // Every entry is written by `buildDecoder`: the decoder of nothing is that of a code
      // without values.
      let decoders = [Int](unsafeUninitializedCapacity: size) { decoders, written in
        guard let base = decoders.baseAddress else { return }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 256) { none in
          none.initialize(repeating: 0)
          ContentCoding.buildDecoder(lengths: UnsafeBufferPointer(none), width: 1, into: base) {
            _ in 0
          }
        }
        code.lengths.withUnsafeBufferPointer { lengths in
          for slot in code.contexts.indices {
            ContentCoding.buildDecoder(
              lengths: UnsafeBufferPointer(rebasing: lengths[slot << 8..<(slot + 1) << 8]),
              width: shapes[slot].width, into: base + offsets[slot]
            ) { successors[$0] }
          }
        }
        // Once every table is built: an entry's next bytes come from other tables.
        successors.withUnsafeBufferPointer { successors in
          guard extending, let successors = successors.baseAddress else { return }
          for slot in code.contexts.indices {
            ContentCoding.extendEntries(
              at: base + offsets[slot], width: shapes[slot].width, base: base,
              successors: successors)
          }
        }
        written = size
      }
      (self.code, self.decoders, self.successors, self.tables) = (
        code, decoders, successors, tables
      )
    }

    /// The UTF-8 of one text's content field; `offset` is the field's, for errors.
    ///
    /// - Throws: `countTooLarge` for a byte count the bits cannot hold, `invalidValue`
    ///   for bits that do not decode (a code its context does not have) or that do not
    ///   end with the content, padded with zero bits; LEB128 errors and `truncated`.
    ///   Memory stays within eight bytes per input byte.
    package mutating func decode(_ field: ArraySlice<UInt8>, offset: Int) throws -> ArraySlice<
      UInt8
    > {
      // The order read without binding the code (a copy of its arrays per text).
      guard let order = code?.order else {
        counts.add(field)
        countBytes += ContentCoding.varUIntSize(field.count)
        return field
      }
      // Read here rather than through `readField` (which would also have to return the
      // count's size): sharing it cost the counted decode about 330 instructions a text
      // (callgrind, three loads of 10,000 notes: +10 M).
      var reader = ByteReader(
        storage: field, range: field.startIndex..<field.endIndex,
        origin: field.startIndex - offset, maximumDepth: 0)
      let countStart = reader.offset
      let rawCount = try reader.readVarUInt()
      countBytes += reader.offset - countStart
      let bitsStart = reader.offset
      let bits = try reader.readBytes(count: reader.remainingCount)
      let count = try ContentCoding.checkedCount(rawCount, at: countStart, bits: bits)
      let first = successors[0]
      guard order == 1 else {
        let content = try decodeBits(bits, count: count, offset: bitsStart, first: first) {
          _ in
        } ended: { _, _, _ in
        }
        counts.add(content[...])
        return content[...]
      }
      // Where the content ends inside an entry: its bytes taken, and the entry before.
      var last: (entry: Int, taken: Int, previous: Int)?
      let content = try decodeBits(bits, count: count, offset: bitsStart, first: first) {
        $0[1] &+= 1
      } ended: {
        last = ($0, $1, $2)
      }
      if let last {
        // The bytes taken, each after the one before it (the entry before's last byte).
        var context = ContentCoding.Entry.lastSymbol(of: last.previous)
        for position in 0..<last.taken {
          let byte = Int(ContentCoding.Entry.symbol(position, of: last.entry))
          counts.add(1, of: byte, after: context)
          context = byte
        }
      }
      return content[...]
    }

    /// Decodes `count` bytes from `bits` with `decoders`, the first with the table `first`
    /// names, as ``ContentCoding/decodeSymbols(_:count:offset:first:table:decoded:ended:)``
    /// does.
    @inline(__always)
    private mutating func decodeBits(
      _ bits: ArraySlice<UInt8>, count: Int, offset: Int, first: Int,
      decoded: (_ slot: UnsafeMutablePointer<Int>) -> Void,
      ended: (_ entry: Int, _ taken: Int, _ previous: Int) -> Void
    ) throws -> [UInt8] {
      try decoders.withUnsafeMutableBufferPointer { decoders in
        try Self.decodeBits(
          bits, count: count, offset: offset, first: first, decoders: decoders.baseAddress,
          decoded: decoded, ended: ended)
      }
    }

    @inline(__always)
    private static func decodeBits(
      _ bits: ArraySlice<UInt8>, count: Int, offset: Int, first: Int,
      decoders: UnsafeMutablePointer<Int>?,
      decoded: (_ slot: UnsafeMutablePointer<Int>) -> Void,
      ended: (_ entry: Int, _ taken: Int, _ previous: Int) -> Void
    ) throws -> [UInt8] {
      // Never empty (the decoder of nothing comes first): no byte decodes without it.
      guard let base = decoders else {
        throw ConvergeDecodingError.invalidValue(
          offset: offset, reason: "text content bits that do not decode")
      }
      return try ContentCoding.decodeSymbols(
        bits, count: count, offset: offset, first: first,
        table: { ContentCoding.Entry.table($0, in: base) }, decoded: decoded, ended: ended)
    }

    /// ``decode(_:offset:)`` without counting what it decodes, for a text deferred by a
    /// load that skipped the canonical check (``DeferredTexts``): the tables are only
    /// read, so texts decode concurrently from one shared reader.
    package func decodeUncounted(_ field: ArraySlice<UInt8>, offset: Int) throws -> ArraySlice<
      UInt8
    > {
      guard code != nil else { return field }
      let (bits, count, bitsStart) = try Self.readField(field, offset: offset)
      let first = successors[0]
      return try decoders.withUnsafeBufferPointer { decoders in
        // Read only: neither closure writes through the slot it is given.
        try Self.decodeBits(
          bits, count: count, offset: bitsStart, first: first,
          decoders: decoders.baseAddress.map { UnsafeMutablePointer(mutating: $0) },
          decoded: { _ in }, ended: { _, _, _ in })
      }[...]
    }

    /// A coded content field's parts: its bits, the byte count they decode to (checked
    /// against them), and the bits' offset.
    private static func readField(_ field: ArraySlice<UInt8>, offset: Int) throws -> (
      bits: ArraySlice<UInt8>, count: Int, bitsOffset: Int
    ) {
      var reader = ByteReader(
        storage: field, range: field.startIndex..<field.endIndex,
        origin: field.startIndex - offset, maximumDepth: 0)
      let countStart = reader.offset
      let rawCount = try reader.readVarUInt()
      let bitsStart = reader.offset
      let bits = try reader.readBytes(count: reader.remainingCount)
      let count = try ContentCoding.checkedCount(rawCount, at: countStart, bits: bits)
      return (bits, count, bitsStart)
    }

    /// Throws `invalidValue` at `offset` unless the form and the code are the ones the
    /// encoder chooses for the content read (``cheapestCode(_:countBytes:known:)``).
    package func checkCanonical(offset: Int) throws {
      var counts = self.counts
      // An order-1 code's counts by entry become (context, byte) counts.
      counts.reserveRows(tables.count)
      decoders.withUnsafeBufferPointer { decoders in
        // `count` lookups of `entry`: (context, byte) pairs.
        func add(_ count: Int, of entry: Int, after context: Int) {
          guard count > 0 else { return }
          var context = context
          for position in 0..<ContentCoding.Entry.count(entry) {
            let byte = Int(ContentCoding.Entry.symbol(position, of: entry))
            counts.add(count, of: byte, after: context)
            context = byte
          }
        }
        // The entries at `range` of a table for `context`: a code's slots hold one entry,
        // so its counts are added up first.
        func addEntries(_ range: Range<Int>, after context: Int) {
          var run = (entry: 0, count: 0)
          for index in stride(from: range.lowerBound, to: range.upperBound, by: 2) {
            if decoders[index] != run.entry {
              add(run.count, of: run.entry, after: context)
              run = (decoders[index], 0)
            }
            run.count += decoders[index + 1]
          }
          add(run.count, of: run.entry, after: context)
        }
        for table in tables {
          // The lookup table's entries, then those of the codes past it.
          let symbols = table.offset + ContentCoding.symbolsOffset(width: table.width)
          addEntries(table.offset..<table.offset + 2 << table.width, after: table.context)
          addEntries(symbols..<table.offset + table.size, after: table.context)
        }
      }
      let known = code.map { (code: $0, size: codeSize) }
      guard cheapestCode(counts, countBytes: countBytes, known: known) == code else {
        throw ConvergeDecodingError.invalidValue(
          offset: offset,
          reason: code == nil
            ? "raw text content that has a cheaper coded form"
            : "text content code that is not the canonical one")
      }
    }
  }
}
