import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCRDTs
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The algebraic laws, on states drawn from random multi-replica histories. Every test
/// runs `cases` seeds (times `CONVERGE_FUZZ_ITERATIONS`); a failure prints its seed.
@Suite struct LawTests {
  static let cases = 1_000

  static func smallValue(_ random: inout SeededGenerator) -> UInt8 {
    .random(in: 0..<4, using: &random)
  }

  /// Three states of one network, chosen at random (repeats allowed).
  static func pickThree<State>(
    _ network: ReplicaNetwork<State>, using random: inout SeededGenerator
  ) -> (State, State, State) {
    let states = network.replicas.map(\.state)
    func pick() -> State { states[Int.random(in: states.indices, using: &random)] }
    return (pick(), pick(), pick())
  }

  // MARK: LWWRegister

  @Test func lwwRegisterMergeIsAJoin() throws {
    try forEachSeed(count: Self.cases, base: 0x1_0000) { random in
      let network = LWWRegister.randomNetwork(using: &random, content: Self.smallValue)
      let (a, b, c) = Self.pickThree(network, using: &random)
      try checkJoinLaws(a, b, c)
    }
  }

  @Test func lwwRegisterDeltasDecompose() throws {
    try forEachSeed(count: Self.cases, base: 0x2_0000) { random in
      let network = LWWRegister.randomNetwork(using: &random, content: Self.smallValue)
      let (writer, other) = network.randomPair(using: &random)
      try checkDeltaLaws(
        from: network.replicas[writer], concurrent: network.replicas[other].state,
        steps: .random(in: 1...5, using: &random), using: &random
      ) { replica, random in
        LWWRegister.randomMutation(by: &replica, using: &random, content: Self.smallValue)
      }
    }
  }

  @Test func lwwRegisterDeltaSinceIsWhatThePeerLacks() throws {
    try forEachSeed(count: Self.cases, base: 0x3_0000) { random in
      let network = LWWRegister.randomNetwork(using: &random, content: Self.smallValue)
      let (receiver, sender) = network.randomPair(using: &random)
      try checkDeltaSyncLaw(
        receiver: network.replicas[receiver].state, sender: network.replicas[sender].state
      ) { sender, receiver in
        // The receiver has seen its own winning write.
        sender.delta(since: CausalContext(dots: [receiver.stamp?.dot].compactMap { $0 }))
      }
    }
  }

  // MARK: VersionVector

