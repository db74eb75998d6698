/// Which slot tombstones a stable cut would let a list collect, and why not all of them.
///
/// A move leaves its old slot as a tombstone. Collecting a tombstone D is safe only if no
/// replica can ever name D again as an origin of a new slot, and no slot that names D is
/// still to be placed anywhere. A stable delete is not enough: a local insert's right
/// origin is the item right after the visible item it follows, tombstones included, so a
/// replica that has seen D deleted still names D when D follows a visible slot (see
/// `MovableListStabilityTests`).
///
/// Let C be a *doubly stable* cut: every device that may still send an edit has seen C,
/// and every event that does not causally follow all of C is held by every device (the
/// stable cut of a later round of reports that covers the union of the reports which
/// made C stable). Call a slot *dead in C* when its insert and one of its deletes are in
/// C. Then, for slots a and b adjacent in a replica's order (tombstones included), with a
/// dead in C:
///
/// 1. No slot made from then on lands between a and b. A new slot goes between its left
///    origin and its right origin, which were adjacent at its author; its author holds C,
///    so a, which is invisible to it, is neither its left origin nor between its origins.
/// 2. So b's predecessor stays a, a tombstone, on every replica: no new slot names b as
///    its right origin (the item right after a visible one), and if b is dead in C none
///    names it as its left origin (a visible one).
/// 3. A slot that named b was made before its author had seen both a's and b's deletes,
///    so it does not causally follow C and every device holds it already: no later insert
///    is concurrent with it, so no integration scan compares its origins again.
///
/// The *interior* slots of each maximal block of slots dead in C (every such slot but the
/// block's first) are therefore never needed again to place a slot. What collecting them
/// still needs, and what this file does not do yet: rewriting the origins of the slots
/// that name them so that a decoded state keeps its order, dropping late copies of their
/// inserts and deletes on arrival, and a doubly stable cut from the relay.
extension MovableList {
  /// The slots in sequence order, tombstones included, each with whether it is deleted.
  ///
  /// - Complexity: O(s) for s slots.
  func slotsInSequenceOrder() -> [(id: Dot, isDeleted: Bool)] {
    var order: [(id: Dot, isDeleted: Bool)] = []
    for leafID in slots.leafOrder.documentOrder {
      for run in slots.leaves[leafID].runs {
        for offset in 0..<run.length {
          order.append(
            (Dot(replica: run.replica, counter: run.counter &+ UInt64(offset)), run.deleted))
        }
      }
    }
    return order
  }

  /// How many of the slots' runs name their neighbours in sequence order (tombstones
  /// included): the left origin is the slot right before the run (the head for the
  /// first), the right origin the slot right after it (the end for the last). An
  /// encoding could imply those origins with a bit; the others it must write.
  ///
  /// - Complexity: O(s).
  package func runsNamingNeighbours() -> (runs: Int, left: Int, right: Int) {
    var runs: [(first: Dot, last: Dot, origin: Dot?, rightOrigin: Dot?)] = []
    for leafID in slots.leafOrder.documentOrder {
      for run in slots.leaves[leafID].runs {
        runs.append((run.firstID, run.lastID, run.origin, run.rightOrigin))
      }
    }
    var (left, right) = (0, 0)
    for (position, run) in runs.enumerated() {
      if run.origin == (position > 0 ? runs[position - 1].last : nil) { left += 1 }
      if run.rightOrigin == (position + 1 < runs.count ? runs[position + 1].first : nil) {
        right += 1
      }
    }
    return (runs.count, left, right)
  }

  /// The slots dead in `stable`: their insert and one of their deletes are in it.
  ///
  /// - Complexity: O(s + e) for s slots and e delete runs.
  func slotsDead(in stable: CausalContext) -> Set<Dot> {
    var dead = Set<Dot>()
    for (_, log) in slots.deleteLog {
      for delete in log where delete.isWellFormed {
        for offset in 0..<delete.count {
          let dot = Dot(replica: delete.dot.replica, counter: delete.dot.counter &+ offset)
          let target = Dot(replica: delete.target.replica, counter: delete.target(at: offset))
          if stable.contains(dot), stable.contains(target) { dead.insert(target) }
        }
      }
    }
    return dead
  }

  /// The slots that no slot made after a doubly stable cut `stable` can name or land
  /// next to: every slot dead in `stable` whose predecessor (tombstones included) is dead
  /// in it too. Ascending by id.
  ///
  /// `stable` must be doubly stable (see above); the result is a pure function of the
  /// list and the cut, so replicas holding the same list agree on it.
  ///
  /// - Complexity: O(s + e + c log c) for s slots, e delete runs and c results.
  package func collectableSlots(stable: CausalContext) -> [Dot] {
    let dead = slotsDead(in: stable)
    var previousIsDead = false
    var collectable: [Dot] = []
    for slot in slotsInSequenceOrder() {
      let isDead = dead.contains(slot.id)
      if isDead, previousIsDead { collectable.append(slot.id) }
      previousIsDead = isDead
    }
    return collectable.sorted()
  }

  /// The encoded bytes of the list's slots (runs, content and deletes, §8.3.2), of their
  /// delete runs alone, and of the slots with the slots `excluded` and their deletes left
  /// out: what collecting them would save, measured on the format. The last form is not
  /// a decodable state (the slots that name an excluded slot still do).
  ///
  /// - Complexity: O(s log s).
  package func slotBytes(excluding excluded: Set<Dot>) -> (all: Int, deletes: Int, kept: Int) {
    let all = slots.delta(since: CausalContext())
    var kept = RGADelta()
    for insert in all.inserts {
      var start = 0
      for offset in 0...insert.length {
        let isEnd = offset == insert.length
        let dropped =
          !isEnd
          && excluded.contains(
            Dot(replica: insert.id.replica, counter: insert.id.counter &+ UInt64(offset)))
        guard isEnd || dropped else { continue }
        if offset > start { kept.inserts.append(insert.slice(from: start, length: offset - start)) }
        start = offset + 1
      }
    }
    for delete in all.deletes where delete.isWellFormed {
      for offset in 0..<delete.count {
        let target = Dot(replica: delete.target.replica, counter: delete.target(at: offset))
        guard !excluded.contains(target) else { continue }
        kept.deletes.append(delete.slice(from: offset, count: 1))
      }
    }
    kept.normalize()
    return (
      Self.encodedSize(of: all), Self.encodedSize(of: RGADelta(inserts: [], deletes: all.deletes)),
      Self.encodedSize(of: kept)
    )
  }

  private static func encodedSize(of runs: RGADelta) -> Int {
    var builder = ReplicaTable.Builder()
    runs.collectReplicas(into: &builder)
    var writer = ByteWriter()
    runs.write(to: &writer, replicas: builder.build())
    return writer.count
  }
}
