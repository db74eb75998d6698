import Converge

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// What the relay knows of one device (one replica id a write token grants) in a space:
/// a lower bound of the context it has seen, when it was last heard from, when its grant
/// ends, and whether it was retired.
///
/// `seen` never overstates the device: it is the context the device stated in its
/// handshake, grown by what it pushed and by what it reported it holds durably
/// (`RelaySeenReport`). The space's stable cut is the meet of its active devices'
/// `seen`; a device merely offline keeps its record, so it holds the cut back until the
/// horizon (``RelayConfiguration/retireAfter``) or its grant's end retires it.
public struct RelayDeviceRecord: Sendable, Equatable {
  public var replica: ReplicaID
  public var seen: CausalContext
  /// Seconds since 1970, whole.
  public var lastHeard: Int64
  /// When the device's latest grant ends, in seconds since 1970.
  public var expiry: Int64
  public var isRetired: Bool

  /// A record of `replica`.
  public init(
    replica: ReplicaID, seen: CausalContext, lastHeard: Int64, expiry: Int64, isRetired: Bool
  ) {
    self.replica = replica
    self.seen = seen
    self.lastHeard = lastHeard
    self.expiry = expiry
    self.isRetired = isRetired
  }

  /// Whether the device may still send an edit the space must wait for at `now`: not
  /// retired, its latest grant not over for longer than `grace` (a short-lived token
  /// the device refreshes does not retire it), and heard from within `horizon` (or
  /// connected now).
  func isActive(now: Int64, horizon: Int64, grace: Int64, connected: Bool) -> Bool {
    guard !isRetired, now <= expiry || now - expiry <= grace else { return false }
    return connected || now - lastHeard <= horizon
  }
}

extension Date {
  /// Whole seconds since 1970, clamped to what a database integer holds.
  var relaySeconds: Int64 {
    let seconds = timeIntervalSince1970.rounded(.down)
    guard seconds.isFinite else { return 0 }
    return Int64(max(min(seconds, 9e15), -9e15))
  }
}
