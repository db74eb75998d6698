#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Wire form of a field value (see `FORMAT.md`, "Field value"): a tag byte naming the
/// kind (its rank in ``FieldValue``'s order), then the payload.
///
/// Integers are zigzag LEB128; doubles and dates are 8-byte bit patterns, so every bit
/// survives; strings are UTF-8; records list their keys sorted by Unicode scalars, each
/// key once, and nest at most ``ByteReader/maximumDepth`` levels deep.
extension FieldValue {
  /// Writes the value.
  ///
  /// - Complexity: O(s log s) for a value of s bytes (record keys are sorted).
  package func write(to writer: inout ByteWriter) {
    writer.writeUInt8(kind.rawValue)
    switch self {
    case .null: break
    case .bool(let value): writer.writeBool(value)
    case .int(let value): writer.writeVarInt(value)
    case .double(let value): writer.writeDouble(value)
    case .string(let value): writer.writeString(value)
    case .date(let value): writer.writeUInt64(value.timeIntervalSinceReferenceDate.bitPattern)
    case .bytes(let value): writer.writeLengthPrefixedBytes(value)
    case .record(let fields):
      writer.writeVarUInt(fields.count)
      for key in fields.keys.sorted(by: fieldNameOrder) {
        writer.writeString(key)
        fields[key]?.write(to: &writer)
      }
    }
  }

  /// Reads a value written by ``write(to:)``.
  ///
  /// - Throws: `invalidValue` for an unknown tag, record keys out of order or
  ///   duplicated; `invalidUTF8`; `nestingTooDeep`; `countTooLarge`; `truncated`.
  package init(from reader: inout ByteReader) throws {
    let start = reader.offset
    guard let kind = Kind(rawValue: try reader.readUInt8()) else {
      throw ConvergeDecodingError.invalidValue(offset: start, reason: "unknown value tag")
    }
    switch kind {
    case .null: self = .null
    case .bool: self = .bool(try reader.readBool())
    case .int: self = .int(try reader.readVarInt())
    case .double: self = .double(try reader.readDouble())
    case .string: self = .string(try reader.readString())
    case .date:
      let bits = try reader.readUInt64()
      self = .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits)))
    case .bytes: self = .bytes(Array(try reader.readLengthPrefixedBytes()))
    case .record:
      self = .record(try reader.nested { try Self.readRecordFields(from: &$0) })
    }
  }

  private static func readRecordFields(
    from reader: inout ByteReader
  ) throws -> [String: FieldValue] {
    // A field is at least an empty key (1 byte) and a null value (1 byte).
    try reader.readSortedMap(
      minimumBytesPerEntry: 2, keys: .init(plural: "record keys", singular: "record key"),
      readKey: { try $0.readString() }, precedes: fieldNameOrder,
      readValue: { reader, _ in try FieldValue(from: &reader) })
  }
}
