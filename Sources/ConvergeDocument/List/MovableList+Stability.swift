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
/// block's first) are therefore never needed again to place a slot
/// (``collectableSlots(stable:)``). ``collectTombstones(stable:)`` drops the part of them
/// that no kept slot names (``removableSlots(stable:)``): the kept slots are then what a
/// replica that never received the dropped ones would hold, in the same order. Dropping
/// the rest would need the slots naming them to name others, which no rewriting of their
/// origins is known to do while keeping FugueMax's order. A document collects every list
/// field at a doubly stable cut (`Document.collectListTombstones(at:)`, with the cuts a
/// `StableCutHistory` returns) and gives each list only the slots its context lacked
/// (``runs(_:unknownTo:)``).
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

  /// Calls `body` with every slot's id and the two origins it names (its left origin: the
  /// run's for a run's first slot, the slot before it in the run otherwise).
  ///
  /// - Complexity: O(s) for s slots.
  private func forEachSlotOrigins(_ body: (_ id: Dot, _ origin: Dot?, _ rightOrigin: Dot?) -> Void)
  {
    for leafID in slots.leafOrder.documentOrder {
      for run in slots.leaves[leafID].runs {
        for offset in 0..<run.length {
          let id = Dot(replica: run.replica, counter: run.counter &+ UInt64(offset))
          let origin =
            offset == 0 ? run.origin : Dot(replica: run.replica, counter: id.counter &- 1)
          body(id, origin, run.rightOrigin)
        }
      }
    }
  }

  /// The slots of ``collectableSlots(stable:)`` that no other slot still names: the
  /// largest part of them such that every slot naming one of them (as its left or right
  /// origin) is in it too. Removing such a set leaves the others in their order: they are
  /// what a replica that never received the removed slots would hold, and a slot never
  /// changes its order relative to another as more arrive.
  ///
  /// - Complexity: O(s + e) for s slots and e delete runs.
  package func removableSlots(stable: CausalContext) -> [Dot] {
    var removable = Set(collectableSlots(stable: stable))
    // Who names each slot, and what each slot names.
    var namers: [Dot: [Dot]] = [:]
    var named: [Dot: [Dot]] = [:]
    forEachSlotOrigins { id, origin, rightOrigin in
      for target in [origin, rightOrigin] {
        guard let target else { continue }
        namers[target, default: []].append(id)
        named[id, default: []].append(target)
      }
    }
    var work = removable.filter { slot in
      (namers[slot] ?? []).contains { !removable.contains($0) }
    }
    while let slot = work.popFirst() {
      guard removable.remove(slot) != nil else { continue }
      for target in named[slot] ?? [] where removable.contains(target) { work.insert(target) }
    }
    return removable.sorted()
  }

  /// Why the collectable slots that ``removableSlots(stable:)`` keeps are kept: of those
  /// slots, how many a kept slot outside the collectable ones names (a visible one, or a
  /// dead one: the first of its block, or not dead in `stable`), and how many only other
  /// kept collectable slots name; and how many of the names from outside are left and
  /// right origins. A measure for the bench, not used to collect.
  ///
  /// - Complexity: O(s + e) for s slots and e delete runs.
  package func keptCollectableSlots(stable: CausalContext) -> (
    kept: Int, byVisible: Int, byDead: Int, onlyByKept: Int, asLeft: Int, asRight: Int
  ) {
    let collectable = Set(collectableSlots(stable: stable))
    let kept = collectable.subtracting(removableSlots(stable: stable))
    var deleted: [Dot: Bool] = [:]
    for slot in slotsInSequenceOrder() { deleted[slot.id] = slot.isDeleted }
    // Who names each slot, and whether as its left origin.
    var namers: [Dot: [(namer: Dot, isLeft: Bool)]] = [:]
    forEachSlotOrigins { id, origin, rightOrigin in
      if let origin { namers[origin, default: []].append((id, true)) }
      if let rightOrigin { namers[rightOrigin, default: []].append((id, false)) }
    }
    var result = (kept: kept.count, byVisible: 0, byDead: 0, onlyByKept: 0, asLeft: 0, asRight: 0)
    for slot in kept {
      let outside = (namers[slot] ?? []).filter { !collectable.contains($0.namer) }
      if outside.isEmpty {
        result.onlyByKept += 1
      } else if outside.contains(where: { deleted[$0.namer] == false }) {
        result.byVisible += 1
      } else {
        result.byDead += 1
      }
      result.asLeft += outside.filter(\.isLeft).count
      result.asRight += outside.filter { !$0.isLeft }.count
    }
    return result
  }

  /// Drops the slots of ``removableSlots(stable:)`` and their deletes, and the deletes
  /// of slots the list does not hold (given up by ``RGA/dropPending(of:)``), and returns
  /// how many slots and given-up delete targets it dropped; nothing while slots or
  /// deletes wait for missing events.
  ///
  /// `stable` must be doubly stable (see above) and this list must hold every slot of
  /// the reports that made it stable. The other slots keep their order, every later
  /// slot lands where it would have (it names none of the dropped slots, and lands next
  /// to none), and the result is a pure function of the list and the cut, so replicas
  /// that collect at one cut converge byte for byte. A dropped slot or delete that
  /// arrives again must not be applied: ``apply(_:known:)`` leaves out what the
  /// receiver's context already names.
  ///
  /// A given-up delete names a retired device's slot that waited for an event of its
  /// own no replica holds and was dropped: no replica will ever hold it, so its delete
  /// deletes nothing. ``dropGivenUpDeletes()`` takes it out of the delete log when
  /// nothing else waits; otherwise it stays there until a collection rebuilds the slots,
  /// which would otherwise buffer it again as waiting for its target, for ever.
  ///
  /// - Complexity: O(s log s) for s slots.
  @discardableResult
  package mutating func collectTombstones(stable: CausalContext) -> Int {
    guard !slots.hasPending else { return 0 }
    let removable = Set(removableSlots(stable: stable))
    let all = slots.delta(since: CausalContext())
    let givenUp = Self.deleteTargets(of: all, notHeldBy: slots)
    guard !removable.isEmpty || !givenUp.isEmpty else { return 0 }
    var rebuilt = RGA()
    rebuilt.apply(Self.runs(all, excluding: removable.union(givenUp)))
    slots = rebuilt
    rebuildShown()
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return removable.count + givenUp.count
  }

  /// Drops from the delete log the deletes of slots the list does not hold, once nothing
  /// waits (after ``RGA/dropPending(of:)`` gave them up: their retired slots never
  /// arrive), and returns how many targets; the slots are rebuilt without them, as a
  /// collection does. Kept, they would wait again in a copy decoded from the encoded
  /// state (a store reopened from its snapshot), for ever.
  ///
  /// - Complexity: O(e log s) for e deleted slots and s slots, plus O(s log s) to
  ///   rebuild when there are some.
  @discardableResult
  package mutating func dropGivenUpDeletes() -> Int {
    guard !slots.hasPending else { return 0 }
    let all = slots.delta(since: CausalContext())
    let givenUp = Self.deleteTargets(of: all, notHeldBy: slots)
    guard !givenUp.isEmpty else { return 0 }
    var rebuilt = RGA()
    rebuilt.apply(Self.runs(all, excluding: givenUp))
    slots = rebuilt
    rebuildShown()
    return givenUp.count
  }

  /// The delete targets of `runs` that `slots` does not hold.
  ///
  /// - Complexity: O(e log s) for e deleted slots and s slots.
  static func deleteTargets(of runs: RGADelta, notHeldBy slots: RGA) -> Set<Dot> {
    var missing = Set<Dot>()
    for delete in runs.deletes where delete.isWellFormed {
      for offset in 0..<delete.count {
        let target = Dot(replica: delete.target.replica, counter: delete.target(at: offset))
        if !slots.contains(target) { missing.insert(target) }
      }
    }
    return missing
  }

  /// Applies the slots and deletes of `delta` whose events `known` (the receiver's
  /// context before the delta) does not name, and all its items: a list that collected
  /// tombstones does not take them back from a sender whose view of it was stale.
  ///
  /// - Complexity: as ``apply(_:)``, plus O(d) for d runs in the delta.
  @discardableResult
  package mutating func apply(_ delta: MovableListDelta, known: CausalContext) -> Bool {
    var fresh = delta
    fresh.slots = Self.runs(delta.slots, unknownTo: known)
    return apply(fresh)
  }

  /// The slot inserts and deletes of `runs` whose events `known` does not name: what a
  /// list whose replica's context is `known` may still lack of them (it holds the others
  /// already, or collected them).
  ///
  /// - Complexity: O(d) for d runs, times the ranges `known` holds of their replicas.
  package static func runs(_ runs: RGADelta, unknownTo known: CausalContext) -> RGADelta {
    guard namesAny(of: runs, in: known) else { return runs }
    return RGADelta(
      inserts: runs.inserts.flatMap { insert in
        let lower = insert.id.counter
        let upper = lower &+ UInt64(insert.length &- 1)
        guard insert.length > 0, upper >= lower else { return [insert] }
        let lacking = CounterRanges(lower...upper).subtracting(
          known.counters(of: insert.id.replica))
        return lacking.ranges.map {
          insert.slice(
            from: Int($0.lowerBound - lower), length: Int($0.upperBound - $0.lowerBound + 1))
        }
      },
      deletes: runs.deletes.flatMap { delete in
        let lower = delete.dot.counter
        let upper = lower &+ (delete.count &- 1)
        guard delete.count > 0, upper >= lower else { return [delete] }
        let lacking = CounterRanges(lower...upper).subtracting(
          known.counters(of: delete.dot.replica))
        return lacking.ranges.map {
          delete.slice(from: $0.lowerBound - lower, count: $0.upperBound - $0.lowerBound + 1)
        }
      })
  }

  /// Whether `known` names an event of an insert or delete of `runs`: most deltas name
  /// none (a local edit's events are fresh), and are then passed on as they are.
  ///
  /// - Complexity: O(d) for d runs, times the ranges `known` holds of their replicas.
  static func namesAny(of runs: RGADelta, in known: CausalContext) -> Bool {
    func names(_ replica: ReplicaID, _ lower: UInt64, _ count: UInt64) -> Bool {
      guard count > 0 else { return false }
      let (upper, overflow) = lower.addingReportingOverflow(count - 1)
      let span = lower...(overflow ? UInt64.max : upper)
      return known.counters(of: replica).ranges.contains { $0.overlaps(span) }
    }
    return runs.inserts.contains {
      names($0.id.replica, $0.id.counter, UInt64(clamping: $0.length))
    }
      || runs.deletes.contains { names($0.dot.replica, $0.dot.counter, $0.count) }
  }

  /// `runs` without the slots `excluded` and the deletes of them.
  package static func runs(_ runs: RGADelta, excluding excluded: Set<Dot>) -> RGADelta {
    var kept = RGADelta()
    for insert in runs.inserts {
      var start = 0
      for offset in 0...insert.length {
        let isEnd = offset == insert.length
        let dropped =
          !isEnd
          && excluded.contains(
            Dot(replica: insert.id.replica, counter: insert.id.counter &+ UInt64(offset)))
        guard isEnd || dropped else { continue }
        if offset > start {
          kept.inserts.append(insert.slice(from: start, length: offset - start))
        }
        start = offset + 1
      }
    }
    for delete in runs.deletes where delete.isWellFormed {
      for offset in 0..<delete.count {
        let target = Dot(replica: delete.target.replica, counter: delete.target(at: offset))
        guard !excluded.contains(target) else { continue }
        kept.deletes.append(delete.slice(from: offset, count: 1))
      }
    }
    kept.normalize()
    return kept
  }
}
