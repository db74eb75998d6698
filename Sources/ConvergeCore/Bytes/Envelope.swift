#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// What a Converge message carries; the sixth byte of every message.
///
/// Values are fixed forever once released: a new kind takes a new value, and a decoder
/// that meets a value it does not know answers ``ConvergeDecodingError/unknownMessageKind(_:)``.
/// 0 is never a kind; 9 to 127 are free for future kinds; 128 to 255 are application
/// kinds: messages of the programs built on Converge (the relay's acknowledgements, say),
/// in the same frame, which Converge's own decoders refuse as unknown kinds.
public enum MessageKind: UInt8, Sendable, CaseIterable {
  /// A ``VersionVector`` alone: a compact summary of what a replica has (for display or
  /// a quick comparison; the sync handshake exchanges the exact ``CausalContext``).
  case versionVector = 1
  /// A ``CausalContext`` alone.
  case causalContext = 2
  /// A whole document's state in the form before ``documentState``, each text coding its
  /// own content: still read (saved snapshots, fixtures), never written.
  case legacyDocumentState = 3
  /// A delta of a document: what one or more transactions changed.
  case documentDelta = 4
  /// A handshake message: a context and maybe a delta (live pushes travel as plain
  /// ``documentDelta`` messages).
  case syncMessage = 5
  /// A text edit in the form before ``textEditDelta`` (its runs as a state writes them,
  /// `FORMAT.md` §8.5.1): still read (stored logs, a relay's rows), never written.
  case legacyTextEditDelta = 6
  /// A whole document's state: a snapshot to store or to load into a fresh replica. Its
  /// texts share one content code (`FORMAT.md` §8.4.1).
  case documentState = 7
  /// A delta holding one replica's edit of one text field, in the compact form that
  /// leaves out what its runs imply (a live typed character): the records of a session
  /// frame, from an empty stream.
  case textEditDelta = 8
}

