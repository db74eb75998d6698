import Converge

/// The decoding property: any bytes, read as every kind of Converge message, either throw
/// a ``ConvergeDecodingError`` or decode to a value that encodes back to exactly those
/// bytes (every message has one canonical encoding). A decoded document or delta must
/// also apply to a replica without trapping.
///
/// The `FuzzDecode` libFuzzer target (`Fuzz/`) searches this space; crashers it finds
/// are kept in `Tests/ConvergeTests/FailCases/decode-*` and replayed by a unit test.
public enum DecodeProperty {
  /// Why the property failed.
  public struct Violation: Error, CustomStringConvertible {
    public var description: String
  }

  /// Checks `bytes` against every decoder, as a whole message and, so that fuzzers
  /// reach the body decoders past the checksum, as the body of a sealed message of
  /// every kind.
  ///
  /// - Throws: ``Violation`` when a decoder accepts bytes it would not produce, or
  ///   throws an error that is not a ``ConvergeDecodingError``.
  public static func check(_ bytes: [UInt8]) throws {
    try checkMessage(bytes)
    for kind in MessageKind.allCases {
      try checkMessage(Envelope.seal(kind: kind, body: bytes))
    }
    try checkTagged(bytes)
    try checkTagged(Envelope.seal(kind: .documentState, body: bytes))
    try checkFrame(sealStartFrame(body: bytes))
  }

  /// Bytes a key holder tagged (``Document/init(decoding:tag:key:)``) are trusted for
  /// their texts' content alone: whatever they hold, a tagged load throws a typed error
  /// exactly when a checked load does for anything but content, equals the checked
  /// load when that succeeds, and gives texts that read, edit and encode without
  /// trapping.
  ///
  /// - Returns: whether the tagged load accepted bytes the checked load refuses (damage
  ///   the tag vouched for), so that a test can show it met some.
  @discardableResult
  public static func checkTagged(_ bytes: [UInt8]) throws -> Bool {
    let key = SnapshotKey(low: 0x5EED, high: 0xC0DE)
    let checked = try? Document(decoding: bytes)
    let loaded: Document
    do {
      loaded = try Document(decoding: bytes, tag: key.tag(of: bytes), key: key)
    } catch is ConvergeDecodingError {
      guard checked == nil else {
        throw Violation(description: "tagged: refused bytes a checked load accepts")
      }
      return false
    } catch {
      throw Violation(description: "tagged: a decode threw a non-typed error: \(error)")
    }
    if let checked, checked != loaded {
      throw Violation(description: "tagged: loaded another document than the checked load")
    }
    var replica = Replica(document: loaded, id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    for entity in loaded.keys {
      for name in loaded.fieldNames(of: entity) where loaded.fieldKind(name, of: entity) == .text {
        _ = loaded.text(of: name, in: entity)
        replica.transact { $0.insertText("x", at: 0, in: name, of: entity) }
      }
    }
    _ = replica.encodedState()
    return checked == nil
  }

  /// A sync session's start frame (see `FORMAT.md`, "Session frames") around `body`,
  /// with a valid checksum, so that fuzzers reach the frame's record decoder.
  public static func sealStartFrame(body: [UInt8], stream: UInt64 = 0x5EED) -> [UInt8] {
    var writer = ByteWriter()
    writer.writeUInt8(0xCF)
    writer.writeUInt8(0x12)  // the start flag and frame version 2
    writer.writeUInt64(stream)
    writer.writeLengthPrefixedBytes(body)
    var covered = ByteWriter()
    covered.writeUInt64(stream)
    covered.writeUInt64(0)
    covered.writeBytes(writer.bytes)
    writer.writeUInt32(CRC32C.checksum(covered.bytes))
    return writer.bytes
  }

  /// A frame either applies through a session or is refused with a typed error and
  /// leaves the replica as it was.
  private static func checkFrame(_ frame: [UInt8]) throws {
    var session = SyncSession()
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    replica.transact {
      $0.insertText("ab", at: 0, in: "body", of: EntityKey(type: "note", id: "n"))
    }
    let before = replica.encodedState()
    do {
      try session.receive(encoded: frame, into: &replica)
      _ = replica.encodedState()
    } catch is ConvergeDecodingError {
      guard replica.encodedState() == before else {
        throw Violation(description: "frame: a refused frame changed the replica")
      }
    } catch {
      throw Violation(description: "frame: a decode threw a non-typed error: \(error)")
    }
  }

  private static func checkMessage(_ bytes: [UInt8]) throws {
    try expectCanonical("version vector", bytes) { try VersionVector(decoding: $0).encoded() }
    try expectCanonical("causal context", bytes) { try CausalContext(decoding: $0).encoded() }
    try expectCanonical("document", bytes) { bytes in
      let document = try Document(decoding: bytes)
      var replica = Replica(document: document, id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
      replica.transact {
        $0.insertText("x", at: 0, in: "probe", of: EntityKey(type: "probe", id: "p"))
      }
      // A legacy state is read, never written, but its decoder must be as strict.
      let legacy = try Envelope.open(bytes).kind == .legacyDocumentState
      return legacy ? document.legacyEncoded() : document.encoded()
    }
    // A text edit of the earlier form is read, never written, but its decoder must be as
    // strict.
    let legacyEdit = (try? Envelope.open(bytes).kind) == .legacyTextEditDelta
    try expectCanonical("delta", bytes) { bytes in
      let delta = try DocumentDelta(decoding: bytes)
      var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
      replica.apply(delta)
      _ = replica.encodedState()
      return legacyEdit ? delta.legacyEncoded() : delta.encoded()
    }
    try expectCanonical("sync message", bytes) { bytes in
      let message = try SyncMessage(decoding: bytes)
      // A live push of the earlier form: its delta alone.
      if legacyEdit, message.context == nil, let delta = message.delta {
        return delta.legacyEncoded()
      }
      return message.encoded()
    }
    do {
      _ = try MessageSummary(decoding: bytes)
    } catch is ConvergeDecodingError {
    } catch {
      throw Violation(description: "inspect threw a non-typed error: \(error)")
    }
  }

  private static func expectCanonical(
    _ kind: String, _ bytes: [UInt8], _ roundTrip: ([UInt8]) throws -> [UInt8]
  ) throws {
    let reencoded: [UInt8]
    do {
      reencoded = try roundTrip(bytes)
    } catch is ConvergeDecodingError {
      return
    } catch {
      throw Violation(description: "\(kind): a decode threw a non-typed error: \(error)")
    }
    guard reencoded == bytes else {
      throw Violation(description: "\(kind): decoded, but re-encodes to other bytes")
    }
  }
}
