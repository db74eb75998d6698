#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Saving and restoring a replica, and applying deltas received as bytes.
///
/// The saved state is the document's encoding and nothing else: no replica id, no
/// counter. Restoring takes a *fresh random* replica id, so a restored replica can never
/// hand out a dot it (or the device it was copied from) already used, even when the
/// bytes are a stale backup taken before later edits were sent. The hybrid logical
/// clock observes the latest timestamp in the document, so new writes still win over
/// every write the saved state held.
///
/// ```swift
/// let saved = replica.encodedState()          // write it to disk
/// var restored = try Replica(restoring: saved) // next launch: same document, new id
/// try restored.apply(encodedDelta: received)   // all or nothing
/// ```
extension Replica {
  /// The replica's document as a ``MessageKind/documentState`` message.
  ///
  /// - Complexity: O(n log n) for a document of n bytes.
  public func encodedState() -> [UInt8] {
    document.encoded()
  }

  /// A replica continuing from saved state under a fresh random id.
  ///
  /// - Throws: a ``ConvergeDecodingError`` if `bytes` is not a valid document state.
  ///
  /// `bytes` may be an array, a slice of a larger buffer, or a `Data`.
  @inlinable
  public init(restoring bytes: some Collection<UInt8>, wallClock: WallClock = .system) throws {
    self.init(document: try Document(decoding: bytes), wallClock: wallClock)
  }

  /// Decodes a ``MessageKind/documentDelta`` message and integrates it.
  ///
  /// The message is decoded completely before anything is applied: on any error the
  /// replica is exactly as it was.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for a damaged or hostile message.
  @discardableResult
  @inlinable
  public mutating func apply(encodedDelta bytes: some Collection<UInt8>) throws
    -> DocumentChanges
  {
    apply(try DocumentDelta(decoding: bytes))
  }
}
