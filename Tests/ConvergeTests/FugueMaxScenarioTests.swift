import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The scenarios through the public `SharedText` API: concurrent passages stay whole,
/// each merge equals the reference FugueMax's, in every delivery order, and the converged
/// texts pass the non-interleaving checker.
@Suite struct FugueMaxScenarioTests {
  static func replica(_ raw: Int) -> ReplicaID { ReplicaID(rawValue: UInt64(raw)) }

  /// Types `text` at `position` one scalar per edit, forward (the cursor advances) or
  /// backward (it stays), on a `SharedText` and on a reference replica alike.
  static func type(
    _ text: String, at position: Int, forward: Bool, on replica: inout SharedText,
    _ reference: inout FugueMaxReference
  ) -> (deltas: [RGADelta], operations: [FugueMaxReference.Operation]) {
    var deltas: [RGADelta] = []
    var operations: [FugueMaxReference.Operation] = []
    for (offset, character) in text.enumerated() {
      let at = forward ? position + offset : position
      deltas.append(replica.insert(String(character), at: at))
      operations.append(reference.insert(character, at: at))
    }
    return (deltas, operations)
  }

  /// Delivers every delta to every replica (its own again, harmlessly), each replica in
  /// its own shuffled order, and every operation to every reference replica once ready.
  static func mergeAll(
    _ texts: inout [SharedText], _ references: inout [FugueMaxReference], deltas: [RGADelta],
    operations: [FugueMaxReference.Operation], using random: inout SeededGenerator
  ) throws {
    for index in texts.indices {
      var shuffled = deltas
      shuffled.shuffle(using: &random)
      for delta in shuffled { texts[index].apply(delta) }
      var waiting = operations.filter {
        if case .insert(let id, _, _, _, _) = $0 { return !references[index].contains(id) }
        return true
      }
      while let ready = waiting.firstIndex(where: references[index].canApply) {
        references[index].apply(waiting.remove(at: ready))
      }
    }
    for index in texts.indices {
      #expect(texts[index].string == texts[0].string, "replica \(index) diverged")
      #expect(texts[index].string == references[index].string)
      #expect(texts[index].rga.pendingCount == 0)
      try checkNonInterleaving(texts[index].rga.originRecords)
    }
  }

  @Test(arguments: 2...4)
  func passagesAtOnePlaceStayWhole(replicaCount: Int) throws {
    try forEachSeed(count: 40, base: 0xF0_6E_30 + UInt64(replicaCount)) { random in
      var texts = (1...replicaCount).map { SharedText(replica: Self.replica($0)) }
      var references = (1...replicaCount).map { FugueMaxReference(replica: $0) }
      var author = SharedText(replica: Self.replica(100))
      var authorReference = FugueMaxReference(replica: 100)
      let base = Self.type("0123", at: 0, forward: true, on: &author, &authorReference)
      for index in texts.indices {
        for delta in base.deltas { texts[index].apply(delta) }
        for operation in base.operations { references[index].apply(operation) }
      }
      let position = Int.random(in: 0...4, using: &random)
      var deltas: [RGADelta] = []
      var operations: [FugueMaxReference.Operation] = []
      var passages: [String] = []
      for index in texts.indices {
        let letters = Array("abcdefghijklmnopqrstuvwx")[(index * 6)..<(index * 6 + 6)]
        let passage = String(letters.prefix(Int.random(in: 2...6, using: &random)))
        let forward = Bool.random(using: &random)
        passages.append(forward ? passage : String(passage.reversed()))
        let typed = Self.type(
          passage, at: position, forward: forward, on: &texts[index], &references[index])
        deltas += typed.deltas
        operations += typed.operations
      }
      try Self.mergeAll(
        &texts, &references, deltas: deltas, operations: operations, using: &random)
      for passage in passages {
        #expect(texts[0].string.contains(passage), "\(passage) split in \(texts[0].string)")
      }
    }
  }

  @Test func prependedPassagesDoNotInterleave() throws {
    var random = SeededGenerator(seed: 0xF0_6E_31)
    var texts = [SharedText(replica: Self.replica(1)), SharedText(replica: Self.replica(2))]
    var references = [FugueMaxReference(replica: 1), FugueMaxReference(replica: 2)]
    let first = Self.type("1234", at: 0, forward: false, on: &texts[0], &references[0])
    let second = Self.type("6789", at: 0, forward: false, on: &texts[1], &references[1])
    try Self.mergeAll(
      &texts, &references, deltas: first.deltas + second.deltas,
      operations: first.operations + second.operations, using: &random)
    #expect(texts[0].string == "43219876")
  }

