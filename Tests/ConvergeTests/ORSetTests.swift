import Converge
import ConvergeTestSupport
import Testing

@Suite struct ORSetTests {
  let alice = ReplicaID(rawValue: 0xA)
  let bob = ReplicaID(rawValue: 0xB)
  let carol = ReplicaID(rawValue: 0xC)

  @Test func emptySet() {
    let set = ORSet<String>()
    #expect(set.isEmpty)
    #expect(set.count == 0)
    #expect(set.elements.isEmpty)
    #expect(set.context.isEmpty)
    #expect(Array(set).isEmpty)
  }

  @Test func insertRemoveAndSequence() throws {
    var set = ORSet<String>()
    _ = try add("a", to: &set, by: alice)
    _ = try add("b", to: &set, by: alice)
    _ = try add("a", to: &set, by: alice)
    #expect(set.count == 2)
    #expect(set.contains("a") && set.contains("b") && !set.contains("c"))
    #expect(Set(set) == ["a", "b"])
    #expect(set.elements == ["a", "b"])
    // The second add of "a" superseded the first: one dot per replica.
    #expect(set.dots(of: "a") == [Dot(replica: alice, counter: 3)])
    _ = try remove("a", from: &set, by: alice)
    #expect(set.elements == ["b"])
    #expect(set.dots(of: "a").isEmpty)
    // The remove is an event too.
    #expect(set.context == CausalContext(dots: (1...4).map { Dot(replica: alice, counter: $0) }))
  }

  @Test func addWinsOverAConcurrentRemove() throws {
    var onAlice = ORSet<String>()
    let firstAdd = try add("work", to: &onAlice, by: alice)
    var onBob = ORSet<String>()
    onBob.merge(firstAdd)

    let removal = try remove("work", from: &onAlice, by: alice)
    let readd = try add("work", to: &onBob, by: bob)
    onAlice.merge(readd)
    onBob.merge(removal)

    #expect(onAlice == onBob)
    #expect(onAlice.contains("work"))
    #expect(onAlice.dots(of: "work") == [Dot(replica: bob, counter: 1)])
  }

  @Test func aRemoveRemovesOnlyTheDotsItObserved() throws {
    var onAlice = ORSet<String>()
    var onBob = ORSet<String>()
    let fromAlice = try add("x", to: &onAlice, by: alice)
    let fromBob = try add("x", to: &onBob, by: bob)
    // Alice removes "x" without having seen Bob's add.
    let removal = try remove("x", from: &onAlice, by: alice)
    #expect(removal.context == CausalContext(dots: [Dot(replica: alice, counter: 2)]))
    #expect(removal.isEmpty)
    var onCarol = ORSet<String>()
    for delta in [removal, fromBob, fromAlice] { onCarol.merge(delta) }
    #expect(onCarol.dots(of: "x") == [Dot(replica: bob, counter: 1)])
  }

  /// Akka's delta ORSet once put the remover's whole version vector in a remove delta;
  /// a concurrent add the remover had not yet received then vanished on arrival.
  @Test func aRemoveDeltaCarriesNoVersionVector() throws {
    var onAlice = ORSet<String>()
    var onBob = ORSet<String>()
    onAlice.merge(try add("y", to: &onBob, by: bob))  // Alice has seen bob@1
    let addX = try add("x", to: &onAlice, by: alice)
    let addZ = try add("z", to: &onAlice, by: alice)
    let concurrent = try add("x", to: &onBob, by: bob)  // bob@2, unseen by Alice
    let removal = try remove("x", from: &onAlice, by: alice)
    #expect(removal.context == CausalContext(dots: [Dot(replica: alice, counter: 3)]))
    for delta in [removal, addZ, addX] { onBob.merge(delta) }
    onAlice.merge(concurrent)
    #expect(onBob == onAlice)
    #expect(onBob.elements == ["x", "y", "z"])
  }

