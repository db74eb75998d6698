/// Why a byte sequence was refused by a decoder.
///
/// Bytes from another device are untrusted: every decoder in Converge answers bad input
/// with one of these errors instead of trapping, and builds its result only after the
/// whole input has been checked, so a failed decode never leaves anything half-applied.
///
/// Offsets count bytes from the start of the message (or of the buffer a `ByteReader`
/// was made from) to where the problem was found.
public enum ConvergeDecodingError: Error, Equatable, Sendable {
  /// The input ended in the middle of a value that starts or continues at `offset`.
  case truncated(offset: Int)
  /// A LEB128 integer used more bytes than its value needs (for example `0x80 0x00`).
  case overlongInteger(offset: Int)
  /// A LEB128 integer, or arithmetic on decoded values, exceeded 64 bits.
  case integerOverflow(offset: Int)
  /// The message does not start with the magic bytes `CNVG`.
  case badMagic
  /// The message has a format version this build cannot read.
  case unsupportedVersion(UInt8)
  /// The message kind byte names no kind this build knows.
  case unknownMessageKind(UInt8)
  /// The message is of a known kind, but not the one the caller asked to decode.
  case unexpectedMessageKind(expected: UInt8, actual: UInt8)
  /// A length-prefixed section was not consumed exactly by its contents.
  case lengthMismatch(offset: Int)
  /// The CRC-32C at the end of the message does not match the bytes before it.
  case checksumMismatch
  /// An element count at `offset` claims more elements than the remaining bytes could
  /// possibly hold; nothing was allocated for it.
  case countTooLarge(offset: Int)
  /// A replica index points outside the message's replica table.
  case unknownReplicaIndex(offset: Int)
  /// A value is well formed but not allowed here (not canonical, out of range, …).
  case invalidValue(offset: Int, reason: String)
  /// Bytes remain after the value was completely decoded.
  case trailingBytes(offset: Int)
  /// Recursive values are nested deeper than the decoder allows.
  case nestingTooDeep(offset: Int)
  /// A string at `offset` is not valid UTF-8.
  case invalidUTF8(offset: Int)
  /// A sync session frame does not continue the session's stream: it was lost, repeated,
  /// reordered or damaged on the way (its checksum covers its sequence number). The
  /// session answers with a handshake, after which the peer restarts its stream.
  case frameOutOfSequence
}

extension ConvergeDecodingError: CustomStringConvertible {
  public var description: String {
    switch self {
    case .truncated(let offset):
      return "input ends too early (at byte \(offset))"
    case .overlongInteger(let offset):
      return "overlong LEB128 integer at byte \(offset)"
    case .integerOverflow(let offset):
      return "integer overflows 64 bits at byte \(offset)"
    case .badMagic:
      return "not a Converge message (bad magic bytes)"
    case .unsupportedVersion(let version):
      return "unsupported format version \(version)"
    case .unknownMessageKind(let kind):
      return "unknown message kind \(kind)"
    case .unexpectedMessageKind(let expected, let actual):
      return "expected a message of kind \(expected), found kind \(actual)"
    case .lengthMismatch(let offset):
      return "section length does not match its contents at byte \(offset)"
    case .checksumMismatch:
      return "checksum mismatch: the message is corrupted"
    case .countTooLarge(let offset):
      return "element count at byte \(offset) exceeds what the remaining bytes can hold"
    case .unknownReplicaIndex(let offset):
      return "replica index at byte \(offset) is not in the replica table"
    case .invalidValue(let offset, let reason):
      return "invalid value at byte \(offset): \(reason)"
    case .trailingBytes(let offset):
      return "unexpected bytes after the end of the value, from byte \(offset)"
    case .nestingTooDeep(let offset):
      return "values nested too deeply at byte \(offset)"
    case .frameOutOfSequence:
      return "sync frame out of sequence or damaged (the session restarts its stream)"
    case .invalidUTF8(let offset):
      return "string at byte \(offset) is not valid UTF-8"
    }
  }
}