/// The frame around every Converge message: magic, version, kind, length, body, checksum.
///
/// ```
/// offset  size   field
/// 0       4      magic "CNVG" (0x43 0x4E 0x56 0x47)
/// 4       1      format version, 2
/// 5       1      message kind (MessageKind)
/// 6       1-10   body length n, unsigned LEB128
/// …       n      body
/// …       4      CRC-32C of every byte before it, little-endian
/// ```
///
/// `open(_:)` checks the frame completely (magic, version, exact length with
/// no trailing bytes, checksum, kind) before a single byte of the body is interpreted, so
/// body decoders only ever see bytes that arrived intact. `FORMAT.md` beside this file
/// specifies every byte.
///
/// ```swift
/// let message = Envelope.seal(kind: .versionVector, body: body)
/// let (kind, received) = try Envelope.open(message)
/// ```
///
/// - Complexity: O(n) for an n-byte message (the checksum reads every byte once).
@usableFromInline
package enum Envelope {
  /// The four bytes every message starts with: ASCII "CNVG".
  public static let magic: [UInt8] = [0x43, 0x4E, 0x56, 0x47]

  /// The format version this build writes and reads.
  public static let formatVersion: UInt8 = 2

  /// The size of the frame around a body of `bodyLength` bytes.
  public static func overhead(bodyLength: Int) -> Int {
    var writer = ByteWriter()
    writer.writeVarUInt(bodyLength)
    return magic.count + 2 + writer.count + 4
  }

  // MARK: Sealing

  /// Frames `body` as a message of `kind`.
  public static func seal<C: Collection>(kind: MessageKind, body: C) -> [UInt8]
  where C.Element == UInt8 {
    var writer = ByteWriter(capacity: overhead(bodyLength: body.count) + body.count)
    writer.writeBytes(magic)
    writer.writeUInt8(formatVersion)
    writer.writeUInt8(kind.rawValue)
    writer.writeLengthPrefixedBytes(body)
    let checksum = CRC32C.checksum(writer.bytes)
    writer.writeUInt32(checksum)
    return writer.bytes
  }

  /// Frames the body that `write` produces as a message of `kind`.
  ///
  /// The body is written in place after the header, so a small message costs one buffer.
  public static func seal(kind: MessageKind, _ write: (inout ByteWriter) -> Void) -> [UInt8] {
    var writer = ByteWriter(capacity: 64)
    seal(kind: kind, appendingTo: &writer, write)
    return writer.bytes
  }

  /// Appends to `writer` the message of `kind` whose body `write` produces: a buffer of
  /// several messages (a store's pending commits) then costs no buffer per message.
  package static func seal(
    kind: MessageKind, appendingTo writer: inout ByteWriter, _ write: (inout ByteWriter) -> Void
  ) {
    seal(rawKind: kind.rawValue, appendingTo: &writer, write)
  }

  private static func seal(
    rawKind: UInt8, appendingTo writer: inout ByteWriter, _ write: (inout ByteWriter) -> Void
  ) {
    let start = writer.count
    writer.writeBytes(magic)
    writer.writeUInt8(formatVersion)
    writer.writeUInt8(rawKind)
    let lengthOffset = writer.count
    writer.writeUInt8(0)  // the length, patched below (one byte for a body under 128)
    write(&writer)
    writer.patchLength(at: lengthOffset)
    // Computed first: a copy of the bytes alive during the append would make it copy them.
    let checksum = CRC32C.checksum(writer.bytes[start...])
    writer.writeUInt32(checksum)
  }

  // MARK: Opening

  /// Checks the frame of `bytes` and returns its kind and body.
  ///
  /// The body is a slice of `message` when that is an array or a slice (its indices are
  /// those of `message`), of a copy otherwise.
  ///
  /// - Throws: `badMagic`, `unsupportedVersion`, `truncated`, `overlongInteger` or
  ///   `integerOverflow` (for the length), `trailingBytes`, `checksumMismatch`,
  ///   `unknownMessageKind`, in that order of checking.
  @inlinable
  package static func open(_ message: some Collection<UInt8>) throws -> (
    kind: MessageKind, body: ArraySlice<UInt8>
  ) {
    try openSlice(slice(message))
  }

  @usableFromInline
  static func openSlice(_ bytes: ArraySlice<UInt8>) throws -> (
    kind: MessageKind, body: ArraySlice<UInt8>
  ) {
    let frame = try checkFrame(bytes)
    return (frame.kind, bytes[frame.body])
  }

  /// `bytes` as the slice the decoders read: itself when it is an array or a slice
  /// already, a copy otherwise (a `Data`, say, whose indices need not start at 0).
  /// Inlined into each entry point, so the type checks fold away where it is called.
  @inlinable
  package static func slice(_ bytes: some Collection<UInt8>) -> ArraySlice<UInt8> {
    if let slice = bytes as? ArraySlice<UInt8> { return slice }
    if let array = bytes as? [UInt8] { return array[...] }
    return Array(bytes)[...]
  }

  /// Opens `bytes`, checks that it is a message of `kind`, and decodes its body with
  /// `decodeBody`, which must consume the body exactly.
  ///
  /// Offsets in errors thrown from the body count from the start of the message.
  @inlinable
  package static func decode<T>(
    _ message: some Collection<UInt8>, as kind: MessageKind,
    maximumDepth: Int = ByteReader.defaultMaximumDepth,
    _ decodeBody: (inout ByteReader) throws -> T
  ) throws -> T {
    try decodeSlice(slice(message), as: kind, maximumDepth: maximumDepth, decodeBody)
  }

  @usableFromInline
  static func decodeSlice<T>(
    _ bytes: ArraySlice<UInt8>, as kind: MessageKind, maximumDepth: Int,
    _ decodeBody: (inout ByteReader) throws -> T
  ) throws -> T {
    let frame = try checkFrame(bytes)
    guard frame.kind == kind else {
      throw ConvergeDecodingError.unexpectedMessageKind(
        expected: kind.rawValue, actual: frame.kind.rawValue)
    }
    var reader = ByteReader(
      storage: bytes, range: frame.body, origin: bytes.startIndex, maximumDepth: maximumDepth)
    let value = try decodeBody(&reader)
    try reader.expectEnd()
    return value
  }

  /// Opens `bytes`, checks that it is a message of one of `kinds`, and decodes its body
  /// with `decodeBody`, which must consume the body exactly. Another kind is
  /// `unexpectedMessageKind`, naming the first of `kinds` as expected.
  ///
  /// `checksummed: false` leaves the checksum unchecked, for bytes a stronger check
  /// already covered (a snapshot whose ``SnapshotKey`` tag matched, computed over every
  /// byte, the checksum's too).
  package static func decode<T>(
    _ bytes: ArraySlice<UInt8>, as kinds: [MessageKind],
    maximumDepth: Int = ByteReader.defaultMaximumDepth, checksummed: Bool = true,
    _ decodeBody: (MessageKind, inout ByteReader) throws -> T
  ) throws -> T {
    let frame = try checkFrame(bytes, checksummed: checksummed)
    guard kinds.contains(frame.kind) else {
      throw ConvergeDecodingError.unexpectedMessageKind(
        expected: kinds.first?.rawValue ?? 0, actual: frame.kind.rawValue)
    }
    var reader = ByteReader(
      storage: bytes, range: frame.body, origin: bytes.startIndex, maximumDepth: maximumDepth)
    let value = try decodeBody(frame.kind, &reader)
    try reader.expectEnd()
    return value
  }

  private static func checkFrame(
    _ bytes: ArraySlice<UInt8>, checksummed: Bool = true
  ) throws -> (kind: MessageKind, body: Range<Int>) {
    let frame = try checkRawFrame(bytes, checksummed: checksummed)
    guard let kind = MessageKind(rawValue: frame.kind) else {
      throw ConvergeDecodingError.unknownMessageKind(frame.kind)
    }
    return (kind, frame.body)
  }

  /// Checks everything of the frame but whether its kind is one this build knows.
  private static func checkRawFrame(
    _ bytes: ArraySlice<UInt8>, checksummed: Bool
  ) throws -> (kind: UInt8, body: Range<Int>) {
    var reader = ByteReader(bytes)
    for expected in magic {
      // A short input that starts like a message is truncated; anything else is not ours.
      guard !reader.isAtEnd else { throw ConvergeDecodingError.truncated(offset: reader.offset) }
      guard try reader.readUInt8() == expected else { throw ConvergeDecodingError.badMagic }
    }
    let version = try reader.readUInt8()
    guard version == formatVersion else { throw ConvergeDecodingError.unsupportedVersion(version) }
    let rawKind = try reader.readUInt8()
    let length = try reader.readVarUInt()
    let checksumSize = 4
    guard reader.remainingCount >= checksumSize,
      length <= UInt64(reader.remainingCount - checksumSize)
    else { throw ConvergeDecodingError.truncated(offset: bytes.count) }
    let bodyStart = bytes.startIndex + reader.offset
    let body = try reader.readBytes(count: Int(length))
    let checksumStart = reader.offset
    let stored = try reader.readUInt32()
    guard reader.isAtEnd else { throw ConvergeDecodingError.trailingBytes(offset: reader.offset) }
    guard !checksummed || stored == CRC32C.checksum(bytes.prefix(checksumStart)) else {
      throw ConvergeDecodingError.checksumMismatch
    }
    return (rawKind, bodyStart..<(bodyStart + body.count))
  }
}

