import ConvergeCore

/// A register holding the value of the last write, or `nil` while nothing was written.
///
/// Every write carries a ``Stamp``: the writer's hybrid-logical-clock ``Timestamp`` and
/// the ``Dot`` of the write event. Merging keeps the write with the greater stamp.
/// Stamps are ordered by timestamp, then by the dot's replica, then by the dot's counter,
/// so two concurrent writes with equal timestamps still have one winner, and every
/// replica picks the same one whatever order the writes arrive in. Because a dot is never
/// reused, two different writes never have equal stamps, even after a clock saturates at
/// ``Timestamp/max``: equal stamps cannot carry two values.
///
/// Why a hybrid logical clock rather than the wall clock: a device whose clock runs an
/// hour behind would otherwise lose every write to the writes it had already seen, and
/// its user's latest edit would silently disappear. A ``HybridLogicalClock`` that
/// observes the timestamps it merges issues later timestamps for later writes, whatever
/// the wall clock says, and still tracks real time when clocks agree.
///
/// Two replicas write the same field concurrently; both end with the later write:
///
/// ```swift
/// let phone = ReplicaID(rawValue: 1)
/// let laptop = ReplicaID(rawValue: 2)
/// var onPhone = LWWRegister<String>()
/// var onLaptop = LWWRegister<String>()
/// let fromPhone = onPhone.set(
///   "Buy milk",
///   stamp: .init(
///     timestamp: Timestamp(wallMilliseconds: 1_000), dot: Dot(replica: phone, counter: 1)))
/// let fromLaptop = onLaptop.set(
///   "Buy oat milk",
///   stamp: .init(
///     timestamp: Timestamp(wallMilliseconds: 1_005), dot: Dot(replica: laptop, counter: 1)))
/// onPhone.merge(fromLaptop)
/// onLaptop.merge(fromPhone)
/// // onPhone == onLaptop, and both hold "Buy oat milk" (the greater timestamp).
/// ```
///
/// A register is a delta-state CRDT: ``set(_:stamp:)`` returns the delta to send, a
/// register holding just that write, and ``delta(since:)`` answers a peer's causal
/// context with the write if the peer has not seen it.
///
/// - Complexity: every operation is O(1), plus the cost of comparing or copying one
///   `Value`.
public struct LWWRegister<Value: Sendable & Equatable>: Sendable, Equatable {
  /// The order of writes: timestamp first, then the writing replica, then its counter.
  public struct Stamp: Hashable, Comparable, Sendable {
    /// The writer's hybrid-logical-clock reading when it wrote.
    public var timestamp: Timestamp
    /// The write event; unique across all replicas, so it breaks every tie.
    public var dot: Dot

    /// The stamp of the write event `dot`, made at `timestamp`.
    @inlinable public init(timestamp: Timestamp, dot: Dot) {
      self.timestamp = timestamp
      self.dot = dot
    }

    /// Orders by timestamp, then the dot's replica, then its counter.
    @inlinable public static func < (lhs: Stamp, rhs: Stamp) -> Bool {
      (lhs.timestamp, lhs.dot.replica, lhs.dot.counter)
        < (rhs.timestamp, rhs.dot.replica, rhs.dot.counter)
    }
  }

  /// The winning write's stamp; zero while the register was never written. Not an
  /// optional, and before `value`: a document holds a register per field, and both
  /// ways it took 49 bytes where it now takes 41 (so a field takes 48, not 56).
  @usableFromInline var writtenStamp: Stamp

  /// The value of the winning write; `nil` while the register was never written.
  @usableFromInline var writtenValue: Value?

  // The members below are inlinable: the document and the codec, in other modules, call
  // them for every field they touch, and a generic body called across a module boundary
  // runs unspecialized, through the runtime's metadata (BENCHMARKS.md, "The layers as
  // modules: the library bench held").

  /// The value of the winning write, or `nil` if the register was never written.
  @inlinable public var value: Value? { writtenValue }

  /// The stamp of the winning write, or `nil` if the register was never written.
  @inlinable public var stamp: Stamp? { writtenValue == nil ? nil : writtenStamp }

  /// A register that was never written.
  @inlinable public init() {
    writtenStamp = Self.unwritten  // `writtenValue` starts nil
  }

  /// The stamp of a register never written.
  @usableFromInline static var unwritten: Stamp {
    Stamp(timestamp: .zero, dot: Dot(replica: ReplicaID(rawValue: 0), counter: 0))
  }

  /// A register holding one write.
  @inlinable package init(value: Value, stamp: Stamp) {
    writtenStamp = stamp
    writtenValue = value
  }

  /// Whether the register was never written (or, for a delta, carries no write).
  @inlinable public var isEmpty: Bool { writtenValue == nil }
}

extension LWWRegister: Mergeable {
  /// Writes `value` with `stamp` and returns the delta to send: a register holding just
  /// this write.
  ///
  /// A write whose stamp is not greater than the current one lost already (a later write
  /// was merged first); it is ignored and the returned delta is empty. A local writer
  /// avoids that by taking its timestamp from a ``HybridLogicalClock`` that observed the
  /// current stamp's timestamp.
  ///
  /// - Complexity: O(1).
  @inlinable @discardableResult
  public mutating func set(_ value: Value, stamp: Stamp) -> LWWRegister {
    if let current = self.stamp, stamp <= current { return LWWRegister() }
    writtenValue = value
    writtenStamp = stamp
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return LWWRegister(value: value, stamp: stamp)
  }

  /// Keeps the write with the greater stamp.
  ///
  /// Equal stamps name the same write event (dots are never reused), so they carry the
  /// same value and either side may be kept.
  ///
  /// - Complexity: O(1).
  @inlinable public mutating func merge(_ other: LWWRegister) {
    guard let incoming = other.stamp else { return }
    if let current = stamp, incoming <= current { return }
    writtenValue = other.writtenValue
    writtenStamp = incoming
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
  }

  /// What a peer whose causal context is `context` lacks: the current write if the
  /// context does not hold its dot, otherwise an empty register.
  ///
  /// - Complexity: O(log g) for g gaps in the context's entry for the writer.
  @inlinable public func delta(since context: CausalContext) -> LWWRegister {
    guard let stamp, let value, !context.contains(stamp.dot) else { return LWWRegister() }
    return LWWRegister(value: value, stamp: stamp)
  }
}

extension LWWRegister.Stamp: CustomStringConvertible {
  /// `timestamp/dot`, for debugging.
  public var description: String { "\(timestamp)/\(dot)" }
}

extension LWWRegister: CustomStringConvertible {
  /// The value and its stamp, for debugging.
  public var description: String {
    guard let stamp, let value else { return "LWWRegister(empty)" }
    return "LWWRegister(\(value) @ \(stamp))"
  }
}
