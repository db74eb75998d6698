#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

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
    case .documentDelta, .textEditDelta:
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

extension SyncSession {
  /// The next message for the peer as bytes, or `nil` when there is nothing to say.
  public mutating func makeEncodedMessage(for replica: Replica) -> [UInt8]? {
    makeMessage(for: replica)?.encoded()
  }

  /// A live push of one local transaction as the next frame of this session's stream:
  /// a few bytes for a typed character. Send the frames in order; the peer decodes them
  /// with ``receive(encoded:into:)-([UInt8],_)``.
  ///
  /// - Complexity: O(d) for a delta of d runs and scalars; a delta that is not one
  ///   replica's edit of one text field travels embedded, at the cost of its message.
  public mutating func pushEncoded(_ commit: Commit, from replica: Replica) -> [UInt8] {
    // As `push(_:from:)`, whose message carries `commit.delta`, without the message.
    notePush(of: commit.delta, from: replica)
    return outgoing.encode(commit.delta)
  }

  /// A live push of `delta`, events of `replica` the peer lacks (a durable owner's
  /// edits once its store has synced them, several transactions at once), as the next
  /// frame of this session's stream, as ``pushEncoded(_:from:)`` pushes a commit.
  package mutating func pushEncoded(_ delta: DocumentDelta, from replica: Replica) -> [UInt8] {
    notePush(of: delta, from: replica)
    return outgoing.encode(delta)
  }

  /// Decodes and integrates a message or frame from the peer. Bytes that do not decode
  /// leave the replica unchanged; a frame that does not continue the peer's stream also
  /// makes the session owe the peer a handshake, so that the peer restarts its stream
  /// and resends what was lost.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for bytes that are not a valid message, and
  ///   ``ConvergeDecodingError/frameOutOfSequence`` for a frame out of order.
  @discardableResult
  public mutating func receive(encoded bytes: [UInt8], into replica: inout Replica) throws
    -> DocumentChanges
  {
    try receive(encoded: bytes[...], into: &replica)
  }

  /// Decodes and integrates a message or frame from a slice of a larger buffer.
  @discardableResult
  public mutating func receive(encoded bytes: ArraySlice<UInt8>, into replica: inout Replica)
    throws -> DocumentChanges
  {
    receive(try decode(bytes), into: &replica)
  }

  /// Decodes bytes from the peer (a handshake message, a self-contained push, or the
  /// next frame of the peer's stream) without applying them, for an app that checks a
  /// delta before it hands the message to ``receive(_:into:)``.
  ///
  /// A frame moves the session's copy of the peer's stream on, and one that does not
  /// continue it makes the session owe the peer a handshake that asks for a new stream.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for bytes that are not a valid message, and
  ///   ``ConvergeDecodingError/frameOutOfSequence`` for a frame out of order.
  public mutating func decode(_ bytes: ArraySlice<UInt8>) throws -> SyncMessage {
    guard !SessionStream.isFrame(bytes) else {
      do {
        let delta = try incoming.decode(bytes)
        noteFrameDecoded()
        return SyncMessage(context: nil, delta: delta)
      } catch {
        noteBrokenStream()
        throw error
      }
    }
    return try SyncMessage(decoding: bytes)
  }
}