// MARK: - Application kinds

extension Envelope {
  /// The kinds of messages that programs built on Converge define for themselves (the
  /// relay's acknowledgements, stable cuts and reports): framed and checked like every
  /// message, and refused by Converge's own decoders as unknown kinds.
  package static let applicationKinds: ClosedRange<UInt8> = 128...255

  /// Frames the body that `write` produces as a message of the application kind `kind`
  /// (one of ``applicationKinds``).
  package static func seal(applicationKind kind: UInt8, _ write: (inout ByteWriter) -> Void)
    -> [UInt8]
  {
    precondition(applicationKinds.contains(kind), "not an application kind")
    var writer = ByteWriter(capacity: 64)
    seal(rawKind: kind, appendingTo: &writer, write)
    return writer.bytes
  }

  /// The application kind of `bytes` read from their header alone (magic, version and
  /// kind; nothing else is checked), or `nil` when they do not start like a message of an
  /// application kind: a cheap test of which decoder a message is for.
  package static func applicationKind(of bytes: ArraySlice<UInt8>) -> UInt8? {
    let header = magic.count + 2
    guard bytes.count >= header, bytes.prefix(magic.count).elementsEqual(magic),
      bytes[bytes.startIndex + magic.count] == formatVersion
    else { return nil }
    let kind = bytes[bytes.startIndex + magic.count + 1]
    return applicationKinds.contains(kind) ? kind : nil
  }

  /// Checks the whole frame of `bytes` (as ``open(_:)`` does) and that it is a message of
  /// the application kind `kind`, and returns a reader at its body.
  ///
  /// - Throws: what ``open(_:)`` throws for a damaged frame; `unexpectedMessageKind` for
  ///   a message of another kind.
  package static func openApplication(_ bytes: ArraySlice<UInt8>, kind: UInt8) throws
    -> ByteReader
  {
    let frame = try checkRawFrame(bytes, checksummed: true)
    guard frame.kind == kind else {
      throw ConvergeDecodingError.unexpectedMessageKind(expected: kind, actual: frame.kind)
    }
    return ByteReader(
      storage: bytes, range: frame.body, origin: bytes.startIndex,
      maximumDepth: ByteReader.defaultMaximumDepth)
  }
}
