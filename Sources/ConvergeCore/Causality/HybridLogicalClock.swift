#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A hybrid logical clock reading: wall-clock milliseconds plus a logical counter.
///
/// The two parts are packed into one 64-bit value, milliseconds since 1970 in the high
/// 48 bits (enough until the year 10889) and a logical counter in the low 16 bits, so
/// timestamps compare as plain integers. When more than 65,535 events share a
/// millisecond, the counter carries into the milliseconds: the clock runs a little
/// ahead of the wall rather than ever repeating itself.
public struct Timestamp: Hashable, Comparable, Sendable {
  /// The packed value: `wallMilliseconds << 16 | logical`.
  public var rawValue: UInt64

  /// The largest wall time a timestamp can carry, in milliseconds since 1970.
  public static let maximumWallMilliseconds: UInt64 = (1 << 48) - 1

  /// The earliest timestamp; no event carries it.
  public static let zero = Timestamp(rawValue: 0)

  /// The latest timestamp. A clock that reaches it stays there (see ``HybridLogicalClock``).
  public static let max = Timestamp(rawValue: .max)

  /// The timestamp with the packed value `rawValue` (as read from storage).
  public init(rawValue: UInt64) {
    self.rawValue = rawValue
  }

  /// A timestamp for `wallMilliseconds` (clamped to ``maximumWallMilliseconds``) and
  /// `logical`.
  public init(wallMilliseconds: UInt64, logical: UInt16 = 0) {
    let clamped = Swift.min(wallMilliseconds, Self.maximumWallMilliseconds)
    rawValue = clamped << 16 | UInt64(logical)
  }

  /// Milliseconds since 1970.
  public var wallMilliseconds: UInt64 { rawValue >> 16 }

  /// The logical counter within the millisecond.
  public var logical: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

  /// Orders by wall time, then logical counter: the packed values compared as integers.
  public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
    lhs.rawValue < rhs.rawValue
  }
}

extension Timestamp: CustomStringConvertible {
  /// `milliseconds.logical`, for debugging.
  public var description: String { "\(wallMilliseconds).\(logical)" }
}

/// The source of wall-clock time for a ``HybridLogicalClock``.
///
/// Apps use ``system``; tests and the simulator inject a deterministic source so that
/// runs repeat exactly.
public struct WallClock: Sendable {
  private let read: @Sendable () -> UInt64

  /// A clock that reads milliseconds since 1970 from `read`.
  public init(_ read: @escaping @Sendable () -> UInt64) {
    self.read = read
  }

  /// Milliseconds since 1970 now.
  public func now() -> UInt64 { read() }

  /// The operating system's real-time clock.
  public static let system = WallClock {
    let milliseconds = Date().timeIntervalSince1970 * 1000
    // A clock set before 1970, or a value that is not finite, reads as 0.
    guard milliseconds.isFinite, milliseconds > 0 else { return 0 }
    return milliseconds < 1.8e19 ? UInt64(milliseconds) : .max
  }

  /// A clock that always reads `milliseconds`; the HLC's logical part still advances.
  public static func fixed(_ milliseconds: UInt64) -> WallClock {
    WallClock { milliseconds }
  }
}

/// A hybrid logical clock (Kulkarni et al., 2014): timestamps that follow the wall clock
/// when it behaves and stay causal when it does not.
///
/// Two promises hold whatever the device's wall clock does:
/// - every timestamp the clock issues is greater than every one it issued before, also
///   when the wall clock jumps backwards;
/// - every timestamp issued after ``observe(_:)`` saw a remote timestamp is greater than
///   that remote timestamp. A write made after seeing another write therefore wins over
///   it in a ``LWWRegister``, even from a device whose clock is hours behind.
///
/// ```swift
/// var clock = HybridLogicalClock(wallClock: .system)
/// let first = clock.tick()
/// clock.observe(remoteTimestamp)
/// let second = clock.tick()  // > first and > remoteTimestamp
/// ```
///
/// The clock saturates at ``Timestamp/max`` instead of trapping: only a forged remote
/// timestamp can bring it there, and writes still order by their dots after that.
///
/// - Complexity: O(1) for every operation.
public struct HybridLogicalClock: Sendable {
  /// The latest timestamp issued or observed.
  public private(set) var latest: Timestamp
  private let wallClock: WallClock

  /// A clock reading `wallClock`, which has issued nothing yet, or resumes after `latest`.
  public init(wallClock: WallClock = .system, latest: Timestamp = .zero) {
    self.wallClock = wallClock
    self.latest = latest
  }

  /// A fresh timestamp for a local event, using the clock's wall-clock source.
  public mutating func tick() -> Timestamp {
    tick(wallMilliseconds: wallClock.now())
  }

  /// A fresh timestamp for a local event at wall time `wallMilliseconds`.
  ///
  /// The result is the wall time when that is ahead of everything seen, and otherwise
  /// one past the latest timestamp.
  public mutating func tick(wallMilliseconds: UInt64) -> Timestamp {
    let physical = Timestamp(wallMilliseconds: wallMilliseconds)
    let next = latest.rawValue == .max ? Timestamp.max : Timestamp(rawValue: latest.rawValue + 1)
    latest = Swift.max(physical, next)
    return latest
  }

  /// Takes note of a timestamp from another replica, so later ticks exceed it.
  public mutating func observe(_ remote: Timestamp) {
    latest = Swift.max(latest, remote)
  }
}
