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
  private var skews: [Int64] = []

  /// Virtual milliseconds since the simulation started.
  var now: UInt64 {
    get { lock.withLock { milliseconds } }
    set { lock.withLock { milliseconds = newValue } }
  }

  /// Adds a device whose clock is off by `skew` milliseconds (negative: behind) and
  /// returns its wall clock. Its skew can change later, as when a clock is corrected.
  func addDevice(skew: Int64) -> WallClock {
    let device = lock.withLock {
      skews.append(skew)
      return skews.count - 1
    }
    return WallClock { [self] in self.read(device) }
  }

  /// Changes a device's skew: its wall clock jumps, possibly backwards.
  func setSkew(_ skew: Int64, of device: Int) {
    lock.withLock { skews[device] = skew }
  }

  private func read(_ device: Int) -> UInt64 {
    lock.withLock {
      UInt64(clamping: Self.epoch + Int64(clamping: milliseconds) + skews[device])
    }
  }
}
