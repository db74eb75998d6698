import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// What collecting a list's slot tombstones at a stable cut may rely on
/// (`MovableList+Stability.swift`): a stable delete alone does not stop a replica from
/// naming the tombstone, but a slot right after a slot dead in the cut is never named nor
/// reached again, on any replica, and every replica holding the cut's reports finds the
/// same such slots.
@Suite struct MovableListStabilityTests {
  private static let phone = ReplicaID(rawValue: 1)
  private static let laptop = ReplicaID(rawValue: 2)

  /// Why collecting every stable tombstone is unsound: after both devices saw B's old
  /// slot deleted, the laptop still names it as the right origin of a card appended after
  /// A (the item right after A, tombstones included), so a device that had collected it
  /// could not place that card.
  @Test func aStableTombstoneAfterAVisibleSlotIsStillNamed() {
    let stamp = Timestamp(rawValue: 1)
    var phone = MovableList()
    var base = phone.insert(
      .string("A"), at: 0, firstDot: Dot(replica: Self.phone, counter: 1), timestamp: stamp)
    base.merge(
      phone.insert(
        .string("B"), at: 1, firstDot: Dot(replica: Self.phone, counter: 2), timestamp: stamp))
    var laptop = MovableList()
    laptop.apply(base)
    // B to the front: new slot 3, its old slot 2 deleted with dot 4.
    laptop.apply(
      phone.move(
        from: 1, to: 0, firstDot: Dot(replica: Self.phone, counter: 3),
        timestamp: Timestamp(rawValue: 2)))
    var stable = CausalContext()
    stable.insert(replica: Self.phone, counters: 1...4)
    #expect(laptop.values == [.string("B"), .string("A")])
    #expect(laptop.slotsDead(in: stable) == [Dot(replica: Self.phone, counter: 2)])
    let appended = laptop.insert(
      .string("C"), at: 2, firstDot: Dot(replica: Self.laptop, counter: 1),
      timestamp: Timestamp(rawValue: 3))
    #expect(appended.slots.inserts.first?.rightOrigin == Dot(replica: Self.phone, counter: 2))
    // The dead slot follows a visible one, so it is not collectable.
    #expect(laptop.collectableSlots(stable: stable).isEmpty)
  }

  /// Devices editing one list at random, syncing at random.
  private struct Devices {
    var lists: [MovableList]
    var contexts: [CausalContext]
    var counters: [UInt64]
    var time: UInt64 = 1
    let pool = (0..<8).map { FieldValue.string("item\($0)") }

    init(count: Int) {
      lists = Array(repeating: MovableList(), count: count)
      contexts = Array(repeating: CausalContext(), count: count)
      counters = Array(repeating: 1, count: count)
    }

    /// Whether receivers leave out the slots and deletes their context names already
    /// (``MovableList/apply(_:known:)``), as lists that collect tombstones must.
    var filtersKnown = false

    mutating func sync(_ receiver: Int, from sender: Int) {
      receive(
        lists[sender].delta(since: contexts[receiver]), context: contexts[sender], at: receiver)
    }

    mutating func receive(_ delta: MovableListDelta, context: CausalContext, at receiver: Int) {
      if filtersKnown {
        lists[receiver].apply(delta, known: contexts[receiver])
      } else {
        lists[receiver].apply(delta)
      }
      contexts[receiver].formUnion(context)
    }

