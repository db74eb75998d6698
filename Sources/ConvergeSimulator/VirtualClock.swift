import Converge
import Foundation  // NSLock; FoundationEssentials has no lock

/// The simulation's virtual time, read by every replica's ``WallClock``.
///
/// `@unchecked Sendable`: `WallClock` takes a `@Sendable` closure, and the replicas'
/// clocks share this one reading; a lock guards it so that the type is safe even though
/// a simulation only ever reads it from the thread that runs it.
final class VirtualClock: @unchecked Sendable {
  /// The wall time at virtual time zero: 14 November 2023, in milliseconds since 1970.
  static let epoch: Int64 = 1_700_000_000_000

  private let lock = NSLock()
  private var milliseconds: UInt64 = 0

  /// Virtual milliseconds since the simulation started.
  var now: UInt64 {
    get { lock.withLock { milliseconds } }
    set { lock.withLock { milliseconds = newValue } }
  }

  /// A wall clock reading virtual time shifted by `skew` milliseconds (negative: behind).
  func wallClock(skew: Int64) -> WallClock {
    WallClock { [self] in
      UInt64(clamping: Self.epoch + Int64(clamping: self.now) + skew)
    }
  }
}
