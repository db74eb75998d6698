import ConvergeTestSupport
import Testing

/// The reference FugueMax and the non-interleaving checker: the checker catches hand-made
/// interleavings, and the reference passes it on the issue's scenarios and on random
/// histories, merging exactly as the origins-only (YjsMod) integration does.
@Suite struct FugueMaxReferenceTests {
  typealias ID = FugueMaxReference.ID
  typealias Record = OriginRecord<ID>

  static func id(_ replica: Int, _ counter: Int) -> ID { ID(replica: replica, counter: counter) }

  @Test func checkerCatchesForwardInterleaving() {
    // p, then "ab" typed after p by replica 2 and "xy" by replica 3, merged as p a x b y.
    let p = Self.id(1, 1)
    let (a, b, x, y) = (Self.id(2, 1), Self.id(2, 2), Self.id(3, 1), Self.id(3, 2))
    let list = [
      Record(id: p, leftOrigin: nil, rightOrigin: nil),
      Record(id: a, leftOrigin: p, rightOrigin: nil),
      Record(id: x, leftOrigin: p, rightOrigin: nil),
      Record(id: b, leftOrigin: a, rightOrigin: nil),
      Record(id: y, leftOrigin: x, rightOrigin: nil),
    ]
    #expect(throws: InterleavingViolation<ID>.self) { try checkNonInterleaving(list) }
    do {
      try checkNonInterleaving(list)
    } catch {
      #expect(error.kind == .forward)
      #expect(error.element == b && error.intruder == x)
    }
    let blocks = [list[0], list[1], list[3], list[2], list[4]]
    #expect(throws: Never.self) { try checkNonInterleaving(blocks) }
  }

  @Test func checkerCatchesBackwardInterleaving() {
    // Replica 2 prepends "12" (typing 2 then 1 before it), replica 3 prepends "67" the same
    // way, before a shared q; merged as 1 6 2 7 q.
    let q = Self.id(1, 1)
    let (two, one, seven, six) = (Self.id(2, 1), Self.id(2, 2), Self.id(3, 1), Self.id(3, 2))
    let list = [
      Record(id: one, leftOrigin: nil, rightOrigin: two),
      Record(id: six, leftOrigin: nil, rightOrigin: seven),
      Record(id: two, leftOrigin: nil, rightOrigin: q),
      Record(id: seven, leftOrigin: nil, rightOrigin: q),
      Record(id: q, leftOrigin: nil, rightOrigin: nil),
    ]
    do {
      try checkNonInterleaving(list)
      Issue.record("1 6 2 7 passed the checker")
    } catch {
      #expect(error.kind == .backward)
      #expect(error.element == one && error.anchor == two)
    }
    let blocks = [list[0], list[2], list[1], list[3], list[4]]
    #expect(throws: Never.self) { try checkNonInterleaving(blocks) }
  }

  @Test func checkerCatchesTiesOutOfIdOrder() {
    let (a, b) = (Self.id(2, 1), Self.id(3, 1))
    let list = [
      Record(id: b, leftOrigin: nil, rightOrigin: nil),
      Record(id: a, leftOrigin: nil, rightOrigin: nil),
    ]
    do {
      try checkNonInterleaving(list)
      Issue.record("a tie out of id order passed the checker")
    } catch {
      #expect(error.kind == .tie)
    }
  }

  @Test func checkerCatchesAnUnknownOrigin() {
    let list = [Record(id: Self.id(1, 1), leftOrigin: Self.id(9, 9), rightOrigin: nil)]
    do {
      try checkNonInterleaving(list)
      Issue.record("an unknown origin passed the checker")
    } catch {
      #expect(error.kind == .unknownElement)
    }
  }

