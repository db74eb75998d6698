import Converge
import Testing

/// Deltas from another device are untrusted: buffering and draining must stay fast
/// however many runs wait for missing origins or delete targets.
@Suite struct RGAPendingBufferTests {
  /// 20,000 insert runs whose origins are missing, plus 20,000 deletes of them, then the
  /// origins one by one in reverse order. A buffer rescanned on every arrival takes
  /// minutes here in a debug build; an indexed one well under a second.
  @Test func manyRunsWaitingForMissingOriginsDrainQuickly() {
    let count = 20_000
    let a = ReplicaID(rawValue: 0xA)
    let b = ReplicaID(rawValue: 0xB)
    let c = ReplicaID(rawValue: 0xC)
    let scalarA: Unicode.Scalar = "a"
    let scalarB: Unicode.Scalar = "b"
    // Run i of replica a has id a@(2i + 1); later arrivals get larger Lamport numbers.
    func origin(_ i: Int) -> RGADelta.Insert {
      RGADelta.Insert(
        id: Dot(replica: a, counter: UInt64(2 * i + 1)), lamport: UInt64(count - i),
        origin: nil, rightOrigin: nil, scalars: [scalarA])
    }
    var waiting: [RGADelta.Insert] = []
    var deletes: [RGADelta.Delete] = []
    for i in 0..<count {
      waiting.append(
        RGADelta.Insert(
          id: Dot(replica: b, counter: UInt64(2 * i + 1)), lamport: UInt64(count + 1),
          origin: Dot(replica: a, counter: UInt64(2 * i + 1)), rightOrigin: nil, scalars: [scalarB])
      )
      deletes.append(
        RGADelta.Delete(
          dot: Dot(replica: c, counter: UInt64(2 * i + 1)),
          target: Dot(replica: b, counter: UInt64(2 * i + 1)), count: 1, isDescending: false))
    }
    let hostile = RGADelta(inserts: waiting, deletes: deletes)
    var reader = RGA()
    #expect(reader.apply(hostile).isEmpty)
    #expect(reader.pendingCount == 2 * count && reader.count == 0)
    for i in (0..<count).reversed() {
      reader.apply(RGADelta(inserts: [origin(i)], deletes: []))
    }
    #expect(reader.pendingCount == 0)
    #expect(reader.count == count)
    #expect(reader.scalars.allSatisfy { $0 == scalarA })

    var inOrder = RGA()
    inOrder.apply(RGADelta(inserts: (0..<count).map(origin), deletes: []))
    inOrder.apply(hostile)
    #expect(Bool(reader == inOrder))
    #expect(reader.delta(since: CausalContext()) == inOrder.delta(since: CausalContext()))
    reader._checkInvariants()
  }

  /// Inserts that wait for each other in a chain are woken one after another.
  @Test func chainOfWaitingInsertsDrainsWhenItsRootArrives() {
    let count = 5_000
    let a = ReplicaID(rawValue: 7)
    var runs: [RGADelta.Insert] = []
    for i in 0..<count {
      // Run i follows the last id of run i - 1; the ids leave gaps so nothing joins.
      runs.append(
        RGADelta.Insert(
          id: Dot(replica: a, counter: UInt64(3 * i + 1)), lamport: UInt64(i + 1),
          origin: i == 0 ? nil : Dot(replica: a, counter: UInt64(3 * i - 2)), rightOrigin: nil,
          scalars: ["x"]))
    }
    var reader = RGA()
    reader.apply(RGADelta(inserts: Array(runs.dropFirst()), deletes: []))
    #expect(reader.pendingCount == count - 1)
    reader.apply(RGADelta(inserts: [runs[0]], deletes: []))
    #expect(reader.pendingCount == 0 && reader.count == count)
    var inOrder = RGA()
    inOrder.apply(RGADelta(inserts: runs, deletes: []))
    #expect(Bool(reader == inOrder))
    reader._checkInvariants()
  }
}
