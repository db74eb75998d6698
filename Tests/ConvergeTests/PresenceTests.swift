import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// `Presence` holds a single add inline and anything else as two vectors: it must behave
/// exactly as the two vectors it stands for, whichever form each side is in.
@Suite struct PresenceTests {
  /// The model: the two version vectors of the observed-remove presence.
  struct Model: Equatable {
    var added = VersionVector()
    var removed = VersionVector()

    var isPresent: Bool {
      added.entries.contains { $0.counter > removed[$0.replica] }
    }
  }

  static let replicas = (1...3).map { ReplicaID(rawValue: $0) }

  /// A presence and its model, after a few random adds, removes and merges.
  static func random(using random: inout SeededGenerator) -> (Presence, Model) {
    var presence = Presence()
    var model = Model()
    for _ in 0..<Int.random(in: 0...4, using: &random) {
      let dot = Dot(
        replica: replicas.randomElement(using: &random) ?? replicas[0],
        counter: UInt64.random(in: 1...6, using: &random))
      switch Int.random(in: 0..<3, using: &random) {
      case 0:
        presence.mergeAdd(dot)
        model.added.advance(to: dot)
      case 1:
        presence.merge(.add(dot))
        model.added.advance(to: dot)
      default:
        let removal = Presence.remove(observing: presence, dot: dot)
        var removed = model.added
        removed.advance(to: dot)
        presence.merge(removal)
        model.added.advance(to: dot)
        model.removed.merge(removed)
      }
    }
    return (presence, model)
  }

  static func expectMatches(_ presence: Presence, _ model: Model) {
    #expect(presence.added == model.added)
    #expect(presence.removed == model.removed)
    #expect(presence.isPresent == model.isPresent)
    #expect(presence.hasAdds == !model.added.isEmpty)
    for replica in replicas {
      #expect(presence.addedCounter(of: replica) == model.added[replica])
    }
    // Inline exactly when it is at most one add and no remove.
    let single = model.removed.isEmpty && model.added.count == 1
    #expect((presence.onlyAdd != nil) == single)
    var latest: [ReplicaID: UInt64] = [:]
    presence.forEachLatest { latest[$0] = $1 }
    var expected: [ReplicaID: UInt64] = [:]
    for replica in replicas where model.added[replica] > 0 || model.removed[replica] > 0 {
      expected[replica] = max(model.added[replica], model.removed[replica])
    }
    #expect(latest == expected)
  }

  @Test func behavesAsItsTwoVectors() throws {
    try forEachSeed(count: 500, base: 0x9E5E) { random in
      var (a, modelA) = Self.random(using: &random)
      let (b, modelB) = Self.random(using: &random)
      Self.expectMatches(a, modelA)
      Self.expectMatches(b, modelB)
      #expect((a == b) == (modelA == modelB))
      // Built from its vectors, a presence takes the same form.
      #expect(Presence(added: modelA.added, removed: modelA.removed) == a)
      for prefix in [VersionVector(), modelB.added, modelA.added.merging(modelA.removed)] {
        #expect(
          a.mayHaveEvents(unknownTo: prefix)
            == (!prefix.dominates(modelA.added) || !prefix.dominates(modelA.removed)))
      }
      let (copy, modelCopy) = (a, modelA)
      a.merge(b)
      modelA.added.merge(modelB.added)
      modelA.removed.merge(modelB.removed)
      Self.expectMatches(a, modelA)
      #expect(a == b.merging(copy))
      // The merge changed `a` only: a copy sharing its vectors still holds what `a` held.
      Self.expectMatches(copy, modelCopy)
    }
  }

  @Test func roundTripsThroughTheWire() throws {
    try forEachSeed(count: 200, base: 0x9E5F) { random in
      let (presence, _) = Self.random(using: &random)
      var builder = ReplicaTable.Builder()
      presence.collectReplicas(into: &builder)
      let table = builder.build()
      var writer = ByteWriter()
      presence.write(to: &writer, replicas: table)
      // The same bytes as its two vectors written one after the other.
      var vectors = ByteWriter()
      presence.added.write(to: &vectors, replicas: table)
      presence.removed.write(to: &vectors, replicas: table)
      #expect(writer.bytes == vectors.bytes)
      var tableWriter = ByteWriter()
      table.write(to: &tableWriter)
      var reader = ByteReader(tableWriter.bytes + writer.bytes)
      var decoded = try DecodedReplicaTable(from: &reader)
      #expect(try Presence(from: &reader, replicas: &decoded) == presence)
      #expect(reader.remainingCount == 0)
    }
  }
}
