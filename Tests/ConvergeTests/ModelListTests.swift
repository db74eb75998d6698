import Converge
import ConvergeTestSupport
import Testing

/// A board column as a task app stores it: its title and its cards' ids in order.
struct BoardColumn: EntityModel, Equatable {
  static let entityType = "column"
  var title = ""
  var cards: [String] = []

  static let schema = EntitySchema<BoardColumn>(
    .register("title", \.title),
    .list("cards", \.cards))
}

/// `.list(…)` fields of typed models: reads, writes that reorder with the fewest moves,
/// and the concurrent cases through typed updates.
@Suite struct ModelListTests {
  @Test func aReorderIsOneMove() throws {
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    let (id, _) = phone.create(BoardColumn(title: "Todo", cards: ["A", "B", "C", "D"]))
    #expect(phone.get(BoardColumn.self, id: id)?.cards == ["A", "B", "C", "D"])
    let commit = try phone.update(BoardColumn.self, id: id) { column in
      // What SwiftUI's `move(fromOffsets: [3], toOffset: 0)` does to the array.
      column.cards.insert(column.cards.remove(at: 3), at: 0)
    }
    #expect(phone.get(BoardColumn.self, id: id)?.cards == ["D", "A", "B", "C"])
    let key = EntityKey(type: "column", id: id)
    let expected: [ListChange] = [.move(.string("D"), from: 3, to: 0)]
    #expect(commit.changes[key]?.listChanges["cards"] == expected)
    // Two events: the new slot and the delete of the old one.
    #expect(commit.delta.context.eventCount == 2)
  }

  @Test func theSameCardMovedByTwoTypedUpdatesEndsInOnePlace() throws {
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(1_000))
    let (id, created) = phone.create(BoardColumn(cards: ["A", "B", "C", "D", "E"]))
    laptop.apply(created.delta)
    let onPhone = try phone.update(BoardColumn.self, id: id) {
      $0.cards = ["B", "A", "C", "D", "E"]
    }
    let onLaptop = try laptop.update(BoardColumn.self, id: id) {
      $0.cards = ["B", "C", "D", "E", "A"]
    }
    phone.apply(onLaptop.delta)
    laptop.apply(onPhone.delta)
    let cards = try #require(phone.get(BoardColumn.self, id: id)?.cards)
    #expect(cards.sorted() == ["A", "B", "C", "D", "E"])
    #expect(laptop.get(BoardColumn.self, id: id)?.cards == cards)
  }

  /// Random targets (reorders, inserts, removes, duplicates) are reached exactly.
  @Test func writesReachAnyTarget() throws {
    try forEachSeed(count: 200, base: 0x4C15_7E0D) { random in
      var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
      let pool = (0..<10).map { "card\($0)" }
      let start = Array(pool.shuffled(using: &random).prefix(Int.random(in: 0...6, using: &random)))
      let (id, _) = replica.create(BoardColumn(cards: start))
      for _ in 0..<3 {
        let count = Int.random(in: 0...8, using: &random)
        let target = (0..<count).compactMap { _ in pool.randomElement(using: &random) }
        try replica.update(BoardColumn.self, id: id) { $0.cards = target }
        var seen = Set<String>()
        let expected = target.filter { seen.insert($0).inserted }
        let read = replica.get(BoardColumn.self, id: id)?.cards
        guard read == expected else {
          throw LawViolation(
            law: "a list write reaches its target",
            witnesses: [
              .init(label: "target", state: "\(expected)"),
              .init(label: "read", state: "\(read ?? [])"),
            ])
        }
      }
    }
  }
}