  @Test func checkerCatchesAReorderingOverTime() {
    let (a, b, c) = (Self.id(1, 1), Self.id(1, 2), Self.id(2, 1))
    #expect(throws: Never.self) {
      try checkStrongListOrder(observations: [[a, b], [a, c], [c, b]], final: [a, c, b])
    }
    do {
      try checkStrongListOrder(observations: [[a, b], [b, a]], final: [a, b])
      Issue.record("a swap passed the strong list check")
    } catch {
      #expect(error.kind == .strongList)
    }
  }

  /// Types `text` at `position` on `replica`, forward (cursor advances) or backward (cursor
  /// stays, each character typed before the previous one).
  static func type(
    _ text: String, at position: Int, forward: Bool, on replica: inout FugueMaxReference
  ) -> [FugueMaxReference.Operation] {
    let characters = forward ? Array(text) : Array(text.reversed())
    return characters.enumerated().map { offset, character in
      replica.insert(character, at: forward ? position + offset : position)
    }
  }

  static func merge(
    _ replicas: inout [FugueMaxReference], _ operations: [FugueMaxReference.Operation]
  ) {
    for index in replicas.indices {
      for operation in operations where replicas[index].canApply(operation) {
        replicas[index].apply(operation)
      }
    }
  }

  @Test func prependedPassagesStayWhole() throws {
    var replicas = [FugueMaxReference(replica: 1), FugueMaxReference(replica: 2)]
    let first = Self.type("1234", at: 0, forward: false, on: &replicas[0])
    let second = Self.type("6789", at: 0, forward: false, on: &replicas[1])
    Self.merge(&replicas, first + second)
    #expect(replicas[0].string == replicas[1].string)
    #expect(["12346789", "67891234"].contains(replicas[0].string), "\(replicas[0].string)")
    try checkNonInterleaving(Self.records(replicas[0]))
  }

  @Test func wordThenSpaceStaysWithItsWord() throws {
    var base = FugueMaxReference(replica: 9)
    let ab = Self.type("ab", at: 0, forward: true, on: &base)
    var replicas = [FugueMaxReference(replica: 1), FugueMaxReference(replica: 2)]
    Self.merge(&replicas, ab)
    let milk =
      Self.type("milk", at: 1, forward: true, on: &replicas[0]) + [replicas[0].insert(" ", at: 1)]
    let eggs =
      Self.type("eggs", at: 1, forward: true, on: &replicas[1]) + [replicas[1].insert(" ", at: 1)]
    Self.merge(&replicas, milk + eggs)
    #expect(replicas[0].string == replicas[1].string)
    #expect(["a milk eggsb", "a eggs milkb"].contains(replicas[0].string), "\(replicas[0].string)")
    try checkNonInterleaving(Self.records(replicas[0]))
  }

  /// The Fugue paper's case against Yjs: replica 3 types b, replica 1 types a before it,
  /// replica 2 concurrently types x into the empty document. Yjs can give `axb`.
  @Test(arguments: [(1, 2, 3), (2, 1, 3), (3, 2, 1), (1, 3, 2), (2, 3, 1), (3, 1, 2)])
  func yjsCaseNeverSplitsABackwardPassage(ids: (Int, Int, Int)) throws {
    var replicas = [
      FugueMaxReference(replica: ids.0), FugueMaxReference(replica: ids.1),
      FugueMaxReference(replica: ids.2),
    ]
    let b = replicas[2].insert("b", at: 0)
    replicas[0].apply(b)
    let a = replicas[0].insert("a", at: 0)
    let x = replicas[1].insert("x", at: 0)
    Self.merge(&replicas, [b, a, x])
    #expect(Set(replicas.map(\.string)).count == 1)
    #expect(replicas[0].string != "axb")
    try checkNonInterleaving(Self.records(replicas[0]))
  }

  static func records(_ replica: FugueMaxReference) -> [Record] {
    replica.elements.map {
      Record(id: $0.id, leftOrigin: $0.leftOrigin, rightOrigin: $0.rightOrigin)
    }
  }

  /// Random histories: replicas converge, the checker and the strong list specification hold,
  /// and integrating from origins alone (YjsMod), in a shuffled causal order, gives the same
  /// list as the tree.
  @Test func randomHistoriesAreNonInterleavingAndMatchOriginIntegration() throws {
    try forEachSeed(count: 300, base: 0xF06E) { random in
      let history = FugueMaxHistory.random(
        replicaCount: Int.random(in: 2...4, using: &random),
        steps: Int.random(in: 10...80, using: &random),
        using: &random)
      let final = history.replicas[0].elements
      for replica in history.replicas {
        try expectEqual(replica.elements, final, "replica \(replica.replica) diverged")
      }
      do {
        try checkNonInterleaving(history.originRecords)
      } catch {
        let dump = final.map {
          "\($0.id)\($0.value)\($0.isDeleted ? "~" : "") L\($0.leftOrigin.map { "\($0)" } ?? "-")"
            + " R\($0.rightOrigin.map { "\($0)" } ?? "-")"
        }
        throw ReferenceMismatch(description: "\(error)\n" + dump.joined(separator: "\n"))
      }
      try checkStrongListOrder(observations: history.observations, final: final.map(\.id))
      var list: [FugueMaxReference.Element] = []
      var waiting = history.operations.compactMap { operation -> FugueMaxReference.Element? in
        guard case .insert(let id, let value, let left, let right, _) = operation else {
          return nil
        }
        return .init(id: id, value: value, leftOrigin: left, rightOrigin: right, isDeleted: false)
      }
      waiting.shuffle(using: &random)
      while !waiting.isEmpty {
        let ready = waiting.firstIndex { element in
          [element.leftOrigin, element.rightOrigin].allSatisfy { origin in
            origin.map { id in list.contains { $0.id == id } } ?? true
          }
        }
        guard let ready else { throw ReferenceMismatch(description: "no insert is ready") }
        let element = waiting.remove(at: ready)
        list.insert(element, at: FugueMaxReference.integrationIndex(of: element, in: list))
      }
      try expectEqual(list.map(\.id), final.map(\.id), "origin integration differs from the tree")
    }
  }

  struct ReferenceMismatch: Error, CustomStringConvertible { var description: String }

  func expectEqual<T: Equatable>(_ a: T, _ b: T, _ message: String) throws {
    guard a == b else { throw ReferenceMismatch(description: "\(message): \(a) vs \(b)") }
  }
}