  @Test func aWordAndTheSpaceBeforeItStayTogether() throws {
    var random = SeededGenerator(seed: 0xF0_6E_32)
    var texts = [SharedText(replica: Self.replica(1)), SharedText(replica: Self.replica(2))]
    var references = [FugueMaxReference(replica: 1), FugueMaxReference(replica: 2)]
    var author = SharedText(replica: Self.replica(9))
    var authorReference = FugueMaxReference(replica: 9)
    let base = Self.type("ab", at: 0, forward: true, on: &author, &authorReference)
    for index in texts.indices {
      for delta in base.deltas { texts[index].apply(delta) }
      for operation in base.operations { references[index].apply(operation) }
    }
    var deltas: [RGADelta] = []
    var operations: [FugueMaxReference.Operation] = []
    for (index, word) in ["milk", "eggs"].enumerated() {
      let typed = Self.type(word, at: 1, forward: true, on: &texts[index], &references[index])
      let space = Self.type(" ", at: 1, forward: true, on: &texts[index], &references[index])
      deltas += typed.deltas + space.deltas
      operations += typed.operations + space.operations
    }
    try Self.mergeAll(
      &texts, &references, deltas: deltas, operations: operations, using: &random)
    #expect(texts[0].string == "a milk eggsb")
  }

  /// The Fugue paper's case against Yjs: replica 3 types b, replica 1 types a before it,
  /// replica 2 concurrently types x into the empty text; never `axb`.
  @Test(arguments: [(1, 2, 3), (2, 1, 3), (3, 2, 1), (1, 3, 2), (2, 3, 1), (3, 1, 2)])
  func yjsCaseNeverSplitsABackwardPassage(ids: (Int, Int, Int)) throws {
    var random = SeededGenerator(seed: 0xF0_6E_33)
    var texts = [ids.0, ids.1, ids.2].map { SharedText(replica: Self.replica($0)) }
    var references = [ids.0, ids.1, ids.2].map { FugueMaxReference(replica: $0) }
    let b = Self.type("b", at: 0, forward: true, on: &texts[2], &references[2])
    for delta in b.deltas { texts[0].apply(delta) }
    for operation in b.operations { references[0].apply(operation) }
    let a = Self.type("a", at: 0, forward: true, on: &texts[0], &references[0])
    let x = Self.type("x", at: 0, forward: true, on: &texts[1], &references[1])
    try Self.mergeAll(
      &texts, &references, deltas: b.deltas + a.deltas + x.deltas,
      operations: b.operations + a.operations + x.operations, using: &random)
    #expect(texts[0].string != "axb")
  }

  /// Deletes inside passages typed concurrently: by the author before the merge and by
  /// the other replica after seeing part of it.
  @Test func deletesInsideAConcurrentPassage() throws {
    var random = SeededGenerator(seed: 0xF0_6E_34)
    var texts = [SharedText(replica: Self.replica(1)), SharedText(replica: Self.replica(2))]
    var references = [FugueMaxReference(replica: 1), FugueMaxReference(replica: 2)]
    let hello = Self.type("hello", at: 0, forward: true, on: &texts[0], &references[0])
    let world = Self.type("world", at: 0, forward: false, on: &texts[1], &references[1])
    var deltas = hello.deltas + world.deltas
    var operations = hello.operations + world.operations
    // Replica 1 deletes "ll" of its own passage; replica 2 sees "hel" and deletes "e".
    deltas.append(texts[0].delete(2..<4))
    operations += [references[0].delete(at: 2), references[0].delete(at: 2)]
    for delta in hello.deltas.prefix(3) { texts[1].apply(delta) }
    for operation in hello.operations.prefix(3) { references[1].apply(operation) }
    let at = Array(texts[1].string).firstIndex(of: "e") ?? 0
    deltas.append(texts[1].delete(at..<at + 1))
    operations.append(references[1].delete(at: at))
    try Self.mergeAll(
      &texts, &references, deltas: deltas, operations: operations, using: &random)
    // "world" typed backward reads "dlrow".
    #expect(["hodlrow", "dlrowho"].contains(texts[0].string), "\(texts[0].string)")
  }

  /// y-crdt/y-octo#53: an insert whose right origin is a tombstone. Origins count
  /// tombstones, so "X" typed between "a" and "c" after "b" was deleted names "b", and
  /// every replica places it and a concurrent "Y" typed after "b" alike.
  @Test func aRightOriginThatIsATombstone() throws {
    try forEachSeed(count: 20, base: 0xF0_6E_35) { random in
      var texts = [SharedText(replica: Self.replica(1)), SharedText(replica: Self.replica(2))]
      var references = [FugueMaxReference(replica: 1), FugueMaxReference(replica: 2)]
      let abc = Self.type("abc", at: 0, forward: true, on: &texts[0], &references[0])
      for delta in abc.deltas { texts[1].apply(delta) }
      for operation in abc.operations { references[1].apply(operation) }
      let deleteB = texts[0].delete(1..<2)
      let deleteOperation = references[0].delete(at: 1)
      let x = Self.type("X", at: 1, forward: true, on: &texts[0], &references[0])
      let bID = Dot(replica: Self.replica(1), counter: 2)
      #expect(x.deltas.first?.inserts.first?.rightOrigin == bID)
      let y = Self.type("Y", at: 2, forward: true, on: &texts[1], &references[1])
      try Self.mergeAll(
        &texts, &references, deltas: abc.deltas + [deleteB] + x.deltas + y.deltas,
        operations: abc.operations + [deleteOperation] + x.operations + y.operations,
        using: &random)
    }
  }
}
