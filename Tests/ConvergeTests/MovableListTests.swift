import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// One device's list and its next dot, for the scenarios below.
private struct ListDevice {
  var list = MovableList()
  let replica: ReplicaID
  var counter: UInt64 = 1
  /// Every event this device has made or received (for `delta(since:)`).
  var context = CausalContext()

  init(_ raw: UInt64) { replica = ReplicaID(rawValue: raw) }

  /// Two dots per edit (a move and a remove take two; an insert leaves the second
  /// unused), both noted in the context.
  private mutating func takeDots() -> Dot {
    let first = Dot(replica: replica, counter: counter)
    context.insert(first)
    context.insert(Dot(replica: replica, counter: counter + 1))
    counter += 2
    return first
  }

  mutating func insert(_ value: String, at index: Int, time: UInt64) -> MovableListDelta {
    let dot = takeDots()
    return list.insert(
      .string(value), at: index, firstDot: dot, timestamp: Timestamp(rawValue: time))
  }

  mutating func move(from: Int, to: Int, time: UInt64) -> MovableListDelta {
    let dot = takeDots()
    return list.move(from: from, to: to, firstDot: dot, timestamp: Timestamp(rawValue: time))
  }

  mutating func remove(at index: Int) -> MovableListDelta {
    list.remove(at: index, firstDot: takeDots())
  }

  mutating func receive(_ delta: MovableListDelta, context other: CausalContext) {
    list.apply(delta)
    context.formUnion(other)
  }

  var strings: [String] {
    list.values.map { value in
      if case .string(let string) = value { return string }
      return "?"
    }
  }
}

@Suite struct MovableListTests {
  /// Devices `a` and `b` holding the list `items`, inserted on `a`.
  private func twoDevices(_ items: [String]) -> (ListDevice, ListDevice) {
    var a = ListDevice(1)
    var b = ListDevice(2)
    for (index, item) in items.enumerated() {
      let delta = a.insert(item, at: index, time: UInt64(index + 1))
      b.receive(delta, context: a.context)
    }
    return (a, b)
  }

  /// The sample of ``MovableList``'s documentation.
  @Test func documentationSample() {
    let a = ReplicaID(rawValue: 1)
    let b = ReplicaID(rawValue: 2)
    let a1 = Dot(replica: a, counter: 1)
    let a2 = Dot(replica: a, counter: 2)
    let a3 = Dot(replica: a, counter: 3)
    let b1 = Dot(replica: b, counter: 1)
    let (early, late) = (Timestamp(rawValue: 1), Timestamp(rawValue: 2))
    var phone = MovableList()
    var base = phone.insert(.string("A"), at: 0, firstDot: a1, timestamp: early)
    base.merge(phone.insert(.string("B"), at: 1, firstDot: a2, timestamp: early))
    var laptop = MovableList()
    laptop.apply(base)
    // Both devices move "A" to the end at once, the laptop a moment later.
    let onPhone = phone.move(from: 0, to: 1, firstDot: a3, timestamp: early)
    let onLaptop = laptop.move(from: 0, to: 1, firstDot: b1, timestamp: late)
    phone.apply(onLaptop)
    laptop.apply(onPhone)
    // Both read ["B", "A"]: "A" once, in the slot of the later move.
    #expect(phone.values == [.string("B"), .string("A")])
    #expect(laptop == phone)
  }

  @Test func insertMoveAndRemoveLocally() {
    var (a, _) = twoDevices(["A", "B", "C", "D"])
    #expect(a.strings == ["A", "B", "C", "D"])
    _ = a.move(from: 0, to: 3, time: 10)
    #expect(a.strings == ["B", "C", "D", "A"])
    _ = a.move(from: 3, to: 1, time: 11)
    #expect(a.strings == ["B", "A", "C", "D"])
    _ = a.remove(at: 2)
    #expect(a.strings == ["B", "A", "D"])
    // Inserting a value the list holds moves it.
    _ = a.insert("D", at: 0, time: 12)
    #expect(a.strings == ["D", "B", "A"])
    #expect(a.list.index(of: .string("A")) == 2)
    #expect(a.list.contains(.string("B")) && !a.list.contains(.string("C")))
    // Out-of-range indices are clamped or ignored, never a trap.
    #expect(a.move(from: 7, to: 0, time: 13).isEmpty)
    #expect(a.remove(at: -1).isEmpty)
    _ = a.move(from: 0, to: 99, time: 14)
    #expect(a.strings == ["B", "A", "D"])
  }

