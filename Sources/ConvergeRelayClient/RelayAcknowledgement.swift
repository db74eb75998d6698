import Converge

/// The relay's acknowledgement: the space's context after the relay committed a delta,
/// so every event it includes is durable on the relay.
///
/// On the socket it travels beside the `SyncSession` messages and frames as a Converge
/// message of an application kind (128 to 255, which Converge's own decoders refuse):
/// the same frame (magic `CNVG`, format version, kind, length, body, CRC-32C), kind 128,
/// its body the context in the `causalContext` body form. The HTTP push answers with the
/// same bytes. Kind 129 is the relay's ``RelayStableCut``, kind 130 a device's
/// ``RelaySeenReport``.
public struct RelayAcknowledgement: Sendable, Equatable {
  /// The application kind of an acknowledgement.
  public static let kind: UInt8 = 128

  /// Every event the relay has made durable in the space (at least).
  public var durable: CausalContext

  /// An acknowledgement of `durable`.
  public init(durable: CausalContext) {
    self.durable = durable
  }

  /// The acknowledgement as bytes.
  public func encoded() -> [UInt8] {
    Envelope.seal(applicationKind: Self.kind) { durable.writeMessageBody(to: &$0) }
  }

  /// Whether `bytes` start like one of the relay's messages (a message of an
  /// application kind) rather than a Converge message or a session frame. Only the
  /// header is read; the decoders check the rest.
  public static func isRelayEnvelope(_ bytes: ArraySlice<UInt8>) -> Bool {
    Envelope.applicationKind(of: bytes) != nil
  }

  /// The kind of one of the relay's messages, read from its header, or `nil` for bytes
  /// that do not start like one.
  public static func envelopeKind(_ bytes: ArraySlice<UInt8>) -> UInt8? {
    Envelope.applicationKind(of: bytes)
  }

  /// Checks a whole message of the application kind `kind` and returns a reader at its
  /// body.
  ///
  /// - Throws: a `ConvergeDecodingError` for bytes that are not such a message.
  package static func openEnvelope(_ bytes: ArraySlice<UInt8>, kind: UInt8) throws -> ByteReader {
    try Envelope.openApplication(bytes, kind: kind)
  }

  /// Decodes bytes made by ``encoded()``.
  ///
  /// - Throws: a `ConvergeDecodingError` for anything ``encoded()`` could not produce.
  public init(decoding bytes: ArraySlice<UInt8>) throws {
    var reader = try Self.openEnvelope(bytes, kind: Self.kind)
    durable = try CausalContext(readingMessageBody: &reader)
    try reader.expectEnd()
  }
}
