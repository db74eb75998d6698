import Converge

/// The devices of the golden files' scenarios: a phone, a laptop and a tablet with fixed
/// ids and wall clocks that never move, so that every build writes the same bytes.
///
/// Most scenarios open alike: the phone makes something every device receives
/// (``shared(_:)``), then the phone and the laptop edit it concurrently and receive each
/// other's edit (``exchanged(phone:laptop:)``).
package struct FixtureDevices {
  /// The phone's wall clock; the others read a fixed time after it.
  static let phoneClock: UInt64 = 1_700_000_000_000

  package var phone = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(phoneClock))
  package var laptop: Replica
  package var tablet = Replica(
    id: ReplicaID(rawValue: 0xC3), wallClock: .fixed(phoneClock + 200))

  /// The devices, the laptop's clock `laptopLead` milliseconds after the phone's.
  package init(laptopLead: UInt64 = 100) {
    laptop = Replica(id: ReplicaID(rawValue: 0xB2), wallClock: .fixed(Self.phoneClock + laptopLead))
  }

  /// Makes `edit` on the phone; the laptop and the tablet receive it.
  @discardableResult
  package mutating func shared(_ edit: (inout DocumentTransaction) -> Void) -> Commit {
    let commit = phone.transact(edit)
    laptop.apply(commit.delta)
    tablet.apply(commit.delta)
    return commit
  }

  /// Makes `onPhone` on the phone and `onLaptop` on the laptop, concurrently; then each
  /// receives the other's.
  @discardableResult
  package mutating func exchanged(
    phone onPhone: (inout DocumentTransaction) -> Void,
    laptop onLaptop: (inout DocumentTransaction) -> Void
  ) -> (phone: Commit, laptop: Commit) {
    let fromPhone = phone.transact(onPhone)
    let fromLaptop = laptop.transact(onLaptop)
    phone.apply(fromLaptop.delta)
    laptop.apply(fromPhone.delta)
    return (fromPhone, fromLaptop)
  }
}