    /// A random insert, move or remove on `device`; returns its delta and its events.
    mutating func edit(_ device: Int, using random: inout SeededGenerator) -> (
      delta: MovableListDelta, context: CausalContext
    ) {
      let replica = ReplicaID(rawValue: UInt64(device + 1))
      let dot = Dot(replica: replica, counter: counters[device])
      counters[device] += 2
      time += UInt64.random(in: 1...3, using: &random)
      let stamp = Timestamp(rawValue: time)
      let count = lists[device].count
      let delta: MovableListDelta
      let kind = Int.random(in: 0..<4, using: &random)
      if kind == 0 || count == 0 {
        delta = lists[device].insert(
          pool.randomElement(using: &random) ?? .null,
          at: Int.random(in: 0...count, using: &random), firstDot: dot, timestamp: stamp)
      } else if kind < 3 {
        delta = lists[device].move(
          from: Int.random(in: 0..<count, using: &random),
          to: Int.random(in: 0..<count, using: &random), firstDot: dot, timestamp: stamp)
      } else {
        delta = lists[device].remove(at: Int.random(in: 0..<count, using: &random), firstDot: dot)
      }
      var made = CausalContext()
      made.insert(replica: replica, counters: dot.counter...(dot.counter + 1))
      contexts[device].formUnion(made)
      return (delta, made)
    }

    /// Random edits (and syncs one time in four) on random devices.
    mutating func run(
      steps: Int, using random: inout SeededGenerator,
      after step: (inout Devices, Int) -> Void = { _, _ in },
      made: (MovableListDelta, CausalContext) -> Void = { _, _ in }
    ) {
      for _ in 0..<steps {
        let device = Int.random(in: 0..<lists.count, using: &random)
        if Int.random(in: 0..<4, using: &random) == 0 {
          sync(device, from: Int.random(in: 0..<lists.count, using: &random))
        } else {
          let (delta, context) = edit(device, using: &random)
          made(delta, context)
        }
        step(&self, device)
      }
    }
  }

  /// The slot right before each of `slots` in `list`'s sequence order (nil: the head).
  private func predecessors(of slots: [Dot], in list: MovableList) -> [Dot: Dot?] {
    let order = list.slotsInSequenceOrder().map(\.id)
    var before: [Dot: Dot?] = [:]
    for (position, id) in order.enumerated() {
      before[id] = position == 0 ? nil : order[position - 1]
    }
    var result: [Dot: Dot?] = [:]
    for slot in slots { result[slot] = before[slot] ?? nil }
    return result
  }

  /// A stable cut C is taken mid-history (device 0 holds the union of the reports, C is
  /// their meet); every device then catches up with that union at a random moment (so C
  /// becomes doubly stable) while all keep editing and syncing. No edit made after C
  /// names a collectable slot as an origin, each collectable slot keeps the dead slot
  /// before it on every replica to the end, and every replica holding the union finds
  /// the same collectable slots.
  @Test func collectableSlotsAreNeverNamedNorReachedAgain() throws {
    var collectedInAll = 0
    try forEachSeed(count: 200, base: 0x4C15_7C01) { random in
      var devices = Devices(count: Int.random(in: 2...4, using: &random))
      let count = devices.lists.count
      devices.run(steps: Int.random(in: 10...60, using: &random), using: &random)
      // The reports: device 0 gathers every other device's events, then all report.
      for other in 1..<count { devices.sync(0, from: other) }
      var cut = devices.contexts[0]
      for context in devices.contexts.dropFirst() { cut = cut.intersection(context) }
      let union = devices.contexts[0]
      let unionList = devices.lists[0]
      let collectable = devices.lists[0].collectableSlots(stable: cut)
      collectedInAll += collectable.count
      let named = Set(collectable)
      let before = predecessors(of: collectable, in: devices.lists[0])
      for slot in collectable {
        guard let previous = before[slot], let previous, cut.contains(previous) else {
          throw LawViolation(
            law: "a collectable slot follows a slot of the cut",
            witnesses: [.init(label: "slot", state: "\(slot), seed \(random.seed)")])
        }
      }
      // Each device catches up with the union at some step of the rest of the history.
      var caughtUp = Array(repeating: false, count: count)
      caughtUp[0] = true
      var violations: [String] = []
      let steps = Int.random(in: 10...60, using: &random)
      var step = 0
      devices.run(
        steps: steps, using: &random,
        after: { devices, _ in
          step += 1
          for device in 0..<count where !caughtUp[device] && (step * 7 + device) % 11 == 0 {
            devices.lists[device].apply(unionList.delta(since: devices.contexts[device]))
            devices.contexts[device].formUnion(union)
            caughtUp[device] = true
          }
        },
        made: { delta, _ in
          for insert in delta.slots.inserts {
            for origin in [insert.origin, insert.rightOrigin] {
              if let origin, named.contains(origin) {
                violations.append("\(insert.id) names \(origin)")
              }
            }
          }
        })
      for device in 0..<count where !caughtUp[device] {
        devices.lists[device].apply(unionList.delta(since: devices.contexts[device]))
        devices.contexts[device].formUnion(union)
      }
      // Every device holds the union now: each finds the same collectable slots.
      for device in 0..<count {
        let found = devices.lists[device].collectableSlots(stable: cut)
        if found != collectable { violations.append("device \(device) finds \(found)") }
      }
      // Full sync, then each collectable slot still follows the same dead slot.
      for receiver in 0..<count {
        for sender in 0..<count where sender != receiver { devices.sync(receiver, from: sender) }
      }
      for receiver in 0..<count {
        for sender in 0..<count where sender != receiver { devices.sync(receiver, from: sender) }
      }
      for device in 0..<count {
        let now = predecessors(of: collectable, in: devices.lists[device])
        for slot in collectable where now[slot] != before[slot] {
          violations.append(
            "device \(device): \(slot) now follows \(String(describing: now[slot]))")
        }
        if devices.lists[device] != devices.lists[0] {
          violations.append("device \(device) diverged")
        }
      }
      try LawViolation.throwIfAny(
        violations, of: "collectable slots are never named nor reached again", seed: random.seed)
    }
    // The histories do leave blocks of dead slots (the law is not checked on nothing).
    #expect(collectedInAll > 200, "collectable slots over all seeds: \(collectedInAll)")
  }

