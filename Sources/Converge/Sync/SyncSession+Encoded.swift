// A session's messages as bytes: handshake messages through the codec's `SyncMessage`
// form, live pushes as frames of the codec's `SessionStream`.

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
