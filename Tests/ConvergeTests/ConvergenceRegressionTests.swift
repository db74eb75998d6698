import Converge
import Testing

/// Convergence bugs the simulator found, each reduced to a few replicas and deltas.
@Suite struct ConvergenceRegressionTests {
  /// Found by `converge simulate --seed 1044 --replicas 8 --operations 3000 --loss 0.6
  /// --duplicate 0.4 --reorder 0.9 --anti-entropy 50` (mixed workload): replicas with
  /// equal contexts disagreed on whether a task had the tag "urgent".
  ///
  /// A remove's effect on a presence is recorded under the entries of the adds it
  /// observed, and its own dot can be the *non-maximal* event of its replica on that
  /// element (y removes at y:1, then adds again at y:2). A peer that knows every
  /// maximal entry (x:2, y:2, z:1) but not the remove y:1 was sent the context dot y:1
  /// without the presence, and kept the tag for ever.
  @Test func antiEntropyCarriesARemoveDominatedByItsReplicasLaterAdd() {
    let note = EntityKey(type: "note", id: "n")
    let urgent = FieldValue.string("urgent")
    var x = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    var y = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(1_000))
    var z = Replica(id: ReplicaID(rawValue: 3), wallClock: .fixed(1_000))
    var b = Replica(id: ReplicaID(rawValue: 4), wallClock: .fixed(1_000))
    let created = x.transact { $0.create(note) }
    y.apply(created.delta)
    z.apply(created.delta)
    b.apply(created.delta)
    let xAdds = x.transact { $0.insert(urgent, into: "tags", of: note) }  // x:2
    y.apply(xAdds.delta)
    y.transact { $0.remove(urgent, from: "tags", of: note) }  // y:1 observes x:2
    let yAdds = y.transact { $0.insert(urgent, into: "tags", of: note) }  // y:2
    z.apply(yAdds.delta)  // z never sees x:2 nor y:1
    let zRemoves = z.transact { $0.remove(urgent, from: "tags", of: note) }  // z:1 observes y:2
    y.apply(zRemoves.delta)
    #expect(y.document.elements(of: "tags", in: note).isEmpty)
    // b gets everything but y's remove from live pushes, then runs a handshake with y.
    b.apply(xAdds.delta)
    b.apply(yAdds.delta)
    b.apply(zRemoves.delta)
    b.apply(y.delta(since: b.context))
    y.apply(b.delta(since: y.context))
    #expect(b.context == y.context)
    #expect(
      b.document.elements(of: "tags", in: note) == y.document.elements(of: "tags", in: note))
    #expect(b.document == y.document)
  }

  /// The same hole for an entity's presence: a delete dominated by a later edit of its
  /// replica, missed by a peer that knew every entry, left the entity visible there.
  @Test func antiEntropyCarriesADeleteDominatedByItsReplicasLaterEdit() {
    let task = EntityKey(type: "task", id: "t")
    var x = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    var y = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(1_000))
    var z = Replica(id: ReplicaID(rawValue: 3), wallClock: .fixed(1_000))
    var b = Replica(id: ReplicaID(rawValue: 4), wallClock: .fixed(1_000))
    let created = x.transact { $0.create(task) }  // x:1
    y.apply(created.delta)
    y.transact { $0.delete(task) }  // y:1 observes x:1
    let revived = y.transact { $0.create(task) }  // y:2
    z.apply(revived.delta)  // z never sees x:1 nor y:1
    let deleted = z.transact { $0.delete(task) }  // z:1 observes y:2
    y.apply(deleted.delta)
    #expect(!y.document.contains(task))
    b.apply(created.delta)
    b.apply(revived.delta)
    b.apply(deleted.delta)
    b.apply(y.delta(since: b.context))
    y.apply(b.delta(since: y.context))
    #expect(b.context == y.context)
    #expect(b.document.contains(task) == y.document.contains(task))
    #expect(b.document == y.document)
  }
}