  /// Devices collect at a doubly stable cut at random moments while they keep editing,
  /// syncing and receiving old deltas again: every device ends with the items of a list
  /// that never collected, all end equal, and equal to that list collected at the cut;
  /// a collected list takes nothing back from old deltas, collecting again drops
  /// nothing, and its slots rebuilt from their runs are the same slots.
  @Test func collectingAtADoublyStableCutChangesNoItemAndConverges() throws {
    var droppedInAll = 0
    try forEachSeed(count: 200, base: 0x4C15_7C02) { random in
      var devices = Devices(count: Int.random(in: 2...4, using: &random))
      devices.filtersKnown = true
      let count = devices.lists.count
      var edits: [(delta: MovableListDelta, context: CausalContext)] = []
      let record = { (delta: MovableListDelta, context: CausalContext) in
        edits.append((delta, context))
      }
      devices.run(steps: Int.random(in: 10...60, using: &random), using: &random, made: record)
      for other in 1..<count { devices.sync(0, from: other) }
      var cut = devices.contexts[0]
      for context in devices.contexts.dropFirst() { cut = cut.intersection(context) }
      let (union, unionList) = (devices.contexts[0], devices.lists[0])
      // Every device catches up with the reports' union: the cut is doubly stable.
      devices.run(steps: Int.random(in: 0...30, using: &random), using: &random, made: record)
      for device in 1..<count {
        devices.receive(
          unionList.delta(since: devices.contexts[device]), context: union, at: device)
      }
      // Collections at random moments, old deltas delivered again at random.
      var violations: [String] = []
      // The collections and redeliveries draw from a stream of their own.
      var side = SeededGenerator(seed: random.seed, stream: 1)
      devices.run(
        steps: Int.random(in: 10...60, using: &random), using: &random,
        after: { devices, device in
          switch Int.random(in: 0..<4, using: &side) {
          case 0:
            droppedInAll += devices.lists[device].collectTombstones(stable: cut)
          case 1:
            if let old = edits.randomElement(using: &side) {
              devices.receive(old.delta, context: old.context, at: device)
            }
          default: break
          }
        }, made: record)
      for _ in 0..<2 {
        for receiver in 0..<count {
          for sender in 0..<count where sender != receiver {
            devices.sync(receiver, from: sender)
          }
        }
      }
      var reference = MovableList()
      for edit in edits { reference.apply(edit.delta) }
      var collectedReference = reference
      collectedReference.collectTombstones(stable: cut)
      for device in 0..<count {
        if devices.lists[device].values != reference.values {
          violations.append("device \(device) shows \(devices.lists[device].values)")
        }
        devices.lists[device].collectTombstones(stable: cut)
        if devices.lists[device] != collectedReference {
          violations.append("device \(device) differs from the reference collected")
        }
      }
      var list = devices.lists[0]
      if list.collectTombstones(stable: cut) != 0 { violations.append("collected twice") }
      for edit in edits { list.apply(edit.delta, known: devices.contexts[0]) }
      if list != devices.lists[0] { violations.append("an old delta brought slots back") }
      var rebuilt = RGA()
      rebuilt.apply(list.slots.delta(since: CausalContext()))
      if rebuilt != list.slots || rebuilt.hasPending {
        violations.append("the slots do not rebuild from their runs")
      }
      try LawViolation.throwIfAny(
        violations, of: "collecting at a doubly stable cut changes no item and converges",
        seed: random.seed)
    }
    #expect(droppedInAll > 200, "slots collected over all seeds: \(droppedInAll)")
  }

