/// Which slot tombstones a stable cut lets a list collect, and how their namers are renamed.
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
/// (``collectableSlots(stable:)``). Slots that name them are another matter: decoding a
/// state, rebuilding it, or a peer that never held the list integrating it, places every
/// slot again from its origins. ``collection(stable:)`` therefore works in one of two
/// ways.
///
/// While the list holds a slot outside C, it drops the largest part of the interior
/// slots that no kept slot names (every slot naming one of them is dropped too): the
/// kept slots are then what a replica that never received the dropped ones would hold,
/// in the same order.
///
/// Once the list holds no slot outside C (nothing arrived since the reports; with one
/// device, always), it also renames the slots of C, and drops every interior slot that
/// no slot keeping its origins names:
///
/// 4. A scan places a slot x between its origins L and R and reads the origins of the
///    slots between them, which x's author lacked. Every later slot causally follows C
///    (no slot is concurrent with C: it would be held, outside C), so its author held
///    every slot of C, and no slot of C lies between L and R on any replica (two slots
///    never change their order): later scans read only the *places* of slots of C.
/// 5. Renamed slots are named as if one device had typed them in the order of their
///    Lamport numbers, each between its nearest renamed slots with a smaller Lamport
///    number, one on each side (adjacent among the slots typed before it): a history
///    FugueMax places exactly, every origin older than its slot. Lamport numbers do not
///    change, so later slots that name a renamed slot stay younger than it.
/// 6. Two slots of one Lamport number were made concurrently, and FugueMax places such
///    siblings by id, which their order may contradict: such slots keep their origins,
///    and so does every kept slot of C between the origins of a slot that keeps its
///    origins (placing that slot again reads theirs), until nothing changes
///    (``slotsKeepingOrigins(_:position:inCut:isCollectable:)``). The renamed slots
///    typed first and the others after, each between its own origins (adjacent among
///    the renamed slots and the slots its author held), is again a history, so every
///    decoding places the kept slots in their order, whatever the order of delivery.
///    The collection checks it by rebuilding the slots
///    (``CollectionRefusal/notRebuiltInOrder`` otherwise, which changes nothing).
/// 7. The result reads only the order, ids and Lamport numbers of the slots, which every
///    replica holding C agrees on. Collecting at C then at a later C' gives what
///    collecting at C' alone gives once the list is whole at C': a slot that keeps its
///    origins at C' kept them at C (a slot sharing its Lamport number with one of C was
///    concurrent with it, so held, outside C, when the list was whole at C: it was not),
///    so it has its first origins on every replica; every slot dropped at C is dropped at
///    C'; the renamed slots get the same names. Until then replicas may hold different
///    names, each placing every slot alike.
///
/// A dropped slot never directly follows a visible one, so a local insert names the same
/// right origin as on a replica that kept every slot. Renaming while the list holds a
/// slot outside C (with those slots keeping their origins) is not sound: a slot made
/// concurrently with C that arrives later, or one held that shares a Lamport number,
/// makes replicas that collected at different cuts end with different names
/// (`MovableListStabilityTests.renamingAtQuietCutsChangesNoItemAndConverges` fails).
///
/// A document collects every list field at a doubly stable cut
/// (`Document.collectListTombstones(at:)`, with the cuts a `StableCutHistory` returns)
/// and gives each list only the slots its context lacked (``runs(_:unknownTo:)``).
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

  /// One slot in sequence order with what a collection reads of it: its Lamport number
  /// and origins (a run's later slots name the slot before them).
  struct SlotRecord {
    var id: Dot
    var lamport: UInt64
    var origin: Dot?
    var rightOrigin: Dot?
  }

  /// The slots in sequence order, tombstones included, with their origins.
  ///
  /// - Complexity: O(s) for s slots.
  func slotRecords() -> [SlotRecord] {
    var records: [SlotRecord] = []
    for leafID in slots.leafOrder.documentOrder {
      for run in slots.leaves[leafID].runs {
        for offset in 0..<run.length {
          let step = UInt64(offset)
          let id = Dot(replica: run.replica, counter: run.counter &+ step)
          records.append(
            SlotRecord(
              id: id, lamport: run.lamport &+ step,
              origin: offset == 0
                ? run.origin : Dot(replica: run.replica, counter: id.counter &- 1),
              rightOrigin: run.rightOrigin))
        }
      }
    }
    return records
  }

  /// Why a cut changes nothing in a list's slots (``collection(stable:)``).
  package enum CollectionRefusal: Error, Equatable {
    /// Slots or deletes wait for missing events.
    case waiting
    /// The kept slots do not rebuild in their order (a guard: the argument above says
    /// they always do).
    case notRebuiltInOrder
  }

  /// What collecting at a cut does to a list's slots.
  package struct SlotCollection {
    /// The slots dropped, with their deletes.
    package var dropped: Set<Dot> = []
    /// The delete targets left out that the list does not hold (given up by
    /// ``RGA/dropPending(of:)``).
    package var givenUp: Set<Dot> = []
    /// The kept slots of the cut that keep their origins.
    package var keepingOrigins = 0
    /// The kept slots of the cut whose origins change.
    package var rewritten = 0
    /// The slots after the collection; `nil` when they do not change.
    package var slots: RGA?
  }

  /// What collecting at the doubly stable cut `stable` does (see the essay above). While
  /// the list holds a slot outside the cut, the collectable slots that no kept slot names
  /// are dropped and nothing is renamed. Once it holds none, the slots that keep their
  /// origins are found, every other collectable slot that none of them names is dropped,
  /// and every other kept slot of the cut is named after its nearest such slots with
  /// smaller Lamport numbers.
  ///
  /// A pure function of the list and the cut, for lists that hold every slot the cut's
  /// reports held (every slot outside the cut that is not causally after it).
  ///
  /// - Complexity: O(s log s) for s slots.
  package func collection(stable: CausalContext) -> Result<SlotCollection, CollectionRefusal> {
    guard !slots.hasPending else { return .failure(.waiting) }
    let records = slotRecords()
    var position: [Dot: Int] = [:]
    position.reserveCapacity(records.count)
    for (index, record) in records.enumerated() { position[record.id] = index }
    let inCut = records.map { stable.contains($0.id) }
    let dead = slotsDead(in: stable)
    var isCollectable = Array(repeating: false, count: records.count)
    for index in records.indices.dropFirst()
    where dead.contains(records[index].id) && dead.contains(records[index - 1].id) {
      isCollectable[index] = true
    }
    var result = SlotCollection()
    // A slot outside the cut: no renaming, only the collectable slots nothing kept names.
    let isWhole = !inCut.contains(false)
    let keeps =
      isWhole
      ? Self.slotsKeepingOrigins(
        records, position: position, inCut: inCut, isCollectable: isCollectable)
      : Self.unnamedClosure(records, position: position, isCollectable: isCollectable)
    var renamed: [Int] = []
    // Slots named by a slot keeping its origins stay.
    var isNamed = Array(repeating: false, count: records.count)
    for index in records.indices where keeps[index] {
      for named in [records[index].origin, records[index].rightOrigin] {
        if let named, let at = position[named] { isNamed[at] = true }
      }
    }
    for index in records.indices where inCut[index] {
      if keeps[index] {
        result.keepingOrigins += 1
      } else if isCollectable[index] && !isNamed[index] {
        result.dropped.insert(records[index].id)
      } else {
        renamed.append(index)
      }
    }
    let rewritten = Self.originsByLamport(records, of: renamed)
    for index in renamed {
      let record = records[index]
      if let new = rewritten[record.id],
        new.origin != record.origin
          || new.rightOrigin != record.rightOrigin
      {
        result.rewritten += 1
      }
    }
    let all = slots.delta(since: CausalContext())
    result.givenUp = Self.deleteTargets(of: all, notHeldBy: slots)
    guard !result.dropped.isEmpty || !result.givenUp.isEmpty || result.rewritten > 0 else {
      return .success(result)
    }
    // The kept slots, one by one, the renamed ones with their new origins.
    var runs = Self.runs(all, excluding: result.dropped.union(result.givenUp))
    runs.inserts = runs.inserts.flatMap { insert in
      (0..<insert.length).map { offset in
        var slot = insert.slice(from: offset, length: 1)
        if let new = rewritten[slot.id] { (slot.origin, slot.rightOrigin) = new }
        return slot
      }
    }
    runs.normalize()
    var rebuilt = RGA()
    rebuilt.apply(runs)
    let expected = records.lazy.map(\.id).filter { !result.dropped.contains($0) }
    guard !rebuilt.hasPending, Self.ids(of: rebuilt).elementsEqual(expected) else {
      return .failure(.notRebuiltInOrder)
    }
    result.slots = rebuilt
    return .success(result)
  }

  /// Which slots keep their origins (by position in `records`, the slots in sequence
  /// order), the least set such that every slot outside the cut does, and so does every
  /// kept slot of the cut (not collectable, or named by a slot keeping its origins) that
  /// lies between the origins of a slot keeping its origins, or shares its Lamport
  /// number with another kept slot of the cut.
  ///
  /// - Complexity: O(i s α(s)) for s slots and i rounds (one more than the longest chain
  ///   of reasons, a few in practice).
  static func slotsKeepingOrigins(
    _ records: [SlotRecord], position: [Dot: Int], inCut: [Bool], isCollectable: [Bool]
  ) -> [Bool] {
    var keeps = inCut.map { !$0 }
    var changed = true
    while changed {
      changed = false
      var isKept = isCollectable.map { !$0 }
      for index in records.indices where keeps[index] {
        isKept[index] = true
        for named in [records[index].origin, records[index].rightOrigin] {
          if let named, let at = position[named] { isKept[at] = true }
        }
      }
      func keep(_ index: Int) {
        guard inCut[index], isKept[index], !keeps[index] else { return }
        keeps[index] = true
        changed = true
      }
      // Kept slots of the cut sharing a Lamport number (counted among all kept slots of
      // the cut, so that a slot renamed once is never found sharing later).
      var sharing: [UInt64: Int] = [:]
      for index in records.indices where inCut[index] && isKept[index] {
        sharing[records[index].lamport, default: 0] += 1
      }
      for index in records.indices where sharing[records[index].lamport, default: 0] > 1 {
        keep(index)
      }
      // Kept slots of the cut between the origins of a slot keeping its origins; the next
      // position at or after each that no interval has reached (path halving).
      var unreached = Array(0...records.count)
      func next(_ start: Int) -> Int {
        var index = start
        while unreached[index] != index {
          unreached[index] = unreached[unreached[index]]
          index = unreached[index]
        }
        return index
      }
      for index in records.indices where keeps[index] {
        let record = records[index]
        let low = record.origin.flatMap { position[$0] } ?? -1
        let high = record.rightOrigin.flatMap { position[$0] } ?? records.count
        var between = next(low + 1)
        while between < high {
          keep(between)
          unreached[between] = between + 1
          between = next(between + 1)
        }
      }
    }
    return keeps
  }

  /// For a list holding slots outside the cut, the slots that keep their origins: all but
  /// the largest set of collectable slots such that every slot naming one of them is in
  /// it too. Removing such a set leaves the others in their order: they are what a
  /// replica that never received the removed slots would hold, and a slot never changes
  /// its order relative to another as more arrive.
  ///
  /// - Complexity: O(s) for s slots.
  static func unnamedClosure(
    _ records: [SlotRecord], position: [Dot: Int], isCollectable: [Bool]
  ) -> [Bool] {
    var keeps = isCollectable.map { !$0 }
    var work = records.indices.filter { keeps[$0] }
    while let index = work.popLast() {
      for named in [records[index].origin, records[index].rightOrigin] {
        guard let named, let at = position[named], !keeps[at] else { continue }
        keeps[at] = true
        work.append(at)
      }
    }
    return keeps
  }

  /// New origins for the slots at `renamed` (positions in `records`, ascending, Lamport
  /// numbers distinct): each between its nearest slots of `renamed` with a smaller
  /// Lamport number, one on each side, as if one device had typed them in the order of
  /// their Lamport numbers.
  ///
  /// - Complexity: O(k) for k slots.
  static func originsByLamport(_ records: [SlotRecord], of renamed: [Int]) -> [Dot: (
    origin: Dot?, rightOrigin: Dot?
  )] {
    var result: [Dot: (origin: Dot?, rightOrigin: Dot?)] = [:]
    result.reserveCapacity(renamed.count)
    var stack: [Int] = []
    for index in renamed {
      while let top = stack.last, records[top].lamport >= records[index].lamport {
        stack.removeLast()
      }
      result[records[index].id] = (stack.last.map { records[$0].id }, nil)
      stack.append(index)
    }
    stack.removeAll(keepingCapacity: true)
    for index in renamed.reversed() {
      while let top = stack.last, records[top].lamport >= records[index].lamport {
        stack.removeLast()
      }
      result[records[index].id]?.rightOrigin = stack.last.map { records[$0].id }
      stack.append(index)
    }
    return result
  }

  /// The ids of `slots` in sequence order.
  static func ids(of slots: RGA) -> [Dot] {
    var ids: [Dot] = []
    for leafID in slots.leafOrder.documentOrder {
      for run in slots.leaves[leafID].runs {
        for offset in 0..<run.length {
          ids.append(Dot(replica: run.replica, counter: run.counter &+ UInt64(offset)))
        }
      }
    }
    return ids
  }

  /// Collects at the doubly stable cut `stable` (``collection(stable:)``) and returns how
  /// many slots and given-up delete targets it dropped. A cut that refuses drops only the
  /// given-up deletes (``dropGivenUpDeletes()``); nothing while slots or deletes wait.
  ///
  /// `stable` must be doubly stable (see above) and this list must hold every slot of
  /// the reports that made it stable. The items keep their order, every later slot lands
  /// where it would have, and the result is a pure function of the list and the cut, so
  /// replicas that collect at one cut converge byte for byte. A dropped slot or delete
  /// that arrives again must not be applied: ``apply(_:known:)`` leaves out what the
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
    collect(stable: stable).dropped
  }

  /// ``collectTombstones(stable:)``, and whether the slots changed (a collection may
  /// rewrite origins and drop nothing).
  package mutating func collect(stable: CausalContext) -> (dropped: Int, changed: Bool) {
    switch collection(stable: stable) {
    case .failure(.waiting):
      return (0, false)
    case .failure:
      let dropped = dropGivenUpDeletes()
      return (dropped, dropped > 0)
    case .success(let collection):
      guard let rebuilt = collection.slots else { return (0, false) }
      slots = rebuilt
      rebuildShown()
      #if CONVERGE_INTERNAL_CHECKS
        _checkInvariants()
      #endif
      return (collection.dropped.count + collection.givenUp.count, true)
    }
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
