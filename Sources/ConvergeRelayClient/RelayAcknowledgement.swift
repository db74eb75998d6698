import Converge

/// The relay's acknowledgement: the space's context after the relay committed a delta,
/// so every event it includes is durable on the relay.
///
/// On the socket it travels as a binary message beside the `SyncSession` messages and
/// frames, told apart by its first byte: `R` (0x52), where a Converge message starts with
/// `C` (0x43) and a session frame with 0xCF. Layout: `R`, the envelope version (1), the
/// kind (1, acknowledgement), then the context as a `causalContext` message. The HTTP
/// push answers with the same bytes. Kind 2 is the relay's ``RelayStableCut``, kind 3 a
/// device's ``RelaySeenReport``.
public struct RelayAcknowledgement: Sendable, Equatable {
  /// The first byte of every relay envelope.
  public static let magic: UInt8 = 0x52
  static let version: UInt8 = 1
  static let acknowledgementKind: UInt8 = 1

  /// Every event the relay has made durable in the space (at least).
  public var durable: CausalContext

  /// An acknowledgement of `durable`.
  public init(durable: CausalContext) {
    self.durable = durable
  }

  /// The acknowledgement as bytes.
  public func encoded() -> [UInt8] {
    [Self.magic, Self.version, Self.acknowledgementKind] + durable.encoded()
  }

  /// Whether `bytes` are a relay envelope rather than a Converge message or frame.
  public static func isRelayEnvelope(_ bytes: ArraySlice<UInt8>) -> Bool {
    bytes.first == magic
  }

  /// The kind of a relay envelope (its third byte), or `nil` for bytes too short to be one.
  public static func envelopeKind(_ bytes: ArraySlice<UInt8>) -> UInt8? {
    guard bytes.count >= 3, bytes.first == magic else { return nil }
    return bytes[bytes.startIndex + 2]
  }

  /// Checks the header of a relay envelope of `kind` and returns a reader at its body.
  ///
  /// - Throws: a `ConvergeDecodingError` for bytes that are not such an envelope.
  package static func openEnvelope(_ bytes: ArraySlice<UInt8>, kind: UInt8) throws -> ByteReader {
    guard bytes.count >= 3 else { throw ConvergeDecodingError.truncated(offset: bytes.count) }
    let start = bytes.startIndex
    guard bytes[start] == magic else {
      throw ConvergeDecodingError.invalidValue(offset: 0, reason: "not a relay envelope")
    }
    guard bytes[start + 1] == version, bytes[start + 2] == kind else {
      throw ConvergeDecodingError.invalidValue(offset: 1, reason: "unknown relay envelope")
    }
    return ByteReader(bytes.dropFirst(3))
  }

  /// Decodes bytes made by ``encoded()``.
  ///
  /// - Throws: a `ConvergeDecodingError` for anything ``encoded()`` could not produce.
  public init(decoding bytes: ArraySlice<UInt8>) throws {
    var reader = try Self.openEnvelope(bytes, kind: Self.acknowledgementKind)
    durable = try CausalContext(decoding: try reader.readBytes(count: reader.remainingCount))
  }
}