  /// A list holding no slot outside the cut renames the kept slots of the cut. 2–4
  /// devices edit concurrently (so slots of one Lamport number come from several
  /// devices) and now and then sync all round; each such quiet round gives a cut holding
  /// every slot, at which random devices collect then or later, amid more edits, syncs
  /// and old deltas (later, a list holds slots outside the cut and collects without
  /// renaming). Each device is twinned with one that never collects: both show the same
  /// items at every step. At the end every device collects at a last quiet cut: all are
  /// equal, old deltas change nothing, and a list that never held the slots integrates
  /// the collected list's runs, one by one in a random order, to the same list.
  @Test func renamingAtQuietCutsChangesNoItemAndConverges() throws {
    var (renamedInAll, keptInAll) = (0, 0)
    try forEachSeed(count: 200, base: 0x4C15_7C03) { random in
      var devices = Devices(count: Int.random(in: 2...4, using: &random))
      devices.filtersKnown = true
      let count = devices.lists.count
      var twins = devices.lists
      var edits: [(delta: MovableListDelta, context: CausalContext)] = []
      var cuts: [CausalContext] = []
      var violations: [String] = []
      var side = SeededGenerator(seed: random.seed, stream: 1)
      func collect(_ device: Int, at cut: CausalContext) {
        if case .success(let collection) = devices.lists[device].collection(stable: cut) {
          renamedInAll += collection.rewritten
          keptInAll += collection.keepingOrigins
        }
        devices.lists[device].collectTombstones(stable: cut)
      }
      func quietRound() {
        for receiver in 0..<count {
          for sender in 0..<count where sender != receiver {
            devices.sync(receiver, from: sender)
            twins[receiver].merge(twins[sender])
          }
        }
        cuts.append(devices.contexts[0])
      }
      for _ in 0..<Int.random(in: 40...120, using: &random) {
        let device = Int.random(in: 0..<count, using: &random)
        switch Int.random(in: 0..<16, using: &random) {
        case 0..<3:
          let sender = Int.random(in: 0..<count, using: &random)
          devices.sync(device, from: sender)
          twins[device].merge(twins[sender])
        case 3:
          quietRound()
        case 4..<6:
          if let cut = cuts.randomElement(using: &side), devices.contexts[device].includes(cut) {
            collect(device, at: cut)
          }
        case 6:
          if let old = edits.randomElement(using: &side) {
            devices.receive(old.delta, context: old.context, at: device)
            twins[device].apply(old.delta)
          }
        default:
          let made = devices.edit(device, using: &random)
          twins[device].apply(made.delta)
          edits.append(made)
        }
        for other in 0..<count where devices.lists[other].values != twins[other].values {
          violations.append("device \(other) shows \(devices.lists[other].values)")
        }
        if !violations.isEmpty { break }
      }
      if violations.isEmpty {
        quietRound()
        let last = cuts[cuts.count - 1]
        for device in 0..<count {
          collect(device, at: last)
          if devices.lists[device].values != twins[device].values {
            violations.append("device \(device) shows \(devices.lists[device].values) at the end")
          }
          if devices.lists[device] != devices.lists[0] {
            violations.append("device \(device) differs from device 0")
          }
        }
        var list = devices.lists[0]
        for edit in edits { list.apply(edit.delta, known: devices.contexts[0]) }
        if list != devices.lists[0] { violations.append("an old delta brought slots back") }
        var pieces = devices.lists[0].delta(since: CausalContext())
        pieces.slots.inserts = pieces.slots.inserts.flatMap { insert in
          (0..<insert.length).map { insert.slice(from: $0, length: 1) }
        }
        pieces.slots.inserts.shuffle(using: &side)
        var fresh = MovableList()
        for insert in pieces.slots.inserts {
          fresh.apply(MovableListDelta(slots: RGADelta(inserts: [insert], deletes: []), items: [:]))
        }
        fresh.apply(pieces)
        if fresh != devices.lists[0] || fresh.hasPending {
          violations.append("the collected slots, placed again one by one, differ")
        }
      }
      try LawViolation.throwIfAny(
        violations, of: "renaming at quiet cuts changes no item and converges", seed: random.seed)
    }
    // The histories do rename slots, and do keep some slots' origins (the law is not
    // checked on nothing).
    #expect(renamedInAll > 200, "slots renamed over all seeds: \(renamedInAll)")
    #expect(keptInAll > 20, "slots of the cut keeping their origins: \(keptInAll)")
  }

