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
/// On the socket it is a message of application kind 129 (see ``RelayAcknowledgement``),
/// its body the stable context then the covering context, each in the `causalContext`
/// body form: 51 bytes for a stable context of one replica's single range and a
/// covering one of two (`RelayStabilityTests`; 66 in the relay's first header).
public struct RelayStableCut: Sendable, Equatable {
  /// The application kind of a stable cut.
  public static let kind: UInt8 = 129

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
    Envelope.seal(applicationKind: Self.kind) { writer in
      stable.writeMessageBody(to: &writer)
      covering.writeMessageBody(to: &writer)
    }
  }

  /// Decodes bytes made by ``encoded()``.
  ///
  /// - Throws: a `ConvergeDecodingError` for anything ``encoded()`` could not produce.
  public init(decoding bytes: ArraySlice<UInt8>) throws {
    var reader = try RelayAcknowledgement.openEnvelope(bytes, kind: Self.kind)
    stable = try CausalContext(readingMessageBody: &reader)
    covering = try CausalContext(readingMessageBody: &reader)
    try reader.expectEnd()
  }

  /// Decodes a cut as a relay's store kept it: a whole cut (``encoded()``); one in the
  /// relay's first header (`R` (0x52), 1, 2, the stable context as a length-prefixed
  /// `causalContext` message, then the covering one), stored before the relay's messages
  /// took an application kind; or a `causalContext` message alone, the stable context
  /// stored before the covering one was kept (covering nothing more).
  ///
  /// - Throws: a `ConvergeDecodingError` for anything none of them could produce.
  public init(decodingStored bytes: ArraySlice<UInt8>) throws {
    if RelayAcknowledgement.envelopeKind(bytes) == Self.kind {
      try self.init(decoding: bytes)
    } else if bytes.starts(with: [0x52, 1, 2]) {
      var reader = ByteReader(bytes.dropFirst(3))
      let stable = try CausalContext(decoding: try reader.readLengthPrefixedBytes())
      let covering = try CausalContext(decoding: try reader.readBytes(count: reader.remainingCount))
      self.init(stable: stable, covering: covering)
    } else {
      let stable = try CausalContext(decoding: bytes)
      self.init(stable: stable, covering: stable)
    }
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
/// On the socket it is a message of application kind 130 (see ``RelayAcknowledgement``),
/// its body the context in the `causalContext` body form: 25 bytes for one replica's
/// single range (`RelayStabilityTests`; 28 in the relay's first header).
public struct RelaySeenReport: Sendable, Equatable {
  /// The application kind of a report.
  public static let kind: UInt8 = 130

  /// Events the device holds durably.
  public var seen: CausalContext

  /// A report of `seen`.
  public init(seen: CausalContext) {
    self.seen = seen
  }

  /// The report as bytes.
  public func encoded() -> [UInt8] {
    Envelope.seal(applicationKind: Self.kind) { seen.writeMessageBody(to: &$0) }
  }

  /// Decodes bytes made by ``encoded()``.
  ///
  /// - Throws: a `ConvergeDecodingError` for anything ``encoded()`` could not produce.
  public init(decoding bytes: ArraySlice<UInt8>) throws {
    var reader = try RelayAcknowledgement.openEnvelope(bytes, kind: Self.kind)
    seen = try CausalContext(readingMessageBody: &reader)
    try reader.expectEnd()
  }
}
