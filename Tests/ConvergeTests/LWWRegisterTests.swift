import Converge
import ConvergeTestSupport
import Testing

@Suite struct LWWRegisterTests {
  typealias Register = LWWRegister<String>
  let alice = ReplicaID(rawValue: 0xA)
  let bob = ReplicaID(rawValue: 0xB)

  func stamp(_ milliseconds: UInt64, _ replica: ReplicaID, _ counter: UInt64) -> Register.Stamp {
    .init(
      timestamp: Timestamp(wallMilliseconds: milliseconds),
      dot: Dot(replica: replica, counter: counter))
  }

  @Test func neverWrittenRegisterIsEmpty() {
    let register = Register()
    #expect(register.value == nil)
    #expect(register.stamp == nil)
  }

  @Test func concurrentWritesConvergeOnTheGreaterStamp() {
    var onAlice = Register()
    var onBob = Register()
    let fromAlice = onAlice.set("milk", stamp: stamp(1_000, alice, 1))
    let fromBob = onBob.set("oat milk", stamp: stamp(1_005, bob, 1))
    onAlice.merge(fromBob)
    onBob.merge(fromAlice)
    #expect(onAlice == onBob)
    #expect(onAlice.value == "oat milk")
  }
}
