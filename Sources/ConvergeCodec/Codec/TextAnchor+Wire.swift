/// Wire form of an anchor: a few bytes, for presence messages or for keeping a selection
/// across launches (see `FORMAT.md`, "Text anchor").
///
/// ```text
/// byte 0      0x10 | flags   high nibble: anchor format 1; bit 0: affinity
///                            (0 following, 1 preceding); bit 1: a character follows
/// 8 bytes     replica id, little-endian         (only with a character)
/// LEB128      counter, at least 1               (only with a character)
/// ```
///
/// A selection is its start's bytes, then its end's.
extension TextAnchor {
  static let formatNibble: UInt8 = 0x10

  /// The anchor's bytes: 1 for the text's start or end, at most 19 otherwise.
  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 19)
    write(to: &writer)
    return writer.bytes
  }

  /// Decodes bytes made by ``encoded()``.
  ///
  /// - Throws: a ``ConvergeDecodingError``: `unsupportedVersion` for another anchor
  ///   format, `invalidValue` for unknown flags or a zero counter, `truncated`, LEB128
  ///   errors, or `trailingBytes`.
  public init(decoding bytes: [UInt8]) throws {
    var reader = ByteReader(bytes)
    self = try TextAnchor(from: &reader)
    try reader.expectEnd()
  }

  func write(to writer: inout ByteWriter) {
    let flags: UInt8 = affinity.rawValue | (character == nil ? 0 : 0b10)
    writer.writeUInt8(Self.formatNibble | flags)
    if let character {
      writer.writeUInt64(character.replica.rawValue)
      writer.writeVarUInt(character.counter)
    }
  }

  init(from reader: inout ByteReader) throws {
    let start = reader.offset
    let header = try reader.readUInt8()
    guard header & 0xF0 == Self.formatNibble else {
      throw ConvergeDecodingError.unsupportedVersion(header >> 4)
    }
    guard header & 0x0C == 0 else {
      throw ConvergeDecodingError.invalidValue(offset: start, reason: "unknown anchor flags")
    }
    let affinity: Affinity = header & 1 == 0 ? .following : .preceding
    guard header & 0b10 != 0 else {
      self.init(character: nil, affinity: affinity)
      return
    }
    let replica = ReplicaID(rawValue: try reader.readUInt64())
    let counterOffset = reader.offset
    let counter = try reader.readVarUInt()
    guard counter > 0 else {
      throw ConvergeDecodingError.invalidValue(offset: counterOffset, reason: "zero counter")
    }
    self.init(character: Dot(replica: replica, counter: counter), affinity: affinity)
  }
}

extension SelectionAnchors {
  /// The selection's bytes: its start's, then its end's.
  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 38)
    start.write(to: &writer)
    end.write(to: &writer)
    return writer.bytes
  }

  /// Decodes bytes made by ``encoded()``, with the errors of
  /// ``TextAnchor/init(decoding:)``.
  public init(decoding bytes: [UInt8]) throws {
    var reader = ByteReader(bytes)
    let start = try TextAnchor(from: &reader)
    let end = try TextAnchor(from: &reader)
    try reader.expectEnd()
    self.init(start: start, end: end)
  }
}
