/// An append-only byte buffer that encoders write into.
///
/// Integers are written either fixed-width little-endian or as LEB128 (unsigned, or
/// zigzag for signed values); see `FORMAT.md` beside this file. Writing never fails:
/// encoders work from trusted in-memory values, and only decoding has to defend itself.
///
/// ```swift
/// var writer = ByteWriter()
/// writer.writeVarUInt(300)        // 0xAC 0x02
/// writer.writeString("hé")        // 0x03 0x68 0xC3 0xA9
/// let bytes = writer.bytes
/// ```
///
/// - Complexity: every write is amortized O(k) for k bytes written.
@usableFromInline
package struct ByteWriter: Sendable {
  /// The bytes written so far.
  public private(set) var bytes: [UInt8]

  /// An empty writer, optionally with room for `capacity` bytes.
  public init(capacity: Int = 0) {
    bytes = []
    if capacity > 0 { bytes.reserveCapacity(capacity) }
  }

  /// Forgets the bytes written, keeping the buffer's capacity if asked.
  package mutating func removeAll(keepingCapacity: Bool) {
    bytes.removeAll(keepingCapacity: keepingCapacity)
  }

  /// The number of bytes written so far.
  public var count: Int { bytes.count }

  /// Appends `count` bytes that `body` writes through a pointer (it finds them zeroed).
  mutating func writeBytes(count: Int, _ body: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
    let start = bytes.count
    bytes.append(contentsOf: repeatElement(0, count: count))
    bytes.withUnsafeMutableBufferPointer { body(.init(rebasing: $0[start...])) }
  }

  /// Appends one byte.
  public mutating func writeUInt8(_ value: UInt8) {
    bytes.append(value)
  }

  /// Appends raw bytes, without a length.
  public mutating func writeBytes<S: Sequence>(_ values: S) where S.Element == UInt8 {
    bytes.append(contentsOf: values)
  }

  /// Appends `0x01` for true and `0x00` for false.
  public mutating func writeBool(_ value: Bool) {
    bytes.append(value ? 1 : 0)
  }

  /// Appends a 16-bit integer, little-endian.
  public mutating func writeUInt16(_ value: UInt16) {
    writeLittleEndian(value)
  }

  /// Appends a 32-bit integer, little-endian.
  public mutating func writeUInt32(_ value: UInt32) {
    writeLittleEndian(value)
  }

  /// Appends a 64-bit integer, little-endian.
  public mutating func writeUInt64(_ value: UInt64) {
    writeLittleEndian(value)
  }

  /// Appends a double as its IEEE 754 bit pattern, little-endian; every bit (also of a
  /// NaN's payload and of a negative zero) survives the round trip.
  public mutating func writeDouble(_ value: Double) {
    writeLittleEndian(value.bitPattern)
  }

  /// Appends an unsigned LEB128 integer: 7 bits per byte, least significant group first,
  /// the high bit set on every byte but the last. Always the shortest form (1 to 10 bytes).
  public mutating func writeVarUInt(_ value: UInt64) {
    var remaining = value
    while remaining >= 0x80 {
      bytes.append(UInt8(truncatingIfNeeded: remaining) | 0x80)
      remaining >>= 7
    }
    bytes.append(UInt8(truncatingIfNeeded: remaining))
  }

  /// Appends a signed integer zigzag-encoded (0, -1, 1, -2, … map to 0, 1, 2, 3, …) and
  /// then as unsigned LEB128, so small magnitudes of either sign stay short.
  public mutating func writeVarInt(_ value: Int64) {
    writeVarUInt(ByteWriter.zigzag(value))
  }

  /// Appends a non-negative `Int` (a count, a length, an index) as unsigned LEB128.
  public mutating func writeVarUInt(_ value: Int) {
    // Counts and lengths are never negative; clamping keeps the encoder total.
    writeVarUInt(UInt64(clamping: value))
  }

  /// Appends the byte count as unsigned LEB128, then the bytes.
  public mutating func writeLengthPrefixedBytes<C: Collection>(_ values: C)
  where C.Element == UInt8 {
    writeVarUInt(values.count)
    bytes.append(contentsOf: values)
  }

  /// Appends a string as its UTF-8 byte count (unsigned LEB128), then its UTF-8 bytes.
  public mutating func writeString(_ value: String) {
    // A native string's UTF-8 is contiguous: copy it in one go.
    let copied: Void? = value.utf8.withContiguousStorageIfAvailable { utf8 in
      writeVarUInt(utf8.count)
      bytes.append(contentsOf: utf8)
    }
    if copied == nil { writeLengthPrefixedBytes(value.utf8) }
  }

  /// Appends scalars as a text's content field (`FORMAT.md` §8.3.1): their UTF-8 byte
  /// count (unsigned LEB128) and UTF-8 bytes, as ``writeString(_:)`` of a string made of
  /// them, unless the content is long enough to be coded.
  package mutating func writeTextContent(_ scalars: ArraySlice<Unicode.Scalar>) {
    var length = 0
    for scalar in scalars { length += UTF8.width(scalar) }
    guard length < ContentCoding.minimumCodedLength else {
      var content: [UInt8] = []
      content.reserveCapacity(length)
      for scalar in scalars { UTF8.encode(scalar) { content.append($0) } }
      ContentCoding.write(content, to: &self)
      return
    }
    writeVarUInt(length)
    bytes.reserveCapacity(bytes.count + length)
    for scalar in scalars {
      let value = scalar.value
      if value < 0x80 {
        bytes.append(UInt8(truncatingIfNeeded: value))
      } else {
        UTF8.encode(scalar) { bytes.append($0) }
      }
    }
  }

  /// Appends a section written by `body`, preceded by its byte count (unsigned LEB128),
  /// so a reader can skip it or check that it was consumed exactly.
  public mutating func writeLengthPrefixedSection(_ body: (inout ByteWriter) -> Void) {
    var section = ByteWriter()
    body(&section)
    writeLengthPrefixedBytes(section.bytes)
  }

  /// Replaces the one-byte placeholder at `offset` with the LEB128 count of the bytes
  /// written after it, widening it when the count needs more than one byte.
  package mutating func patchLength(at offset: Int) {
    let length = bytes.count - offset - 1
    guard length >= 0x80 else {
      bytes[offset] = UInt8(length)
      return
    }
    var prefix = ByteWriter()
    prefix.writeVarUInt(length)
    bytes.replaceSubrange(offset..<(offset + 1), with: prefix.bytes)
  }

  /// The zigzag mapping of signed to unsigned integers.
  public static func zigzag(_ value: Int64) -> UInt64 {
    UInt64(bitPattern: (value << 1) ^ (value >> 63))
  }

  private mutating func writeLittleEndian<T: FixedWidthInteger>(_ value: T) {
    var remaining = value.littleEndian
    withUnsafeBytes(of: &remaining) { bytes.append(contentsOf: $0) }
  }
}
