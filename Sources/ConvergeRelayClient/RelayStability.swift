import Converge

/// The relay's stable cut of a space: every event of ``stable`` has been seen by every
/// device that may still send an edit, so a deleted entity whose events all lie in it can
/// be forgotten (`DeviceReplica.forgetDeleted(stable:)`).
///
/// A replica may forget with it only once it holds ``covering``, the union of what those
/// devices reported: an edit made concurrently with a delete in ``stable`` is in some
/// device's report, hence in ``covering``, and a replica that holds it keeps the entity
/// it revived (see `CausalContext.stableCut(of:seenBy:)`). A replica that does not hold
/// it yet keeps the cut and forgets once it does.
///
/// On the socket it is a relay envelope (``RelayAcknowledgement``'s `R` header) of kind 2:
/// `R`, the envelope version (1), the kind (2), the stable context as a `causalContext`
/// message behind its byte length (unsigned LEB128), then the covering context as a
/// `causalContext` message: 66 bytes for a stable context of one replica's single range
/// and a covering one of two (`RelayStabilityTests`), about 12 more per further replica
/// in each.
public struct RelayStableCut: Sendable, Equatable {
  public static let kind: UInt8 = 2

  /// Events every device that may still send an edit has seen.
  public var stable: CausalContext
  /// Every event those devices reported having seen: what a replica must hold before it
  /// forgets with ``stable``.
  public var covering: CausalContext

  /// A cut of `stable` that replicas holding `covering` may forget with.
  public init(stable: CausalContext, covering: CausalContext) {
    self.stable = stable
    self.covering = covering
  }

  /// The cut as bytes.
  public func encoded() -> [UInt8] {
    var writer = ByteWriter()
    writer.writeUInt8(RelayAcknowledgement.magic)
    writer.writeUInt8(RelayAcknowledgement.version)
    writer.writeUInt8(Self.kind)
    writer.writeLengthPrefixedBytes(stable.encoded())
    writer.writeBytes(covering.encoded())
    return writer.bytes
  }

  /// Decodes bytes made by ``encoded()``.
  ///
  /// - Throws: a `ConvergeDecodingError` for anything ``encoded()`` could not produce.
  public init(decoding bytes: ArraySlice<UInt8>) throws {
    var reader = try RelayAcknowledgement.openEnvelope(bytes, kind: Self.kind)
    stable = try CausalContext(decoding: try reader.readLengthPrefixedBytes())
    covering = try CausalContext(decoding: try reader.readBytes(count: reader.remainingCount))
  }
}

/// A device's report to the relay of what it has seen: its context, every event of which
/// it holds durably, so that the relay's stable cut (``RelayStableCut``) can advance past
/// what the relay sent it.
///
/// The relay learns a device's context from its handshake and adds what it pushes; what
/// the relay fans out to it counts only once the device reports it. ``RelaySession``
/// sends a report at most about once a second (``RelaySession/seenReportPatience`` calls
/// of `outgoing`), only when the device's context grew, and only once what it reports
/// is durable on the device: a crash cannot take back an event the relay was told of.
///
/// On the socket it is a relay envelope of kind 3: `R`, 1, 3, then the context as a
/// `causalContext` message: 28 bytes for one replica's single range, 40 for two
/// (`RelayStabilityTests`).
public struct RelaySeenReport: Sendable, Equatable {
  public static let kind: UInt8 = 3

  /// Events the device holds durably.
  public var seen: CausalContext

  /// A report of `seen`.
  public init(seen: CausalContext) {
    self.seen = seen
  }

  /// The report as bytes.
  public func encoded() -> [UInt8] {
    [RelayAcknowledgement.magic, RelayAcknowledgement.version, Self.kind] + seen.encoded()
  }

  /// Decodes bytes made by ``encoded()``.
  ///
  /// - Throws: a `ConvergeDecodingError` for anything ``encoded()`` could not produce.
  public init(decoding bytes: ArraySlice<UInt8>) throws {
    var reader = try RelayAcknowledgement.openEnvelope(bytes, kind: Self.kind)
    seen = try CausalContext(decoding: try reader.readBytes(count: reader.remainingCount))
  }
}
