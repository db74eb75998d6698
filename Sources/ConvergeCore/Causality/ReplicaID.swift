/// The identity of one replica: one device, or one session of an app on a device.
///
/// A replica id is 64 random bits. Every change event a replica makes is named by a
/// ``Dot`` that pairs this id with a counter, so two replicas must never share an id.
/// With 64 random bits the chance that any two of a million replicas collide is about
/// 3 × 10⁻⁸.
///
/// A process that restores a replica from stored bytes takes a *fresh* id for its
/// session (as Yjs does) unless it can prove its stored counter is current: a stale
/// backup restored under the old id would hand out dots that were already used.
///
/// Ids are ordered by their raw value. The order is arbitrary but total and the same on
/// every device; it breaks ties between concurrent writes.
public struct ReplicaID: Hashable, Comparable, Sendable {
  /// The 64-bit value that identifies the replica.
  public let rawValue: UInt64

  /// Wraps an existing id, for example one read back from storage.
  public init(rawValue: UInt64) {
    self.rawValue = rawValue
  }

  /// A new random id from the system's cryptographically secure generator.
  public static func random() -> ReplicaID {
    var generator = SystemRandomNumberGenerator()
    return random(using: &generator)
  }

  /// A new random id from `generator`; simulators and tests pass a seeded one.
  public static func random<G: RandomNumberGenerator>(using generator: inout G) -> ReplicaID {
    // Zero is kept free so that storage formats can use it as "no replica".
    var value: UInt64 = 0
    while value == 0 { value = generator.next() }
    return ReplicaID(rawValue: value)
  }

  /// Orders by raw value: arbitrary, but the same on every device.
  public static func < (lhs: ReplicaID, rhs: ReplicaID) -> Bool {
    lhs.rawValue < rhs.rawValue
  }
}

extension ReplicaID: CustomStringConvertible {
  /// Sixteen lowercase hexadecimal digits.
  public var description: String {
    let digits = String(rawValue, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }
}