  @Test func aRemoveDeltaArrivingBeforeTheAddItObservedStillRemovesIt() throws {
    var onAlice = ORSet<String>()
    let addition = try add("x", to: &onAlice, by: alice)
    var onBob = ORSet<String>()
    onBob.merge(addition)
    let removal = try remove("x", from: &onBob, by: bob)

    var onCarol = ORSet<String>()
    onCarol.merge(removal)
    #expect(!onCarol.contains("x"))
    onCarol.merge(addition)
    #expect(!onCarol.contains("x"))
    #expect(onCarol == onBob)
  }

  @Test func addDeltasFromOneReplicaArrivingOutOfOrder() throws {
    var onAlice = ORSet<String>()
    let first = try add("x", to: &onAlice, by: alice)
    let second = try add("y", to: &onAlice, by: alice)
    var onBob = ORSet<String>()
    onBob.merge(second)
    #expect(onBob.elements == ["y"])
    #expect(onBob.context.hasGaps)
    onBob.merge(first)
    #expect(onBob.elements == ["x", "y"])
    #expect(!onBob.context.hasGaps)
    #expect(onBob == onAlice)
  }

  @Test func reAddAfterRemove() throws {
    var onAlice = ORSet<String>()
    let deltas = [
      try add("x", to: &onAlice, by: alice), try remove("x", from: &onAlice, by: alice),
      try add("x", to: &onAlice, by: alice),
    ]
    #expect(onAlice.contains("x"))
    // Any delivery order gives the same result.
    for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1]] {
      var onBob = ORSet<String>()
      for index in order { onBob.merge(deltas[index]) }
      #expect(onBob == onAlice, "order \(order)")
    }
  }

  @Test func aLateOrDuplicatedOldAddNeverResurrects() throws {
    var onAlice = ORSet<String>()
    let addition = try add("x", to: &onAlice, by: alice)
    let removal = try remove("x", from: &onAlice, by: alice)

    var duplicated = ORSet<String>()
    for delta in [addition, removal, addition, addition] { duplicated.merge(delta) }
    #expect(!duplicated.contains("x"))

    var late = ORSet<String>()
    for delta in [removal, addition, addition] { late.merge(delta) }
    #expect(!late.contains("x"))

    // A whole stale replica that still holds the add does not bring it back either.
    var stale = ORSet<String>()
    stale.merge(addition)
    var merged = onAlice
    merged.merge(stale)
    #expect(!merged.contains("x"))
    #expect(duplicated == onAlice && late == onAlice && merged == onAlice)
  }

  @Test func removeAllRemovesWhatItObservedOnly() throws {
    var onAlice = ORSet<String>()
    _ = try add("a", to: &onAlice, by: alice)
    _ = try add("b", to: &onAlice, by: alice)
    var onBob = onAlice
    let concurrent = try add("c", to: &onBob, by: bob)
    let cleared = onAlice.removeAll(replica: alice)
    let clear = try #require(cleared)
    #expect(onAlice.isEmpty)
    #expect(clear.isEmpty)
    // One remove event for the elements it observed.
    #expect(clear.context == CausalContext(dots: [Dot(replica: alice, counter: 3)]))
    onAlice.merge(concurrent)
    onBob.merge(clear)
    #expect(onAlice == onBob)
    #expect(onAlice.elements == ["c"])
  }

  /// A removal travels as its element's presence: the delta for a peer that still holds
  /// the element carries it, and nothing the peer has already.
  @Test func deltaSinceCarriesARemovalOfAnElementThePeerHolds() throws {
    var onAlice = ORSet<String>()
    _ = try add("x", to: &onAlice, by: alice)
    _ = try add("y", to: &onAlice, by: alice)
    var onBob = onAlice
    _ = try remove("x", from: &onAlice, by: alice)
    let delta = onAlice.delta(since: onBob.context)
    #expect(delta.isEmpty)  // Bob has every live add already.
    #expect(delta.context == CausalContext(dots: [Dot(replica: alice, counter: 3)]))
    onBob.merge(delta)
    #expect(onBob.elements == ["y"])
    #expect(onBob == onAlice)
    // Nothing new: the delta against an up-to-date peer changes nothing.
    #expect(onBob.merging(onAlice.delta(since: onBob.context)) == onBob)
  }

  @Test func deltaSinceSendsTheAddsThePeerLacks() throws {
    var onAlice = ORSet<String>()
    _ = try add("x", to: &onAlice, by: alice)
    var onBob = onAlice
    _ = try add("y", to: &onAlice, by: alice)
    let delta = onAlice.delta(since: onBob.context)
    #expect(delta.elements == ["y"])
    onBob.merge(delta)
    #expect(onBob == onAlice)
  }

  @Test func anAddWithADotAlreadySeenIsIgnored() throws {
    var set = ORSet<String>()
    let dot = Dot(replica: alice, counter: 1)
    set.insert("x", dot: dot)
    set.remove("x", dot: Dot(replica: alice, counter: 2))
    let delta = set.insert("y", dot: dot)
    #expect(delta == ORSet())
    #expect(set.isEmpty)
    // A remove with a dot already seen is ignored too.
    set.insert("z", dot: Dot(replica: alice, counter: 3))
    #expect(set.remove("z", dot: dot) == ORSet())
    #expect(set.elements == ["z"])
  }

  @Test func exhaustedCounterSpaceNeverTraps() throws {
    var set = ORSet<String>()
    let last = Dot(replica: alice, counter: .max)
    let delta = set.insert("x", dot: last)
    #expect(delta.contains("x"))
    #expect(set.insert("y", replica: alice) == nil)
    #expect(set.remove("x", replica: alice) == nil)
    #expect(set.elements == ["x"])
    // Another replica can still add, and merges of extreme dots are fine.
    var other = ORSet<String>()
    _ = try add("y", to: &other, by: bob)
    other.merge(set)
    _ = try remove("x", from: &other, by: bob)
    set.merge(other)
    #expect(set.elements == ["y"])
    #expect(set.context.contains(last))
  }

  @Test func twoReplicaExampleFromTheDocumentation() throws {
    let phone = ReplicaID(rawValue: 1)
    let laptop = ReplicaID(rawValue: 2)
    var onPhone = ORSet<String>()
    _ = try add("work", to: &onPhone, by: phone)
    var onLaptop = onPhone
    let removal = try remove("work", from: &onPhone, by: phone)
    let readd = try add("work", to: &onLaptop, by: laptop)
    let urgent = try add("urgent", to: &onLaptop, by: laptop)
    onPhone.merge(readd.merging(urgent))
    onLaptop.merge(removal)
    #expect(onPhone == onLaptop)
    #expect(onPhone.elements == ["work", "urgent"])
  }

  @Test func aSnapshotNeverChangesWhenACopyEdits() throws {
    var set = ORSet<String>()
    _ = try add("x", to: &set, by: alice)
    let snapshot = set
    var copy = set
    _ = try add("y", to: &copy, by: bob)
    _ = try remove("x", from: &copy, by: bob)
    #expect(snapshot.elements == ["x"])
    #expect(set == snapshot)
  }
}

/// Adds `element` as an event of `replica`, failing the test if the counter space is
/// exhausted.
func add<Element>(
  _ element: Element, to set: inout ORSet<Element>, by replica: ReplicaID,
  sourceLocation: SourceLocation = #_sourceLocation
) throws -> ORSet<Element> {
  try requireDelta(set.insert(element, replica: replica), sourceLocation: sourceLocation)
}

/// Removes `element` as an event of `replica`, failing the test if the counter space is
/// exhausted.
func remove<Element>(
  _ element: Element, from set: inout ORSet<Element>, by replica: ReplicaID,
  sourceLocation: SourceLocation = #_sourceLocation
) throws -> ORSet<Element> {
  try requireDelta(set.remove(element, replica: replica), sourceLocation: sourceLocation)
}

/// The delta of an edit, failing the test if the edit found the counter space exhausted.
private func requireDelta<Element>(
  _ delta: ORSet<Element>?, sourceLocation: SourceLocation
) throws -> ORSet<Element> {
  try #require(delta, sourceLocation: sourceLocation)
}
