import Converge
import Testing

// The code samples of the Moving Items article
// (`Sources/Converge/Converge.docc/MovingItems.md`), verbatim, kept compiling and
// passing. Edit the article and this file together.

@Suite struct MovingItemsArticleTests {
  let column = EntityKey(type: "column", id: "todo")

  /// The article's list setup: a phone and a laptop (its clock a second later) share a
  /// column whose cards are A to E.
  static func listSetUp() -> (phone: Replica, laptop: Replica) {
    let column = EntityKey(type: "column", id: "todo")
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(2_000))
    let setup = phone.transact { tx in
      for (index, card) in ["A", "B", "C", "D", "E"].enumerated() {
        tx.insert(.string(card), at: index, intoList: "cards", of: column)
      }
    }
    laptop.apply(setup.delta)

    return (phone, laptop)
  }

  private func cards(_ replica: Replica) -> String {
    replica.document.list(of: "cards", in: column).map {
      if case .string(let card) = $0 { card } else { "?" }
    }.joined()
  }

  @Test func theSameCardMovedOnTwoDevices() {
    var (phone, laptop) = Self.listSetUp()
    let a = phone.transact { $0.move(from: 0, to: 2, inList: "cards", of: column) }
    let b = laptop.transact { $0.move(from: 0, to: 4, inList: "cards", of: column) }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    // Both: B C D E A (A once, where the later move put it)

    #expect(cards(phone) == "BCDEA")
    #expect(phone.document == laptop.document)
  }

  @Test func aMoveAgainstARemove() {
    var (phone, laptop) = Self.listSetUp()
    let a = phone.transact { $0.move(from: 1, to: 3, inList: "cards", of: column) }
    let b = laptop.transact { $0.remove(at: 1, fromList: "cards", of: column) }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    // Both: A C D B E (the move keeps B, at its new place)

    #expect(cards(phone) == "ACDBE")
    #expect(phone.document == laptop.document)
  }

  @Test func threeCardsIntoOneGapOnEachDevice() {
    var (phone, laptop) = Self.listSetUp()
    let a = phone.transact { tx in
      for (offset, card) in ["P", "Q", "R"].enumerated() {
        tx.insert(.string(card), at: 2 + offset, intoList: "cards", of: column)
      }
    }
    let b = laptop.transact { tx in
      for (offset, card) in ["X", "Y", "Z"].enumerated() {
        tx.insert(.string(card), at: 2 + offset, intoList: "cards", of: column)
      }
    }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    // Both: A B P Q R X Y Z C D E (each device's cards together, in their order)

    #expect(cards(phone) == "ABPQRXYZCDE")
    #expect(phone.document == laptop.document)
  }

  /// The article's tree setup: the same two devices share the tasks X, Y, P and Q, all
  /// roots.
  static func treeSetUp() -> (phone: Replica, laptop: Replica) {
    let (x, y, p, q) = (
      EntityKey(type: "task", id: "X"), EntityKey(type: "task", id: "Y"),
      EntityKey(type: "task", id: "P"), EntityKey(type: "task", id: "Q")
    )
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(2_000))
    let setup = phone.transact { tx in
      for task in [x, y, p, q] { tx.setParent(nil, of: task, in: "parent") }
    }
    laptop.apply(setup.delta)

    return (phone, laptop)
  }

  let x = EntityKey(type: "task", id: "X")
  let y = EntityKey(type: "task", id: "Y")
  let p = EntityKey(type: "task", id: "P")
  let q = EntityKey(type: "task", id: "Q")

  @Test func xUnderYAgainstYUnderX() {
    var (phone, laptop) = Self.treeSetUp()
    let a = phone.transact { $0.setParent(y, of: x, in: "parent") }
    let b = laptop.transact { $0.setParent(x, of: y, in: "parent") }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    let forest = phone.document.forest(of: "parent")
    // Both: X under Y (the earlier move); Y stays a root, where it was
    // forest.path(to: x) == [y, x]

    #expect(forest.path(to: x) == [y, x])
    #expect(forest.parent(of: y) == nil)
    #expect(laptop.document.forest(of: "parent") == forest)
  }

  @Test func aSubtreeMovedUnderItsOwnDescendant() {
    var (phone, laptop) = Self.treeSetUp()
    let chain = phone.transact { tx in
      tx.setParent(x, of: y, in: "parent")  // X ⊃ Y ⊃ P
      tx.setParent(y, of: p, in: "parent")
    }
    laptop.apply(chain.delta)
    let a = phone.transact { $0.setParent(q, of: x, in: "parent") }
    let b = laptop.transact { $0.setParent(p, of: q, in: "parent") }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    let forest = phone.document.forest(of: "parent")
    // Both: Q ⊃ X ⊃ Y ⊃ P; Q under P would close a cycle, so Q stays a root
    // forest.path(to: p) == [q, x, y, p]

    #expect(forest.path(to: p) == [q, x, y, p])
    #expect(forest.roots == [q])
    #expect(laptop.document.forest(of: "parent") == forest)
  }

  @Test func aMoveUnderADeletedParent() {
    var (phone, laptop) = Self.treeSetUp()
    let a = phone.transact { $0.delete(p) }
    let b = laptop.transact { $0.setParent(p, of: x, in: "parent") }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    let forest = phone.document.forest(of: "parent")
    // Both: P is deleted and X stays where it was (a root): no node is lost
    // forest.parent(of: x) == nil

    #expect(forest.parent(of: x) == nil)
    #expect(forest.roots.contains(x))
    #expect(!phone.document.contains(p))
    #expect(laptop.document.forest(of: "parent") == forest)
  }

  @Test func childrenInOrder() {
    var (phone, laptop) = Self.treeSetUp()
    let a = phone.transact { tx in
      tx.move(x, under: p, at: 0, in: "parent", orderedBy: "subtasks")
      tx.move(y, under: p, at: 1, in: "parent", orderedBy: "subtasks")
    }
    let b = laptop.transact { tx in
      tx.move(x, under: q, at: 0, in: "parent", orderedBy: "subtasks")
    }
    phone.apply(b.delta)
    laptop.apply(a.delta)
    // Both: P's subtasks [Y], Q's subtasks [X] (the later move of X)
    let underP = phone.document.children(of: p, in: "parent", orderedBy: "subtasks")
    let underQ = phone.document.children(of: q, in: "parent", orderedBy: "subtasks")

    #expect(underP == [y])
    #expect(underQ == [x])
    #expect(laptop.document.children(of: q, in: "parent", orderedBy: "subtasks") == [x])
  }
}
