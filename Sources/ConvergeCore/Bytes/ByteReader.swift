#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A cursor over untrusted bytes that decoders read from.
///
/// Every read checks bounds and throws a ``ConvergeDecodingError`` instead of trapping;
/// every integer read rejects overlong LEB128 forms and values over 64 bits. Element
/// counts go through ``readCount(minimumBytesPerElement:)``, which refuses a count the
/// remaining bytes could not possibly hold, so memory stays bounded by the input size
/// however absurd the numbers in it are. Recursive decoders wrap each level in
/// ``nested(_:)``, which refuses nesting deeper than ``maximumDepth``.
///
/// A reader can be made from `[UInt8]`, `ArraySlice<UInt8>` or `Data` (also a `Data`
/// slice whose `startIndex` is not 0). Offsets in errors and in ``offset`` count from the
/// start of the bytes the reader was made from.
///
/// ```swift
/// var reader = ByteReader([0xAC, 0x02])
/// let value = try reader.readVarUInt()  // 300
/// try reader.expectEnd()
/// ```
///
/// - Complexity: every read is O(k) for k bytes read.
@usableFromInline
package struct ByteReader: Sendable {
  /// The default limit for ``nested(_:)``.
  public static let defaultMaximumDepth = 64

  // Visible to the inlinable reads below: the codec and the document, in other modules,
  // read every integer and count of a message through them.
  @usableFromInline let storage: ArraySlice<UInt8>
  /// The index in `storage` of the next byte to read.
  @usableFromInline var position: Int
  /// The index in `storage` one past the last readable byte.
  @usableFromInline let end: Int
  /// The index in `storage` that offsets are counted from.
  @usableFromInline let origin: Int
  private var depth: Int

  /// The deepest nesting ``nested(_:)`` allows.
  public let maximumDepth: Int

  /// A reader over `bytes`.
  public init(_ bytes: [UInt8], maximumDepth: Int = ByteReader.defaultMaximumDepth) {
    self.init(bytes[...], maximumDepth: maximumDepth)
  }

  /// A reader over `bytes`; offsets count from `bytes.startIndex`.
  public init(_ bytes: ArraySlice<UInt8>, maximumDepth: Int = ByteReader.defaultMaximumDepth) {
    self.init(
      storage: bytes, range: bytes.startIndex..<bytes.endIndex, origin: bytes.startIndex,
      maximumDepth: maximumDepth)
  }

  /// A reader over a copy of `data`; offsets count from `data.startIndex`, so a slice of
  /// a larger `Data` reads exactly like a fresh copy of it.
  public init(_ data: Data, maximumDepth: Int = ByteReader.defaultMaximumDepth) {
    self.init(Array(data), maximumDepth: maximumDepth)
  }

  /// A reader over `range` of `storage`, reporting offsets from `origin`.
  package init(storage: ArraySlice<UInt8>, range: Range<Int>, origin: Int, maximumDepth: Int) {
    self.storage = storage
    position = range.lowerBound
    end = range.upperBound
    self.origin = origin
    depth = 0
    self.maximumDepth = maximumDepth
  }

  /// How many bytes have been read, counted from the start.
  @inlinable public var offset: Int { position - origin }

  /// The bytes read and the index offsets count from: what a reader of a part of them
  /// later needs (``DeferredTexts``).
  package var source: (storage: ArraySlice<UInt8>, origin: Int) { (storage, origin) }

  /// How many bytes are left to read.
  @inlinable public var remainingCount: Int { end - position }

  /// Whether every byte has been read.
  @inlinable public var isAtEnd: Bool { position >= end }

  // MARK: Raw bytes and fixed-width values

  /// Reads one byte.
  @inlinable public mutating func readUInt8() throws -> UInt8 {
    guard position < end else { throw ConvergeDecodingError.truncated(offset: offset) }
    let byte = storage[position]
    position += 1
    return byte
  }

  /// Reads `count` scalars of strictly valid UTF-8, checked by the library's one validator
  /// (``UTF8Scalars``): their bytes end where `count` lead bytes say, and must decode to
  /// exactly `count` scalars (no overlong forms, surrogates, values past U+10FFFF, stray
  /// continuation bytes or cut sequences). A frame states a run's length in scalars, not
  /// bytes.
  ///
  /// - Throws: ``ConvergeDecodingError/invalidUTF8(offset:)``, or `truncated` when the
  ///   input ends first.
  /// - Complexity: O(b) for the b bytes of the scalars.
  package mutating func readScalars(count: Int) throws -> [Unicode.Scalar] {
    let start = offset
    let (byteCount, scalars) = storage[position..<end].withUnsafeBufferPointer { rest in
      let byteCount = UTF8Scalars.advance(rest, from: 0, scalars: count).end
      let scalars = try? UTF8Scalars.decode(UnsafeBufferPointer(rebasing: rest[..<byteCount]))
      return (byteCount, scalars?.scalars)
    }
    guard let scalars, scalars.count == count else {
      // Fewer scalars than stated, all valid, up to the end: the input ended first.
      if let scalars, scalars.count < count, byteCount == remainingCount {
        throw ConvergeDecodingError.truncated(offset: start + byteCount)
      }
      throw ConvergeDecodingError.invalidUTF8(offset: start)
    }
    position += byteCount
    return scalars
  }

  /// Reads `count` bytes; the result shares storage with the reader and keeps its indices.
  public mutating func readBytes(count: Int) throws -> ArraySlice<UInt8> {
    guard count >= 0, count <= remainingCount else {
      throw ConvergeDecodingError.truncated(offset: offset)
    }
    let bytes = storage[position..<(position + count)]
    position += count
    return bytes
  }

  /// Reads a byte that must be `0x00` (false) or `0x01` (true).
  public mutating func readBool() throws -> Bool {
    let start = offset
    switch try readUInt8() {
    case 0: return false
    case 1: return true
    default: throw ConvergeDecodingError.invalidValue(offset: start, reason: "boolean not 0 or 1")
    }
  }

  /// Reads a little-endian 16-bit integer.
  public mutating func readUInt16() throws -> UInt16 {
    try readLittleEndian(UInt16.self)
  }

  /// Reads a little-endian 32-bit integer.
  public mutating func readUInt32() throws -> UInt32 {
    try readLittleEndian(UInt32.self)
  }

  /// Reads a little-endian 64-bit integer.
  @inlinable public mutating func readUInt64() throws -> UInt64 {
    try readLittleEndian(UInt64.self)
  }

  /// Reads a double from its little-endian IEEE 754 bit pattern.
  public mutating func readDouble() throws -> Double {
    Double(bitPattern: try readLittleEndian(UInt64.self))
  }

  @inlinable mutating func readLittleEndian<T: FixedWidthInteger & UnsignedInteger>(
    _: T.Type
  ) throws -> T {
    let size = MemoryLayout<T>.size
    guard size <= remainingCount else { throw ConvergeDecodingError.truncated(offset: offset) }
    // One unaligned load of the bytes just checked to be there.
    let raw = storage.withUnsafeBytes {
      $0.loadUnaligned(fromByteOffset: position &- storage.startIndex, as: T.self)
    }
    position += size
    return T(littleEndian: raw)
  }

  // MARK: LEB128

  /// Reads an unsigned LEB128 integer in its shortest form.
  ///
  /// - Throws: `truncated` if the input ends inside it, `overlongInteger` if its last
  ///   byte is a zero group (for example `0x80 0x00`), `integerOverflow` if it holds more
  ///   than 64 bits (its tenth byte is above `0x01`, or an eleventh byte follows).
  @inlinable @inline(__always)
  public mutating func readVarUInt() throws -> UInt64 {
    // One byte (most counts, lengths and indexes) where it is read; longer ones apart.
    if position < end {
      let byte = storage[position]
      if byte < 0x80 {
        position &+= 1
        return UInt64(byte)
      }
    }
    return try readLongVarUInt()
  }

  /// ``readVarUInt()`` past its one-byte case.
  @usableFromInline @inline(never)
  mutating func readLongVarUInt() throws -> UInt64 {
    // Up to eight bytes from a word: the first byte without its top bit ends the number,
    // and the seven-bit groups before it are packed by three rounds of masks and shifts.
    if end &- position >= 8 {
      let word = storage.withUnsafeBytes {
        UInt64(
          littleEndian: $0.loadUnaligned(
            fromByteOffset: position &- storage.startIndex, as: UInt64.self))
      }
      let stops = ~word & 0x8080_8080_8080_8080
      if stops != 0 {
        let length = (stops.trailingZeroBitCount &+ 1) &>> 3
        let shift = UInt64(length) &* 8
        let bytes = length == 8 ? word : word & ((1 &<< shift) &- 1)
        // Its last byte zero, with bytes before it: a longer form than needed.
        if bytes &>> (shift &- 8) == 0 {
          throw ConvergeDecodingError.overlongInteger(offset: offset)
        }
        var value = bytes & 0x7F7F_7F7F_7F7F_7F7F
        value = value & 0x007F_007F_007F_007F | (value & 0x7F00_7F00_7F00_7F00) &>> 1
        value = value & 0x0000_3FFF_0000_3FFF | (value & 0x3FFF_0000_3FFF_0000) &>> 2
        value = value & 0x0000_0000_0FFF_FFFF | (value & 0x0FFF_FFFF_0000_0000) &>> 4
        position &+= length
        return value
      }
    }
    let start = offset
    var result: UInt64 = 0
    var shift: UInt64 = 0
    var index = 0
    while true {
      guard position < end else { throw ConvergeDecodingError.truncated(offset: offset) }
      let byte = storage[position]
      position += 1
      // The tenth byte carries bit 63 only: anything above 0x01 (a higher bit, or a
      // continuation to an eleventh byte) cannot be a 64-bit value.
      if index == 9, byte > 0x01 { throw ConvergeDecodingError.integerOverflow(offset: start) }
      result |= UInt64(byte & 0x7F) << shift
      if byte & 0x80 == 0 {
        if byte == 0, index > 0 { throw ConvergeDecodingError.overlongInteger(offset: start) }
        return result
      }
      shift += 7
      index += 1
    }
  }

  /// Reads a zigzag-encoded signed LEB128 integer.
  public mutating func readVarInt() throws -> Int64 {
    let raw = try readVarUInt()
    return ByteReader.unzigzag(raw)
  }

  /// The inverse of ``ByteWriter/zigzag(_:)``.
  public static func unzigzag(_ raw: UInt64) -> Int64 {
    Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
  }

  /// Reads an unsigned LEB128 integer that must be at most `maximum`.
  public mutating func readVarUInt(maximum: UInt64) throws -> UInt64 {
    let start = offset
    let value = try readVarUInt()
    guard value <= maximum else {
      throw ConvergeDecodingError.invalidValue(offset: start, reason: "\(value) > \(maximum)")
    }
    return value
  }

  // MARK: Counts and lengths (bounded memory)

  /// Reads an element count and checks that the remaining bytes could hold that many
  /// elements of at least `minimumBytesPerElement` bytes each.
  ///
  /// Decoders may `reserveCapacity` for the count this returns: it is at most the
  /// remaining input size, so a tiny message claiming `UInt64.max` elements is refused
  /// before anything is allocated.
  ///
  /// - Throws: `countTooLarge` when `count * minimumBytesPerElement > remainingCount`.
  @inlinable public mutating func readCount(minimumBytesPerElement: Int) throws -> Int {
    let start = offset
    let count = try readVarUInt()
    let perElement = UInt64(Swift.max(1, minimumBytesPerElement))
    // count * perElement > remaining, the multiplication's overflow included (a
    // multiplication, not a division: this runs for every map, set and vector).
    let (needed, overflow) = count.multipliedReportingOverflow(by: perElement)
    guard !overflow, needed <= UInt64(remainingCount) else {
      throw ConvergeDecodingError.countTooLarge(offset: start)
    }
    return Int(count)
  }

  /// Reads a byte length (unsigned LEB128) and then that many bytes.
  public mutating func readLengthPrefixedBytes() throws -> ArraySlice<UInt8> {
    let length = try readVarUInt()
    guard length <= UInt64(remainingCount) else {
      throw ConvergeDecodingError.truncated(offset: offset)
    }
    return try readBytes(count: Int(length))
  }

  /// Reads a string: its UTF-8 byte count (unsigned LEB128), then strictly valid UTF-8
  /// (no overlong forms, surrogates or code points above U+10FFFF).
  public mutating func readString() throws -> String {
    let lengthStart = offset
    let length = try readVarUInt()
    guard length <= UInt64(remainingCount) else {
      throw ConvergeDecodingError.truncated(offset: offset)
    }
    let count = Int(length)
    let start = position &- storage.startIndex
    // Read in place, without a slice of the storage (a retain and a release a string).
    let string = try storage.withUnsafeBufferPointer { storage in
      let bytes = UnsafeBufferPointer(rebasing: storage[start..<start &+ count])
      // The one strict UTF-8 check, not a generic transcoding.
      guard (try? UTF8Scalars.count(bytes)) != nil else {
        throw ConvergeDecodingError.invalidUTF8(offset: lengthStart)
      }
      // Built in place: a short string (names, ids, tags, titles) is stored inline and
      // its ASCII taken as it is, not checked and copied again.
      return String(unsafeUninitializedCapacity: count) { buffer in
        _ = buffer.initialize(fromContentsOf: bytes)
        return count
      }
    }
    position &+= count
    return string
  }

  /// Reads the next string if its bytes are `expected`'s and returns true; otherwise reads
  /// nothing and returns false. A string met again (an entity's field names, which most
  /// entities of a message repeat) is matched without being checked or built again; only
  /// strings under 128 bytes (a one-byte length) are matched, longer ones return false.
  package mutating func readString(equalTo expected: String) -> Bool {
    let start = position
    guard position < end, storage[position] < 0x80, Int(storage[position]) == expected.utf8.count,
      Int(storage[position]) < remainingCount
    else { return false }
    let length = Int(storage[position])
    position &+= 1
    let from = position &- storage.startIndex
    let equal =
      expected.utf8.withContiguousStorageIfAvailable { expected in
        storage.withUnsafeBufferPointer { bytes in
          for index in expected.indices where expected[index] != bytes[from &+ index] {
            return false
          }
          return true
        }
      } ?? false
    guard equal else {
      position = start
      return false
    }
    position &+= length
    return true
  }

  /// Reads a section written by ``ByteWriter/writeLengthPrefixedSection(_:)``: `body`
  /// sees only the section's bytes and must consume all of them.
  ///
  /// - Throws: `truncated` if the section runs past the input, `lengthMismatch` if `body`
  ///   leaves bytes of the section unread, and whatever `body` throws.
  public mutating func readLengthPrefixedSection<T>(
    _ body: (inout ByteReader) throws -> T
  ) throws -> T {
    let length = try readVarUInt()
    guard length <= UInt64(remainingCount) else {
      throw ConvergeDecodingError.truncated(offset: offset)
    }
    let sectionEnd = position + Int(length)
    var section = ByteReader(
      storage: storage, range: position..<sectionEnd, origin: origin, maximumDepth: maximumDepth)
    section.depth = depth
    let value = try body(&section)
    guard section.isAtEnd else {
      throw ConvergeDecodingError.lengthMismatch(offset: section.offset)
    }
    position = sectionEnd
    return value
  }

  // MARK: Structure

  /// Runs `body` one nesting level deeper. Recursive decoders wrap each level in this,
  /// so hostile input cannot exhaust the stack.
  ///
  /// - Throws: `nestingTooDeep` beyond ``maximumDepth`` levels, and whatever `body` throws.
  public mutating func nested<T>(_ body: (inout ByteReader) throws -> T) throws -> T {
    guard depth < maximumDepth else { throw ConvergeDecodingError.nestingTooDeep(offset: offset) }
    depth += 1
    defer { depth -= 1 }
    return try body(&self)
  }

  /// Throws `trailingBytes` unless every byte has been read.
  public func expectEnd() throws {
    guard isAtEnd else { throw ConvergeDecodingError.trailingBytes(offset: offset) }
  }

  /// A decoded length or count as an `Int`, or `countTooLarge` at `offset`. A value that
  /// passed every 64-bit range check can still exceed `Int.max` on a 32-bit platform
  /// (watchOS), where `Int(_:)` would trap: every conversion of a decoded value that is
  /// not bounded by the input's size goes through here.
  public static func checkedInt(_ value: UInt64, at offset: Int) throws -> Int {
    guard let result = Int(exactly: value) else {
      throw ConvergeDecodingError.countTooLarge(offset: offset)
    }
    return result
  }

  /// `a + b`, or `integerOverflow` at `offset` when the sum exceeds 64 bits.
  public static func checkedAdd(_ a: UInt64, _ b: UInt64, at offset: Int) throws -> UInt64 {
    let (sum, overflow) = a.addingReportingOverflow(b)
    guard !overflow else { throw ConvergeDecodingError.integerOverflow(offset: offset) }
    return sum
  }
}
