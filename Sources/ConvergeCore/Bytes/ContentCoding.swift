/// The content of a text on the wire (`FORMAT.md` §8.3.1): its UTF-8 as is, or a
/// canonical Huffman code of those bytes when that is smaller.
///
/// A note body's UTF-8 is most of a document state (about two thirds of the
/// automerge-paper state), and prose has far fewer than eight bits of information per
/// byte: coded, that content takes about 60% of its size. The code is a byte-wise
/// (order-0) canonical Huffman code limited to 12 bits, so decoding is one table lookup
/// per byte.
///
/// The form is canonical, like the rest of the format: content of at least
/// ``minimumCodedLength`` bytes is coded exactly when the coded field is shorter than the
/// UTF-8, the code lengths are a function of the byte frequencies
/// (``codeLengths(frequencies:)``), and a decoder recomputes both and refuses any other
/// choice. Raw UTF-8 never starts with `0xFF`, which marks the coded form.
///
/// - Complexity: O(n) for n content bytes, plus O(256 log 256) to build a code.
package enum ContentCoding {
  /// The first byte of coded content (never the first byte of valid UTF-8).
  static let marker: UInt8 = 0xFF
  /// Shorter content is always raw: a code table would not pay for itself.
  static let minimumCodedLength = 64
  /// The longest code, so that a 4,096-entry table decodes any code with one lookup.
  static let maximumCodeLength = 12

  // MARK: Writing

  /// Writes `content` (valid UTF-8) as a `bytes` field, coded when that is smaller.
  package static func write(_ content: [UInt8], to writer: inout ByteWriter) {
    guard let code = codeIfShorter(content[...]) else {
      writer.writeLengthPrefixedBytes(content)
      return
    }
    // Written straight into `writer`: the field's size is known before its bits.
    writer.writeVarUInt(code.sizes.header + code.sizes.bits)
    writer.writeUInt8(marker)
    writer.writeVarUInt(content.count)
    writeTable(code.lengths, to: &writer)
    withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 256) { codes in
      code.lengths.withUnsafeBufferPointer { canonicalCodes(lengths: $0, into: codes) }
      writeBits(content, bitCount: code.sizes.bits * 8, to: &writer) { _, byte in codes[byte] }
    }
  }

  /// Writes the code of every byte of `content`, most significant bit first, padded with
  /// zero bits to whole bytes (`bitCount` is at least the bits the codes take, at most 7
  /// more). `code(previous, byte)` is the code of `byte` after `previous` (0 before the
  /// first byte) as `code << 4 | length`, from ``canonicalCodes(lengths:into:)``.
  @inline(__always)
  static func writeBits(
    _ content: [UInt8], bitCount: Int, to writer: inout ByteWriter,
    code: (_ previous: Int, _ byte: Int) -> UInt32
  ) {
    writer.writeBytes(count: (bitCount + 7) / 8) { output in
      content.withUnsafeBufferPointer { content in
        // `buffer`'s low `filled` bits are not yet written out (at most 7 + 12 after a
        // code).
        var buffer: UInt64 = 0
        var filled = 0
        var position = 0
        var previous = 0
        for byte in content {
          let entry = code(previous, Int(byte))
          previous = Int(byte)
          let length = Int(entry & 0x0F)
          buffer = buffer << UInt64(length) | UInt64(entry >> 4)
          filled += length
          while filled >= 8 {
            filled -= 8
            output[position] = UInt8(truncatingIfNeeded: buffer >> UInt64(filled))
            position += 1
          }
        }
        if filled > 0 {
          output[position] = UInt8(truncatingIfNeeded: buffer << UInt64(8 - filled))
        }
      }
    }
  }

  /// The code lengths of `bytes` when the coded form is the one to write (at least
  /// ``minimumCodedLength`` bytes, and a coded field shorter than they are); nil when
  /// they are written raw. Encoder and decoder both decide with it.
  static func codeLengthsIfShorter(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
    codeIfShorter(bytes)?.lengths
  }

  /// ``codeLengthsIfShorter(_:)``, with the sizes of the coded field's parts.
  private static func codeIfShorter(_ bytes: ArraySlice<UInt8>) -> (
    lengths: [UInt8], sizes: (header: Int, bits: Int)
  )? {
    guard bytes.count >= minimumCodedLength else { return nil }
    let frequencies = Self.frequencies(bytes)
    let lengths = codeLengths(frequencies: frequencies)
    let sizes = codedSizes(count: bytes.count, frequencies: frequencies, lengths: lengths)
    return sizes.header + sizes.bits < bytes.count ? (lengths, sizes) : nil
  }

  /// The bytes of the coded field's content before its bits (marker, length, code
  /// table), and those of its bits.
  private static func codedSizes(count: Int, frequencies: [Int], lengths: [UInt8]) -> (
    header: Int, bits: Int
  ) {
    var bits = 0
    for symbol in 0..<256 { bits += frequencies[symbol] * Int(lengths[symbol]) }
    return (1 + varUIntSize(count) + tableSize(lengths), (bits + 7) / 8)
  }

  /// Writes the code lengths of byte values `0 ..< s`, where `s - 1` is the last used
  /// one: `s`, then one nibble per used value and short runs of nibbles for unused ones
  /// (§8.3.1), so a table of 60 letters and signs takes about 40 bytes.
  static func writeTable(_ lengths: [UInt8], to writer: inout ByteWriter) {
    lengths.withUnsafeBufferPointer { writeTable($0, to: &writer) }
  }

  /// ``writeTable(_:to:)`` of the 256 `lengths` at a pointer (a row of a document's code).
  static func writeTable(_ lengths: UnsafeBufferPointer<UInt8>, to writer: inout ByteWriter) {
    writer.writeVarUInt(symbolCount(lengths))
    // Nibbles go out in pairs, high first; a lone last one is padded with zero.
    var high: UInt8?
    forEachTableNibble(lengths) { nibble in
      if let first = high {
        writer.writeUInt8(first << 4 | nibble)
        high = nil
      } else {
        high = nibble
      }
    }
    if let first = high { writer.writeUInt8(first << 4) }
  }

  /// The bytes ``writeTable(_:to:)`` writes for `lengths`.
  static func tableSize(_ lengths: [UInt8]) -> Int {
    lengths.withUnsafeBufferPointer { tableSize($0) }
  }

  /// ``tableSize(_:)`` of the 256 `lengths` at a pointer.
  static func tableSize(_ lengths: UnsafeBufferPointer<UInt8>) -> Int {
    var nibbles = 0
    forEachTableNibble(lengths) { _ in nibbles += 1 }
    return varUIntSize(symbolCount(lengths)) + (nibbles + 1) / 2
  }

  /// One more than the largest used byte value.
  private static func symbolCount(_ lengths: UnsafeBufferPointer<UInt8>) -> Int {
    (lengths.lastIndex { $0 > 0 } ?? -1) + 1
  }

  /// Calls `body` with each nibble of the table of `lengths`, in order: a used value's
  /// length, or a gap of unused values as `longestSkip`-long skips and then one short or
  /// long skip for the rest (the one way ``readTable(from:)`` accepts).
  @inline(__always)
  private static func forEachTableNibble(
    _ lengths: UnsafeBufferPointer<UInt8>, _ body: (UInt8) -> Void
  ) {
    let symbolCount = symbolCount(lengths)
    var symbol = 0
    while symbol < symbolCount {
      guard lengths[symbol] == 0 else {
        body(lengths[symbol])
        symbol += 1
        continue
      }
      var unused = 0
      while lengths[symbol + unused] == 0 { unused += 1 }
      symbol += unused
      while unused > 0 {
        let run = Swift.min(unused, longestSkip)
        if run > longestShortSkip {
          let extra = UInt8(run - longestShortSkip - 1)
          body(longSkipToken)
          body(extra >> 4)
          body(extra & 0x0F)
        } else {
          body(shortSkipToken)
          body(UInt8(run - 1))
        }
        unused -= run
      }
    }
  }

  /// Table tokens: a nibble 1...12 is the next value's code length; `0 k` skips k + 1
  /// unused values, `13 h l` skips 17 + (h << 4 | l).
  static let shortSkipToken: UInt8 = 0
  static let longSkipToken: UInt8 = 13
  static let longestShortSkip = 16
  static let longestSkip = 16 + 256

  static func varUIntSize(_ value: Int) -> Int {
    var size = 1
    var rest = value >> 7
    while rest > 0 {
      size += 1
      rest >>= 7
    }
    return size
  }

  // MARK: Reading

  /// The UTF-8 of a content field read from a message: `field` itself when it is raw,
  /// or its decoded bytes. `offset` is the field's offset in the message, for errors.
  ///
  /// - Throws: `invalidValue` for a code that is not canonical (lengths that are not
  ///   those of the content's byte frequencies, coded content that is not shorter than
  ///   its UTF-8 or shorter than ``minimumCodedLength``, raw content that the code would
  ///   shorten, a table not written the one way), bits that decode to nothing, padding
  ///   that is not zero, or a bit stream that does not end with the content;
  ///   `countTooLarge` for a length the bits cannot hold; LEB128 errors and `truncated`.
  ///   Memory stays within eight bytes per input byte.
  package static func decode(_ field: ArraySlice<UInt8>, offset: Int) throws -> ArraySlice<UInt8> {
    guard field.first == marker else {
      // Raw: refused if the coded form would have been chosen.
      guard codeLengthsIfShorter(field) == nil else {
        throw ConvergeDecodingError.invalidValue(
          offset: offset, reason: "raw text content that has a shorter coded form")
      }
      return field
    }
    var reader = ByteReader(
      storage: field, range: field.startIndex + 1..<field.endIndex,
      origin: field.startIndex - offset, maximumDepth: 0)
    let countStart = reader.offset
    let rawCount = try reader.readVarUInt()
    let tableStart = reader.offset
    let lengths = try readTable(from: &reader)
    let bitsStart = reader.offset
    let bits = try reader.readBytes(count: reader.remainingCount)
    let count = try checkedCount(rawCount, at: countStart, bits: bits)
    let content = try decodeBits(
      bits, count: count, lengths: lengths, tableOffset: tableStart, offset: bitsStart)
    // The content must be coded (long enough, and the field shorter than the UTF-8),
    // with the lengths its byte frequencies give. The table was read the one way it is
    // written, so equal lengths mean an equal table.
    guard count >= minimumCodedLength, field.count < count,
      equal(codeLengths(frequencies: frequencies(content[...])), lengths)
    else {
      throw ConvergeDecodingError.invalidValue(
        offset: tableStart, reason: "coded text content that is not the canonical form")
    }
    return content[...]
  }

  /// Whether two runs of tables of 256 code lengths are equal (compared eight at a time:
  /// the element-wise `==` of the arrays was a twentieth of a library's load).
  static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count, a.count % 256 == 0 else { return a == b }
    return a.withUnsafeBytes { a in
      b.withUnsafeBytes { b in
        var differ: UInt64 = 0
        for offset in stride(from: 0, to: a.count, by: 8) {
          differ |=
            a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            ^ b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        }
        return differ == 0
      }
    }
  }

  /// Reads a table written by ``writeTable(_:to:)``, refusing any other way of writing
  /// its lengths: a table that ends in a skip or a nonzero padding nibble, or a gap of
  /// unused values split otherwise than ``forEachTableNibble(_:_:)`` splits it. The
  /// caller checks the lengths themselves.
  static func readTable(from reader: inout ByteReader) throws -> [UInt8] {
    let start = reader.offset
    let rawSymbolCount = try reader.readVarUInt()
    guard rawSymbolCount >= 1, rawSymbolCount <= 256 else {
      throw ConvergeDecodingError.invalidValue(
        offset: start, reason: "code table of more than 256 values")
    }
    let symbolCount = Int(rawSymbolCount)
    var lengths = [UInt8](repeating: 0, count: 256)
    var pending: UInt8?
    func nextNibble() throws -> UInt8 {
      if let nibble = pending {
        pending = nil
        return nibble
      }
      let byte = try reader.readUInt8()
      pending = byte & 0x0F
      return byte >> 4
    }
    func notCanonical(_ reason: String) -> ConvergeDecodingError {
      .invalidValue(offset: reader.offset, reason: reason)
    }
    var symbol = 0
    // The skip just read, if the last token was one.
    var previousSkip: Int?
    while symbol < symbolCount {
      let token = try nextNibble()
      var skip = 0
      switch token {
      case shortSkipToken: skip = Int(try nextNibble()) + 1
      case longSkipToken: skip = longestShortSkip + 1 + Int(try nextNibble() << 4 | nextNibble())
      case 1...UInt8(maximumCodeLength):
        lengths[symbol] = token
        symbol += 1
        previousSkip = nil
        continue
      default:
        throw notCanonical("bad code table token")
      }
      // Only a longest skip is followed by another skip (a gap is written as longest
      // skips, then one for the rest).
      if let previous = previousSkip, previous != longestSkip {
        throw notCanonical("code table gap not written the one way")
      }
      guard skip <= symbolCount - symbol else {
        throw notCanonical("code table runs past its values")
      }
      symbol += skip
      previousSkip = skip
    }
    // The last value described is a used one, and a lone last nibble is padded with 0.
    guard previousSkip == nil, pending ?? 0 == 0 else {
      throw notCanonical("code table not written the one way")
    }
    return lengths
  }

  /// The bits of the table below which a code is decoded with one lookup; longer codes
  /// (rare values) are found by their canonical ranges. A short text's code rarely needs
  /// all 12 bits, and filling a 4,096-entry table for it cost more than decoding it.
  static let lookupBits = 9

  /// Decodes `count` bytes from `bits` with the canonical code of `lengths`.
  private static func decodeBits(
    _ bits: ArraySlice<UInt8>, count: Int, lengths: [UInt8], tableOffset: Int, offset: Int
  ) throws -> [UInt8] {
    try lengths.withUnsafeBufferPointer { lengths in
      let shape = try decoderShape(lengths: lengths, tableOffset: tableOffset)
      return try withUnsafeTemporaryAllocation(of: Int.self, capacity: shape.size) { scratch in
        guard let base = scratch.baseAddress else { return [] }
        buildDecoder(lengths: lengths, width: shape.width, into: base) { _ in 0 }
        return try decodeSymbols(
          bits, count: count, offset: offset, first: 0, table: { _ in (base, shape.width) },
          decoded: { _ in }, ended: { _, _, _ in })
      }
    }
  }

  /// The byte count a coded field announces, checked against its bits: every byte takes
  /// at least one bit, which bounds the output (and the memory a decoder takes) by the
  /// input.
  ///
  /// - Throws: `countTooLarge` at `start` for a count the bits cannot hold.
  static func checkedCount(_ raw: UInt64, at start: Int, bits: ArraySlice<UInt8>) throws -> Int {
    guard raw <= UInt64(bits.count) * 8 else {
      throw ConvergeDecodingError.countTooLarge(offset: start)
    }
    return try ByteReader.checkedInt(raw, at: start)
  }

  /// Decodes `count` bytes from `bits` with tables from
  /// ``buildDecoder(lengths:width:into:successor:)``, maybe extended by
  /// ``extendEntries(at:width:base:successors:)``: the first entry with the table
  /// `table(first)` gives, each next one with the table `table` gives for the entry before
  /// it (whose high bits can name the table of the byte after its last). Calls `decoded`
  /// with the place of each entry whose bytes were all taken, and `ended` with an entry
  /// that holds more bytes than the content has left, the bytes taken from it and the entry
  /// before it. The one decoding loop of a text's own code (one table for every byte) and
  /// of a document's (a table per previous byte).
  ///
  /// - Throws: `invalidValue` at `offset` for bits that do not decode (a code the
  ///   context's table lacks) or that do not end with the content, padded with zero
  ///   bits.
  @inline(__always)
  static func decodeSymbols(
    _ bits: ArraySlice<UInt8>, count: Int, offset: Int, first: Int,
    table: (_ previous: Int) -> (decoder: UnsafeMutablePointer<Int>, width: Int),
    decoded: (_ slot: UnsafeMutablePointer<Int>) -> Void,
    ended: (_ entry: Int, _ taken: Int, _ previous: Int) -> Void
  ) throws -> [UInt8] {
    let invalid = ConvergeDecodingError.invalidValue(
      offset: offset, reason: "text content bits that do not decode")
    return try bits.withUnsafeBufferPointer { input in
      try [UInt8](unsafeUninitializedCapacity: count) { output, written in
        guard let outputBase = output.baseAddress else { return }
        var reader = BitReader(input)
        var previous = first
        var index = 0
        // While four bytes are left: an entry's bytes stored at once, the ones past them
        // overwritten next.
        while index < count &- 3 {
          let (decoder, width) = table(previous)
          reader.refill()
          guard let slot = lookup(reader.buffer, in: decoder, width: width) else { throw invalid }
          let entry = slot.pointee
          let length = entry & 0x0F
          guard length <= reader.available else { throw invalid }
          UnsafeMutableRawPointer(outputBase + index).storeBytes(
            of: UInt32(truncatingIfNeeded: entry &>> Entry.firstSymbolShift).littleEndian,
            as: UInt32.self)
          index &+= Entry.count(entry)
          reader.skip(length)
          decoded(slot)
          previous = entry
        }
        // The last bytes: an entry can hold more than are left.
        while index < count {
          let (decoder, width) = table(previous)
          reader.refill()
          guard let slot = lookup(reader.buffer, in: decoder, width: width) else { throw invalid }
          let entry = slot.pointee
          let held = Entry.count(entry)
          let taken = Swift.min(held, count &- index)
          let length = taken < held ? Entry.length(of: taken, in: entry) : entry & 0x0F
          guard length <= reader.available else { throw invalid }
          for position in 0..<taken {
            output[index &+ position] = Entry.symbol(position, of: entry)
          }
          index &+= taken
          reader.skip(length)
          if taken < held { ended(entry, taken, previous) } else { decoded(slot) }
          previous = entry
        }
        guard reader.isAtPaddedEnd else { throw invalid }
        // Set last: a throw leaves nothing to free (the bytes are trivial).
        written = count
      }
    }
  }

  /// The fields of a decoding entry (``buildDecoder(lengths:width:into:successor:)``):
  /// one to three bytes with their codes' lengths, and the bits of the table after them.
  enum Entry {
    /// Where the first byte sits; the second and third follow, 8 bits each.
    static let firstSymbolShift = 14
    /// Where the caller's bits (the successor table) start.
    static let successorShift = 38

    /// How many bytes the entry holds (1 ... 3; 0 for successor bits alone, the table of
    /// a content's first byte).
    @inline(__always)
    package static func count(_ entry: Int) -> Int { entry &>> 4 & 0x03 }

    /// The entry's last byte; 0 for successor bits alone (a content's first byte follows
    /// a 0).
    static func lastSymbol(of entry: Int) -> Int {
      count(entry) == 0 ? 0 : Int(symbol(count(entry) - 1, of: entry))
    }

    /// The length of the codes of the entry's first `count` bytes (1 or 2 of them; all
    /// of them: the low four bits).
    @inline(__always)
    static func length(of count: Int, in entry: Int) -> Int {
      entry &>> (2 &+ count &* 4) & 0x0F
    }

    /// Byte `position` (0 ... 2) of the entry.
    @inline(__always)
    static func symbol(_ position: Int, of entry: Int) -> UInt8 {
      UInt8(truncatingIfNeeded: entry &>> (firstSymbolShift &+ position &* 8))
    }

    /// The entry of one byte, `symbol`, whose code is `length` bits long.
    static func single(_ symbol: Int, length: Int, successor: Int) -> Int {
      successor | symbol << firstSymbolShift | length << 6 | 1 << 4 | length
    }

    /// A table as an entry's bits from bit 38: `offset << 42 | width << 38` (width is
    /// 1 ... 12, offsets stay below 2^21). Decoding the next bytes reads their table from
    /// the entry before them, not from a second array.
    static func successor(offset: Int, width: Int) -> Int {
      offset << 42 | width << successorShift
    }

    /// The table and width `entry`'s successor bits name, in the tables at `base`.
    @inline(__always)
    static func table(
      _ entry: Int, in base: UnsafeMutablePointer<Int>
    ) -> (decoder: UnsafeMutablePointer<Int>, width: Int) {
      (base + entry &>> 42, entry &>> successorShift & 0x0F)
    }
  }

  /// The lengths' levels: codes of 1 ... 12 bits (index 0 unused).
  private static let levels = maximumCodeLength + 1

  /// How many bits a lookup table reads: `exactly` that many (tables whose entries are
  /// extended use every bit), or the longest code's length but `atMost` that many.
  enum LookupWidth {
    case exactly(Int)
    case atMost(Int)
  }

  /// The shape of the decoding tables of the canonical code of `lengths` (256 code
  /// lengths, 0 for unused values): the bits its lookup table reads (`width`, never more
  /// than ``lookupBits``) and the `Int`s the tables take.
  ///
  /// The tables (``buildDecoder(lengths:width:into:successor:)``) are a lookup table of
  /// the first `width` bits (each an entry, 0 where a longer code or none starts); then
  /// the longest code and, per length, the count of codes, the first code, the index of
  /// its first value and the next free one; then the used values' entries by (length,
  /// value). Each entry takes two `Int`s, the entry and a count beside it (0 when built)
  /// that a decoder can keep in the cache line it reads the entry from. An entry holds one
  /// to three bytes decoded at once (``Entry``): from bit 38 up the caller's bits (the
  /// table of the byte after its last), bits 14 ... 37 the bytes, bits 10 ... 13 and
  /// 6 ... 9 the length of the codes of its first two bytes and of its first, bits 4 ... 5
  /// its byte count, bits 0 ... 3 the length of all its codes.
  /// ``buildDecoder(lengths:width:into:successor:)`` writes entries of one byte;
  /// ``extendEntries(at:width:base:successors:)`` adds the bytes that follow where a
  /// lookup's bits hold their codes too.
  ///
  /// - Throws: `invalidValue` at `tableOffset` for a code longer than 12 bits or lengths
  ///   that no prefix code has (Kraft's inequality).
  static func decoderShape(
    lengths: UnsafeBufferPointer<UInt8>, tableOffset: Int,
    width lookupWidth: LookupWidth = .atMost(lookupBits)
  ) throws -> (width: Int, size: Int) {
    var space = 0
    var longest = 1
    var used = 0
    for length in lengths where length > 0 {
      guard Int(length) <= maximumCodeLength else {
        throw ConvergeDecodingError.invalidValue(
          offset: tableOffset, reason: "code longer than 12 bits")
      }
      space += 1 << (maximumCodeLength - Int(length))
      longest = Swift.max(longest, Int(length))
      used += 1
    }
    guard space <= 1 << maximumCodeLength else {
      throw ConvergeDecodingError.invalidValue(offset: tableOffset, reason: "oversubscribed code")
    }
    let width =
      switch lookupWidth {
      case .exactly(let bits): Swift.min(bits, lookupBits)
      case .atMost(let bits): Swift.min(longest, bits, lookupBits)
      }
    return (width, 2 << width + 4 * levels + 2 * used)
  }

  /// Fills the tables of ``decoderShape(lengths:tableOffset:width:)`` at `scratch` for
  /// `lengths`, whose shape has been checked, with entries of one byte;
  /// `successor(symbol)` gives the bits from 38 up of the entries of `symbol` (a multiple
  /// of 2^38).
  ///
  /// Codes of at most `width` bits are decoded with one lookup. A longer code is found
  /// by its length: the codes of one length are consecutive, from the length's first
  /// code, in byte-value order.
  static func buildDecoder(
    lengths: UnsafeBufferPointer<UInt8>, width: Int, into scratch: UnsafeMutablePointer<Int>,
    successor: (_ symbol: Int) -> Int
  ) {
    let header = scratch + 2 << width
    let (firstCode, firstIndex, nextIndex) = (
      header + levels, header + 2 * levels, header + 3 * levels
    )
    let symbols = scratch + symbolsOffset(width: width)
    // Every entry of the tables is written (a document's decoders are not zeroed first).
    for index in 0..<4 * levels { header[index] = 0 }
    for length in lengths where length > 0 { header[Int(length)] += 1 }
    var code = 0
    var first = 0
    for length in 1..<levels {
      code = (code + header[length - 1]) << 1
      firstCode[length] = code
      firstIndex[length] = first
      nextIndex[length] = first
      first += header[length]
    }
    // Codes fit in their lengths (Kraft), so every index below stays in the table.
    for index in 0..<2 << width { scratch[index] = 0 }
    var longest = width
    for symbol in 0..<Swift.min(lengths.count, 256) where lengths[symbol] > 0 {
      let length = Int(lengths[symbol])
      longest = Swift.max(longest, length)
      let index = nextIndex[length]
      nextIndex[length] = index + 1
      let value = Entry.single(symbol, length: length, successor: successor(symbol))
      (symbols[2 * index], symbols[2 * index + 1]) = (value, 0)
      guard length <= width else { continue }
      let shift = width - length
      let start = (firstCode[length] + index - firstIndex[length]) << shift
      for entry in start..<start + 1 << shift { scratch[2 * entry] = value }
    }
    // Where no length has codes (the first code of length 1 counted them): now the
    // longest, for lookups past the table.
    header[0] = longest
  }

  /// Where the tables of ``buildDecoder(lengths:width:into:successor:)`` hold the used
  /// values' entries, by the rank of their codes.
  static func symbolsOffset(width: Int) -> Int { 2 << width + 4 * levels }

  /// Extends the entries of the lookup table at `scratch` (`width` bits, built by
  /// ``buildDecoder(lengths:width:into:successor:)`` with successor bits
  /// ``Entry/successor(offset:width:)`` of tables at `base`, `successors[symbol]` for
  /// `symbol`) with the bytes after theirs whose codes the rest of the lookup's bits
  /// hold, up to three bytes an entry. Only the first byte of the entries found in other
  /// tables is read, so tables extended already serve as well.
  ///
  /// Sound for a prefix code: a code no longer than the bits left after the ones before
  /// it is the code those bits start with, whatever bits follow.
  static func extendEntries(
    at scratch: UnsafeMutablePointer<Int>, width: Int, base: UnsafeMutablePointer<Int>,
    successors: UnsafePointer<Int>
  ) {
    let low = 1 << Entry.successorShift - 1
    // Fills the slots `start..<end` of `entry`, `used` bits long (the slots are every
    // value of the bits after it), with it and the bytes after it their bits hold.
    func extend(_ entry: Int, used: Int, from start: Int, to end: Int) {
      let left = width &- used
      let count = Entry.count(entry)
      guard left > 0, count < 3 else {
        for slot in start..<end { scratch[slot &<< 1] = entry }
        return
      }
      let (next, nextWidth) = Entry.table(entry, in: base)
      var slot = start
      while slot < end {
        let bits = slot &- start
        let found =
          next[
            (nextWidth >= left ? bits &<< (nextWidth &- left) : bits &>> (left &- nextWidth)) &<< 1]
        let length = Entry.length(of: 1, in: found)
        guard found != 0, length <= left else {
          // A code longer than the bits left, or none: this slot stays as it is.
          scratch[slot &<< 1] = entry
          slot &+= 1
          continue
        }
        let symbol = Int(Entry.symbol(0, of: found))
        let total = used &+ length
        // The lengths of the first two codes are kept for a content that ends after them.
        let extended =
          successors[symbol] | entry & low & ~0x3F | (count == 1 ? total << 10 : 0)
          | symbol << (Entry.firstSymbolShift &+ 8 &* count) | (count &+ 1) << 4 | total
        let rangeEnd = slot &+ 1 &<< (left &- length)
        extend(extended, used: total, from: slot, to: rangeEnd)
        slot = rangeEnd
      }
    }
    var slot = 0
    while slot < 1 << width {
      let single = scratch[slot << 1]
      guard single != 0 else {
        slot += 1
        continue
      }
      let end = slot + 1 << (width - single & 0x0F)
      extend(single, used: single & 0x0F, from: slot, to: end)
      slot = end
    }
  }

  /// The place of the entry of the code at the top of `buffer` in the tables at `scratch`
  /// (``buildDecoder(lengths:width:into:successor:)``), or nil if no code starts there.
  @inline(__always)
  static func lookup(
    _ buffer: UInt64, in scratch: UnsafeMutablePointer<Int>, width: Int
  ) -> UnsafeMutablePointer<Int>? {
    // Widths and lengths are 1...12, so the shifts and conversions need no checks.
    let slot =
      scratch + Int(truncatingIfNeeded: buffer &>> UInt64(truncatingIfNeeded: 64 &- width)) &<< 1
    guard slot.pointee == 0 else { return slot }
    // A code longer than the table, or none: try each longer length.
    let header = scratch + 2 << width
    // The longest code is at least `width` long.
    for length in width + 1..<header[0] + 1 {
      let rank =
        Int(truncatingIfNeeded: buffer &>> UInt64(truncatingIfNeeded: 64 &- length))
        - header[levels + length]
      if rank >= 0, rank < header[length] {
        return header + 4 * levels + 2 * (header[2 * levels + length] + rank)
      }
    }
    return nil
  }

  /// Reads coded bits most significant first, keeping at least ``maximumCodeLength`` of
  /// them ready while the input lasts.
  struct BitReader {
    let input: UnsafeBufferPointer<UInt8>
    /// The next bits, most significant first; `available` of them are real, the rest 0.
    private(set) var buffer: UInt64 = 0
    private(set) var available = 0
    private var position = 0

    init(_ input: UnsafeBufferPointer<UInt8>) { self.input = input }

    /// Tops the buffer up if fewer than ``maximumCodeLength`` bits are ready.
    @inline(__always)
    mutating func refill() {
      guard available < maximumCodeLength else { return }
      // `position` never passes the input's count, and `available` stays within 0...64.
      if input.count &- position >= 8 {
        // Eight bytes at once, keeping the whole ones that fit.
        let word = UInt64(
          bigEndian: UnsafeRawBufferPointer(input).loadUnaligned(
            fromByteOffset: position, as: UInt64.self))
        let taken = (64 &- available) &>> 3
        buffer |= word &>> UInt64(truncatingIfNeeded: available)
        available &+= taken &<< 3
        position &+= taken
        if available < 64 { buffer &= ~(UInt64.max &>> UInt64(truncatingIfNeeded: available)) }
      } else {
        while available <= 56, position < input.count {
          buffer |= UInt64(input[position]) &<< UInt64(truncatingIfNeeded: 56 &- available)
          available &+= 8
          position &+= 1
        }
      }
    }

    /// Drops `length` (at most ``available``) bits.
    @inline(__always)
    mutating func skip(_ length: Int) {
      buffer &<<= UInt64(truncatingIfNeeded: length)
      available &-= length
    }

    /// Whether the input is used up, but for fewer than 8 zero bits of padding.
    var isAtPaddedEnd: Bool { position == input.count && available < 8 && buffer == 0 }
  }

  // MARK: The code

  /// How often each byte value occurs.
  static func frequencies(_ bytes: ArraySlice<UInt8>) -> [Int] {
    var counts = [Int](repeating: 0, count: 256)
    counts.withUnsafeMutableBufferPointer { counts in
      bytes.withUnsafeBufferPointer { bytes in
        for byte in bytes { counts[Int(byte)] += 1 }
      }
    }
    return counts
  }

  /// The code length of every byte value: those of a Huffman code of the frequencies,
  /// limited to ``maximumCodeLength`` bits, and dealt out so that a more frequent byte
  /// (the smaller byte value among equals) never has a longer code. A function of the
  /// frequencies alone, which the decoder recomputes.
  static func codeLengths(frequencies: [Int]) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: 256) { lengths, written in
      _ = frequencies.withUnsafeBufferPointer { codeLengths(frequencies: $0, into: lengths) }
      written = 256
    }
  }

  /// ``codeLengths(frequencies:)`` of 256 `frequencies`, written into the 256 `lengths`
  /// (a document's code builds a table per context in one buffer); returns the bits the
  /// code takes for those frequencies.
  @discardableResult
  static func codeLengths(
    frequencies: UnsafeBufferPointer<Int>, into lengths: UnsafeMutableBufferPointer<UInt8>
  ) -> Int {
    for byte in 0..<256 { lengths[byte] = 0 }
    // One scratch buffer for the work arrays (a code is built for every text loaded):
    // leaves, then weights, parents and depths of the 2n - 1 nodes, then the count of
    // codes of each length.
    // At most 256 leaves, so 511 nodes and depths below 256.
    let (leafCapacity, nodeCapacity) = (256, 511)
    let (weightStart, parentStart) = (leafCapacity, leafCapacity + nodeCapacity)
    let (depthStart, countStart) = (parentStart + nodeCapacity, parentStart + 2 * nodeCapacity)
    let capacity = countStart + leafCapacity
    return withUnsafeTemporaryAllocation(of: Int.self, capacity: capacity) { scratch in
      // Ascending by (frequency, byte value): the order the tree takes leaves in, sorted
      // as single integers (a frequency counts bytes in memory, far below 2^55).
      var n = 0
      for byte in 0..<256 where frequencies[byte] > 0 {
        scratch[n] = frequencies[byte] << 8 | byte
        n += 1
      }
      let leaves = UnsafeMutableBufferPointer(rebasing: scratch[0..<n])
      // Insertion sort: a text uses a few dozen byte values, where it beats the
      // general sort several times over (at most 256 keys in any case).
      for index in 1..<Swift.max(n, 1) {
        let key = leaves[index]
        var slot = index
        while slot > 0, leaves[slot - 1] > key {
          leaves[slot] = leaves[slot - 1]
          slot -= 1
        }
        leaves[slot] = key
      }
      for index in 0..<n { leaves[index] &= 0xFF }
      guard n > 1 else {
        guard n == 1 else { return 0 }
        lengths[leaves[0]] = 1
        return frequencies[leaves[0]]
      }
      // Two queues: leaves in order, then the joined nodes in the order they are made,
      // which is also ascending. Nodes 0..<n are leaves; each join appends a node.
      let nodes = 2 * n - 1
      let weight = UnsafeMutableBufferPointer(rebasing: scratch[weightStart..<weightStart + nodes])
      let parent = UnsafeMutableBufferPointer(rebasing: scratch[parentStart..<parentStart + nodes])
      let depth = UnsafeMutableBufferPointer(rebasing: scratch[depthStart..<depthStart + nodes])
      let countOfLength = UnsafeMutableBufferPointer(rebasing: scratch[countStart..<capacity])
      for index in 0..<n { weight[index] = frequencies[leaves[index]] }
      var made = n
      var nextLeaf = 0
      var nextJoined = n
      func takeSmallest() -> Int {
        if nextLeaf < n, nextJoined >= made || weight[nextLeaf] <= weight[nextJoined] {
          nextLeaf += 1
          return nextLeaf - 1
        }
        nextJoined += 1
        return nextJoined - 1
      }
      for _ in 1..<n {
        let first = takeSmallest()
        let second = takeSmallest()
        parent[first] = made
        parent[second] = made
        weight[made] = weight[first] + weight[second]
        made += 1
      }
      // A parent is made after its children: depths from the root (the last node) down.
      depth[nodes - 1] = 0
      for node in stride(from: nodes - 2, through: 0, by: -1) {
        depth[node] = depth[parent[node]] + 1
      }
      // Depths stay below n, so n entries (at least maximumCodeLength + 1) hold them.
      let levels = Swift.max(n, maximumCodeLength + 1)
      for level in 0..<levels { countOfLength[level] = 0 }
      for leaf in 0..<n { countOfLength[depth[leaf]] += 1 }
      limitLengths(UnsafeMutableBufferPointer(rebasing: countOfLength[0..<levels]))
      // Shortest codes to the most frequent bytes.
      var length = 1
      var bits = 0
      for index in stride(from: n - 1, through: 0, by: -1) {
        // Bounded anyway, though the counts always add up to n (the buffers are unchecked).
        while length < levels - 1, countOfLength[length] == 0 { length += 1 }
        countOfLength[length] -= 1
        lengths[leaves[index]] = UInt8(truncatingIfNeeded: length)
        bits += frequencies[leaves[index]] * length
      }
      return bits
    }
  }

  /// Moves codes longer than ``maximumCodeLength`` up, keeping the code complete: two
  /// leaves at the deepest level become one a level up, and a shallower leaf splits into
  /// two to make room (the adjustment of JPEG, ITU T.81 Annex K.3).
  private static func limitLengths(_ countOfLength: UnsafeMutableBufferPointer<Int>) {
    var deepest = countOfLength.count - 1
    while deepest > maximumCodeLength {
      while countOfLength[deepest] > 0 {
        var shallower = deepest - 2
        // A complete code has a shallower leaf; bounded anyway (the buffer is unchecked).
        while shallower > 0, countOfLength[shallower] == 0 { shallower -= 1 }
        countOfLength[deepest] -= 2
        countOfLength[deepest - 1] += 1
        countOfLength[shallower + 1] += 2
        countOfLength[shallower] -= 1
      }
      deepest -= 1
    }
  }

  /// The canonical code of each byte value, as `code << 4 | length` in `codes` (256
  /// entries; 0 for unused values): codes of one length are consecutive in byte-value
  /// order, and shorter codes come first (as in DEFLATE).
  static func canonicalCodes(
    lengths: UnsafeBufferPointer<UInt8>, into codes: UnsafeMutableBufferPointer<UInt32>
  ) {
    let levels = maximumCodeLength + 1
    withUnsafeTemporaryAllocation(of: Int.self, capacity: 2 * levels) { scratch in
      // Per length: the count of codes, then the next code.
      for index in 0..<2 * levels { scratch[index] = 0 }
      for length in lengths where length > 0 { scratch[Int(length)] += 1 }
      var code = 0
      for length in 1..<levels {
        code = (code + scratch[length - 1]) << 1
        scratch[levels + length] = code
      }
      for symbol in 0..<256 {
        let length = Int(lengths[symbol])
        guard length > 0 else {
          codes[symbol] = 0
          continue
        }
        codes[symbol] = UInt32(truncatingIfNeeded: scratch[levels + length] << 4 | length)
        scratch[levels + length] += 1
      }
    }
  }
}
