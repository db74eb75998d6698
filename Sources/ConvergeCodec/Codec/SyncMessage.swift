/// A message between two sync sessions: the sender's context and, optionally, the
/// events it believes the receiver lacks. A live push has a delta and no context.
public struct SyncMessage: Sendable, Equatable {
  /// Every event the sender had when it wrote the message; `nil` for a live push.
  public var context: CausalContext?
  /// The events the sender believes the receiver lacks.
  public var delta: DocumentDelta?
  /// Whether the sender refused a frame of the receiver's stream of live pushes and asks
  /// for a new one (handshake messages only).
  public var requestsNewStream: Bool

  /// A message stating `context` (`nil` for a live push) and carrying `delta`.
  public init(context: CausalContext?, delta: DocumentDelta?, requestsNewStream: Bool = false) {
    self.context = context
    self.delta = delta
    self.requestsNewStream = context != nil && requestsNewStream
  }
}

/// Wire form of a sync message (see `FORMAT.md`, "Sync message").
///
/// A live push (a message with no context) is exactly its delta's
/// ``MessageKind/documentDelta`` message, so pushing a typed character costs no more than
/// the delta, and a relay that stores plain deltas needs nothing else. A handshake
/// message is a ``MessageKind/syncMessage`` whose body nests complete messages: a flags
/// byte, the sender's context as a ``MessageKind/causalContext`` message, and, when
/// present, the delta as a ``MessageKind/documentDelta`` message, each length-prefixed.
///
/// - Complexity: O(d log d) for a message of d bytes, both ways.
extension SyncMessage {
  private static let hasDelta: UInt8 = 1
  private static let newStream: UInt8 = 2

  /// The message as bytes for any channel.
  public func encoded() -> [UInt8] {
    guard let context else { return (delta ?? DocumentDelta()).encoded() }
    return Envelope.seal(kind: .syncMessage) { writer in
      writer.writeUInt8(
        (delta == nil ? 0 : Self.hasDelta) | (requestsNewStream ? Self.newStream : 0))
      writer.writeLengthPrefixedBytes(context.encoded())
      if let delta { writer.writeLengthPrefixedBytes(delta.encoded()) }
    }
  }

  /// Decodes a message made by ``encoded()``: a handshake message, or a plain delta
  /// message, which reads as a live push.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for any input ``encoded()`` could not have
  ///   produced.
  ///
  /// `bytes` may be an array, a slice of a larger buffer, or a `Data` (any collection of
  /// bytes; one that is not an array or a slice is copied once).
  public init(decoding message: some Collection<UInt8>) throws {
    let bytes = Envelope.slice(message)
    let (kind, _) = try Envelope.open(bytes)
    switch kind {
    case .documentDelta, .textEditDelta, .legacyTextEditDelta:
      self.init(context: nil, delta: try DocumentDelta(decoding: bytes))
    case .syncMessage:
      self = try Envelope.decode(bytes, as: .syncMessage) { reader in
        let flags = try reader.readUInt8()
        guard flags & ~(Self.hasDelta | Self.newStream) == 0 else {
          throw ConvergeDecodingError.invalidValue(
            offset: reader.offset - 1, reason: "unknown sync flags")
        }
        let context = try CausalContext(decoding: reader.readLengthPrefixedBytes())
        let delta =
          flags & Self.hasDelta == 0
          ? nil : try DocumentDelta(decoding: reader.readLengthPrefixedBytes())
        return SyncMessage(
          context: context, delta: delta, requestsNewStream: flags & Self.newStream != 0)
      }
    default:
      throw ConvergeDecodingError.unexpectedMessageKind(
        expected: MessageKind.syncMessage.rawValue, actual: kind.rawValue)
    }
  }
}