  /// The same card moved on two devices at once ends in one place, the later move's, on
  /// both: no duplicate (delete-and-insert gives `[B, C, A, D, E, A]` in Yrs).
  @Test func sameItemMovedConcurrentlyEndsInOnePlace() {
    var (a, b) = twoDevices(["A", "B", "C", "D", "E"])
    let onA = a.move(from: 0, to: 2, time: 20)
    let onB = b.move(from: 0, to: 4, time: 21)
    let (contextA, contextB) = (a.context, b.context)
    a.receive(onB, context: contextB)
    b.receive(onA, context: contextA)
    #expect(a.list == b.list)
    #expect(a.strings == ["B", "C", "D", "E", "A"])
    #expect(b.strings == a.strings)
    // The earlier stamp loses whichever order they arrive in.
    var (c, d) = twoDevices(["A", "B", "C", "D", "E"])
    let onC = c.move(from: 0, to: 2, time: 31)
    let onD = d.move(from: 0, to: 4, time: 30)
    let (contextC, contextD) = (c.context, d.context)
    c.receive(onD, context: contextD)
    d.receive(onC, context: contextC)
    #expect(c.strings == ["B", "C", "A", "D", "E"])
    #expect(d.strings == c.strings)
  }

  /// Three cards one device inserts into one gap stay together and in order against
  /// another device's three in the same gap (the sequence's non-interleaving).
  @Test func itemsInsertedIntoOneGapStayTogether() {
    var (a, b) = twoDevices(["X", "Y"])
    var fromA = MovableListDelta()
    var fromB = MovableListDelta()
    for (offset, item) in ["a1", "a2", "a3"].enumerated() {
      fromA.merge(a.insert(item, at: 1 + offset, time: UInt64(40 + offset)))
    }
    for (offset, item) in ["b1", "b2", "b3"].enumerated() {
      fromB.merge(b.insert(item, at: 1 + offset, time: UInt64(40 + offset)))
    }
    let (contextA, contextB) = (a.context, b.context)
    a.receive(fromB, context: contextB)
    b.receive(fromA, context: contextA)
    #expect(a.list == b.list)
    #expect(a.strings == ["X", "a1", "a2", "a3", "b1", "b2", "b3", "Y"])
    #expect(b.strings == a.strings)
  }

  /// Three cards moved one after another into one gap on each device stay together too.
  @Test func itemsMovedIntoOneGapStayTogether() {
    var (a, b) = twoDevices(["X", "Y", "a1", "a2", "a3", "b1", "b2", "b3"])
    var fromA = MovableListDelta()
    var fromB = MovableListDelta()
    // Each device moves its three cards, one by one, between X and Y.
    for offset in 0..<3 {
      fromA.merge(a.move(from: 2 + offset, to: 1 + offset, time: UInt64(50 + offset)))
    }
    for offset in 0..<3 {
      fromB.merge(b.move(from: 5 + offset, to: 1 + offset, time: UInt64(50 + offset)))
    }
    #expect(a.strings == ["X", "a1", "a2", "a3", "Y", "b1", "b2", "b3"])
    #expect(b.strings == ["X", "b1", "b2", "b3", "Y", "a1", "a2", "a3"])
    let (contextA, contextB) = (a.context, b.context)
    a.receive(fromB, context: contextB)
    b.receive(fromA, context: contextA)
    #expect(a.strings == ["X", "a1", "a2", "a3", "b1", "b2", "b3", "Y"])
    #expect(b.strings == a.strings)
  }

  /// A move concurrent with a remove keeps the item, at the moved place: a move is an
  /// event of the item, as an edit is of an entity, and a remove removes only what it saw.
  @Test func moveConcurrentWithRemoveKeepsTheItem() {
    var (a, b) = twoDevices(["A", "B", "C"])
    let removal = a.remove(at: 0)
    let move = b.move(from: 0, to: 2, time: 60)
    #expect(a.strings == ["B", "C"])
    let (contextA, contextB) = (a.context, b.context)
    a.receive(move, context: contextB)
    b.receive(removal, context: contextA)
    #expect(a.strings == ["B", "C", "A"])
    #expect(b.strings == a.strings)
    #expect(a.list == b.list)
    // A remove that saw the move removes it.
    let later = a.remove(at: 2)
    b.receive(later, context: a.context)
    #expect(a.strings == ["B", "C"])
    #expect(b.strings == ["B", "C"])
  }

  /// Concurrent removes of one item, and a concurrent insert of the same value on two
  /// devices, each end in one item or none, the same on both.
  @Test func concurrentRemovesAndInsertsOfOneValue() {
    var (a, b) = twoDevices(["A", "B"])
    let removeOnA = a.remove(at: 1)
    let removeOnB = b.remove(at: 1)
    let (contextA, contextB) = (a.context, b.context)
    a.receive(removeOnB, context: contextB)
    b.receive(removeOnA, context: contextA)
    #expect(a.strings == ["A"] && b.strings == ["A"])
    let insertOnA = a.insert("N", at: 0, time: 70)
    let insertOnB = b.insert("N", at: 1, time: 71)
    let (contextA2, contextB2) = (a.context, b.context)
    a.receive(insertOnB, context: contextB2)
    b.receive(insertOnA, context: contextA2)
    #expect(a.strings == ["A", "N"])
    #expect(b.strings == a.strings)
    #expect(a.list == b.list)
  }

