import Converge
import ConvergeTestSupport
import Testing

@Suite struct ORSetTests {
  let alice = ReplicaID(rawValue: 0xA)
  let bob = ReplicaID(rawValue: 0xB)
  let carol = ReplicaID(rawValue: 0xC)

  @Test func addWinsOverAConcurrentRemove() throws {
    var onAlice = ORSet<String>()
    let firstAdd = try add("work", to: &onAlice, by: alice)
    var onBob = ORSet<String>()
    onBob.merge(firstAdd)

    let removal = onAlice.remove("work")
    let readd = try add("work", to: &onBob, by: bob)
    onAlice.merge(readd)
    onBob.merge(removal)

    #expect(onAlice == onBob)
    #expect(onAlice.contains("work"))
    #expect(onAlice.dots(of: "work") == [Dot(replica: bob, counter: 1)])
  }

  @Test func twoReplicaExampleFromTheDocumentation() throws {
    let phone = ReplicaID(rawValue: 1)
    let laptop = ReplicaID(rawValue: 2)
    var onPhone = ORSet<String>()
    _ = try add("work", to: &onPhone, by: phone)
    var onLaptop = onPhone
    let removal = onPhone.remove("work")
    let readd = try add("work", to: &onLaptop, by: laptop)
    let urgent = try add("urgent", to: &onLaptop, by: laptop)
    onPhone.merge(readd.merging(urgent))
    onLaptop.merge(removal)
    #expect(onPhone == onLaptop)
    #expect(onPhone.elements == ["work", "urgent"])
  }
}

/// Adds `element` as an event of `replica`, failing the test if the counter space is
/// exhausted.
func add<Element>(
  _ element: Element, to set: inout ORSet<Element>, by replica: ReplicaID,
  sourceLocation: SourceLocation = #_sourceLocation
) throws -> ORSet<Element> {
  let delta = set.insert(element, replica: replica)
  return try #require(delta, sourceLocation: sourceLocation)
}