  @Test func versionVectorMergeIsAJoin() throws {
    try forEachSeed(count: Self.cases, base: 0xB_0000) { random in
      func vector() -> VersionVector {
        var counters: [ReplicaID: UInt64] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &random) {
          counters[ReplicaID(rawValue: .random(in: 1...4, using: &random))] = .random(
            in: 0...6, using: &random)
        }
        return VersionVector(counters)
      }
      let (a, b, c) = (vector(), vector(), vector())
      try checkJoinLaws(a, b, c, seed: random.seed)
      #expect(a.merging(b).dominates(a) && a.merging(b).dominates(b), "seed \(random.seed)")
    }
  }

  // MARK: ORSet

  @Test func orSetMergeIsAJoin() throws {
    try forEachSeed(count: Self.cases, base: 0x4_0000) { random in
      let network = ORSet.randomNetwork(using: &random, content: Self.smallValue)
      let (a, b, c) = Self.pickThree(network, using: &random)
      try checkJoinLaws(a, b, c)
    }
  }

  @Test func orSetDeltasDecompose() throws {
    try forEachSeed(count: Self.cases, base: 0x5_0000) { random in
      let network = ORSet.randomNetwork(using: &random, content: Self.smallValue)
      let (mutator, other) = network.randomPair(using: &random)
      try checkDeltaLaws(
        from: network.replicas[mutator], concurrent: network.replicas[other].state,
        steps: .random(in: 1...5, using: &random), using: &random
      ) { replica, random in
        ORSet.randomMutation(by: &replica, using: &random, content: Self.smallValue)
      }
    }
  }

  @Test func orSetDeltaSinceIsWhatThePeerLacks() throws {
    try forEachSeed(count: Self.cases, base: 0x6_0000) { random in
      let network = ORSet.randomNetwork(using: &random, content: Self.smallValue)
      let (receiver, sender) = network.randomPair(using: &random)
      let receiverState = network.replicas[receiver].state
      let senderState = network.replicas[sender].state
      // Against the peer's exact context, and against its version vector, which
      // understates what it knows when it has gaps.
      try checkDeltaSyncLaw(receiver: receiverState, sender: senderState) { sender, receiver in
        sender.delta(since: receiver.context)
      }
      try checkDeltaSyncLaw(receiver: receiverState, sender: senderState) { sender, receiver in
        sender.delta(since: CausalContext(receiver.context.versionVector))
      }
      // The delta holds no element whose events the peer holds already: every one has an
      // add or a remove above the peer's gap-free prefix (removes are events too).
      let delta = senderState.delta(since: receiverState.context)
      let prefix = receiverState.context.versionVector
      for (element, presence) in delta.store {
        try ensure(
          presence.mayHaveEvents(unknownTo: prefix),
          "delta resends \(element), whose events the peer has")
      }
    }
  }

  @Test func orSetStatesStayCanonical() throws {
    try forEachSeed(count: Self.cases, base: 0x7_0000) { random in
      let network = ORSet.randomNetwork(using: &random, content: Self.smallValue)
      for replica in network.replicas {
        for (element, presence) in replica.state.store {
          try ensure(presence.hasAdds, "\(element) never added in \(replica.state)")
          try ensure(
            replica.state.dots(of: element).allSatisfy { replica.state.context.contains($0) },
            "live dot of \(element) missing from the context in \(replica.state)")
        }
      }
    }
  }

  // MARK: The checkers can fail

  /// A register whose merge lets the last merged write win: not commutative.
  struct LastMergedWins: Mergeable, Equatable, CustomStringConvertible {
    var register: LWWRegister<UInt8>

    mutating func merge(_ other: LastMergedWins) {
      guard let stamp = other.register.stamp, let value = other.register.value else { return }
      var replaced = LWWRegister<UInt8>()
      replaced.set(value, stamp: stamp)
      register = replaced
    }

    var description: String { register.description }
  }

  @Test func joinLawCheckerCatchesALastMergedWinsRegister() {
    let violation = #expect(throws: LawViolation.self) {
      try forEachSeed(count: 200, base: 0x8_0000) { random in
        let network = LWWRegister.randomNetwork(using: &random, content: Self.smallValue)
        let (a, b, c) = Self.pickThree(network, using: &random)
        try checkJoinLaws(LastMergedWins(register: a), .init(register: b), .init(register: c))
      }
    }
    #expect(violation?.law.contains("commutative") == true)
    #expect(violation?.seed != nil)
    #expect(violation?.description.contains("CONVERGE_SEED=") == true)
  }

  /// The mistake the add-wins design avoids: a merge that keeps the other side's adds and
  /// drops its removes, so removed elements come back from any replica that removed them.
  static func droppingTheirRemoves(_ left: ORSet<UInt8>, _ right: ORSet<UInt8>) -> ORSet<UInt8> {
    var store = left.store
    for (element, presence) in right.store {
      store.merge(Presence(added: presence.added), for: element)
    }
    return ORSet(store: store, context: left.context.union(right.context))
  }

  /// A remove-wins merge: an element survives only if both sides hold it.
  static func intersection(_ left: ORSet<UInt8>, _ right: ORSet<UInt8>) -> ORSet<UInt8> {
    var store = ORSetStore<UInt8>()
    for (element, presence) in left.store {
      if let theirs = right.store[element] {
        store.merge(presence.merging(theirs), for: element)
      }
    }
    return ORSet(store: store, context: left.context.union(right.context))
  }

  @Test(arguments: ["dropping their removes", "intersection"])
  func deltaLawCheckerCatchesABrokenSetMerge(name: String) {
    let join = name == "intersection" ? Self.intersection : Self.droppingTheirRemoves
    let violation = #expect(throws: LawViolation.self) {
      try forEachSeed(count: 200, base: 0x9_0000) { random in
        let network = ORSet.randomNetwork(using: &random, content: Self.smallValue)
        let (mutator, other) = network.randomPair(using: &random)
        try checkDeltaLaws(
          from: network.replicas[mutator], state: \.state,
          concurrent: network.replicas[other].state, steps: 4, using: &random, join: join,
          equivalent: (==)
        ) { replica, random in
          ORSet.randomMutation(by: &replica, using: &random, content: Self.smallValue)
        }
      }
    }
    #expect(violation?.law.contains("delta") == true)
  }
}