  /// A slot or item whose events arrive before the events they follow waits, and the
  /// list shows it once they arrive.
  @Test func outOfOrderDeliveryWaits() {
    var a = ListDevice(1)
    let first = a.insert("A", at: 0, time: 1)
    let second = a.insert("B", at: 1, time: 2)
    let move = a.move(from: 1, to: 0, time: 3)
    var b = ListDevice(2)
    b.receive(move, context: CausalContext())
    #expect(b.strings.isEmpty)
    b.receive(second, context: CausalContext())
    b.receive(first, context: CausalContext())
    #expect(b.strings == ["B", "A"])
    #expect(b.list == a.list)
  }

  @Test func changesReportAMoveWithBothIndices() {
    let before: [FieldValue] = ["A", "B", "C", "D"].map { .string($0) }
    let after: [FieldValue] = ["B", "C", "A", "D"].map { .string($0) }
    #expect(ListChange.changes(from: before, to: after) == [.move(.string("A"), from: 0, to: 2)])
    let removed: [FieldValue] = ["B", "D"].map { .string($0) }
    #expect(
      ListChange.changes(from: before, to: removed) == [
        .remove(.string("C"), at: 2), .remove(.string("A"), at: 0),
      ])
    #expect(ListChange.changes(from: before, to: before).isEmpty)
  }

  @Test func deltaSinceSendsWhatAPeerLacks() {
    var (a, b) = twoDevices(["A", "B", "C"])
    _ = a.move(from: 0, to: 2, time: 80)
    _ = a.remove(at: 0)
    _ = a.insert("D", at: 1, time: 81)
    let missing = a.list.delta(since: b.context)
    b.receive(missing, context: a.context)
    #expect(b.list == a.list)
    #expect(b.strings == ["C", "D", "A"])
    // Nothing is lacking once the peer knows everything.
    #expect(a.list.delta(since: a.context).isEmpty)
  }

  /// A list's parts sit behind one shared reference: a copy taken before an edit, a
  /// received delta or a merge keeps its items, its order and its derived maps (the edits
  /// copy the parts first), and an empty list's shared parts stay empty.
  @Test func aCopyNeverChangesWhenTheOtherEdits() {
    var (a, b) = twoDevices(["A", "B", "C"])
    let before = a.list
    let emptyBefore = MovableList()
    _ = a.insert("D", at: 1, time: 10)
    _ = a.move(from: 0, to: 3, time: 11)
    _ = a.remove(at: 0)
    #expect(a.list != before && a.list.count == 3)
    #expect(before.values == [.string("A"), .string("B"), .string("C")])
    before._checkInvariants()
    var merged = before
    merged.merge(a.list)
    #expect(merged == a.list)
    #expect(before.values == [.string("A"), .string("B"), .string("C")])
    let received = b.list
    b.receive(a.list.delta(since: b.context), context: a.context)
    #expect(b.list == a.list)
    #expect(received.values == [.string("A"), .string("B"), .string("C")])
    #expect(received != b.list)
    var fresh = MovableList()
    _ = fresh.insert(
      .string("X"), at: 0, firstDot: Dot(replica: ReplicaID(rawValue: 9), counter: 1),
      timestamp: Timestamp(rawValue: 1))
    #expect(MovableList().isEmpty && emptyBefore.isEmpty && fresh.count == 1)
  }

  /// Changes rebuilt as a `CollectionDifference` turn the old list into the new one, and
  /// move no more items than must move.
  @Test func changesApplyAsACollectionDifference() throws {
    try forEachSeed(count: 300, base: 0x4C15_7C4A) { random in
      let pool = (0..<12).map { FieldValue.string("c\($0)") }
      let before = Array(
        pool.shuffled(using: &random).prefix(Int.random(in: 0...10, using: &random)))
      let after = Array(
        pool.shuffled(using: &random).prefix(Int.random(in: 0...10, using: &random)))
      let changes = ListChange.changes(from: before, to: after)
      let difference = try #require(ListChange.difference(changes), "seed \(random.seed)")
      #expect(before.applying(difference) == after, "seed \(random.seed)")
      let moves = changes.filter { if case .move = $0 { true } else { false } }.count
      let standard = after.difference(from: before).inferringMoves()
      let standardMoves = standard.removals.filter { change in
        if case .remove(_, _, let associated) = change { associated != nil } else { false }
      }.count
      #expect(moves <= standardMoves, "seed \(random.seed)")
    }
  }
}