  /// Moves to one place make a chain: each new slot names the previous one as its right
  /// origin, so before origins were rewritten one name from outside the collectable slots
  /// held the whole chain. Now every collectable slot goes, the kept slots of the cut are
  /// renamed, and the list keeps its order when its slots are placed again from their
  /// runs (a decoding, or a peer that never held it) and when later moves arrive.
  @Test func aChainOfMovesToOnePlaceIsCollectedWhole() throws {
    var replica = Replica(id: Self.phone, wallClock: .fixed(1_000))
    let board = EntityKey(type: "column", id: "todo")
    replica.transact { tx in
      for index in 0..<6 {
        tx.insert(.string("card\(index)"), at: index, intoList: "cards", of: board)
      }
    }
    for _ in 0..<30 { replica.transact { $0.move(from: 5, to: 1, inList: "cards", of: board) } }
    let list = try #require(replica.document.movableList(of: "cards", in: board))
    let stable = replica.context
    let collection = try list.collection(stable: stable).get()
    #expect(collection.dropped == Set(list.collectableSlots(stable: stable)))
    #expect(collection.keepingOrigins == 0)
    #expect(collection.rewritten > 0, "\(collection.rewritten)")
    var collected = list
    #expect(collected.collectTombstones(stable: stable) == collection.dropped.count)
    #expect(collected.values == list.values)
    var placedAgain = MovableList()
    placedAgain.apply(collected.delta(since: CausalContext()))
    #expect(placedAgain == collected)
    // The same later moves on a twin that kept every slot and on the collected list.
    var twin = list
    var counter: UInt64 = 1
    for (from, to) in [(0, 5), (3, 1), (5, 0), (2, 4)] {
      let laptop = ReplicaID(rawValue: 9)
      let stamp = Timestamp(rawValue: 10_000 + counter)
      let move = twin.move(
        from: from, to: to, firstDot: Dot(replica: laptop, counter: counter), timestamp: stamp)
      collected.apply(move)
      placedAgain.apply(move)
      counter += 2
    }
    #expect(collected.values == twin.values)
    #expect(placedAgain.values == twin.values)
  }
}
