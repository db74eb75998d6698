import Converge

/// The cards one operation of the boards workload created and deleted.
///
/// A card is *deleted* by an operation that takes it out of a list without putting it
/// into a list that did not show it: the workload's remove, or an Undo or Redo press
/// (of an insert, say) after which the card shows in fewer columns of the device's
/// document and in none it was not in. A move across columns is no deletion: the same
/// transaction inserts the card into the destination.
public struct CardEvents: Sendable, Equatable {
  /// Ids of cards inserted for the first time.
  public var created: [String] = []
  /// Ids of cards deleted, as above.
  public var deleted: [String] = []

  public init() {}
}

extension Workload {
  /// The board's columns: entities of type "column" with a movable list of card ids.
  public static let boardColumns = ["column-todo", "column-doing", "column-review", "column-done"]
  /// The entity type of a column.
  public static let columnType = "column"
  /// The list field of a column holding its cards, in order.
  public static let cardsField = "cards"
  /// New cards stop at this many in all (a roll for one removes one instead).
  static let cardCap = 60
  /// The entity type of a card as a node of the subtask tree.
  public static let cardNodeType = "card"
  /// The parent field of a card node (``DocumentForest``).
  public static let parentField = "parent"
  /// The list field of a card node ordering its subtasks.
  public static let subtasksField = "subtasks"
  /// The share of board edits that reparent a card in the subtask tree.
  static let reparentRate = 0.2

  /// The node of the card `id` in the subtask tree.
  public static func cardNode(_ id: String) -> EntityKey {
    EntityKey(type: cardNodeType, id: id)
  }

  /// The key of the column `id`.
  public static func columnKey(_ id: String) -> EntityKey {
    EntityKey(type: columnType, id: id)
  }

  /// Each card of the board in `document` and the columns showing it.
  static func cardColumns(in document: Document) -> [String: Set<String>] {
    var columns: [String: Set<String>] = [:]
    for column in boardColumns {
      for case .string(let card) in document.list(of: cardsField, in: columnKey(column)) {
        columns[card, default: []].insert(column)
      }
    }
    return columns
  }

  /// The cards an operation deleted, from where cards showed before and after it: those
  /// that show in fewer columns and in no new one.
  static func deletedCards(
    before: [String: Set<String>], after: [String: Set<String>]
  ) -> [String] {
    before.compactMap { card, was in
      let now = after[card] ?? []
      return now.isSubset(of: was) && now.count < was.count ? card : nil
    }.sorted()
  }

  /// One edit of the board: rolls 0..<100 for an insert of a new card (0..<25), a move
  /// within a column (25..<55), a move across columns (55..<85) or a remove (85..<100).
  /// An empty board inserts; a board at the cap removes instead of inserting, and one of
  /// eight cards or fewer inserts instead of removing.
  ///
  /// First, with probability ``reparentRate``, the edit is a move in the subtask tree
  /// instead (``treeEdit(_:cards:)``).
  mutating func boardEdit(_ tx: inout DocumentTransaction) {
    let keys = Self.boardColumns.map(Self.columnKey)
    let lists = keys.map { tx.document.list(of: Self.cardsField, in: $0) }
    let cards = lists.joined().compactMap { value -> String? in
      if case .string(let card) = value { card } else { nil }
    }
    if cards.count >= 2, random.chance(Self.reparentRate) {
      treeEdit(&tx, cards: cards)
      return
    }
    let total = lists.reduce(0) { $0 + $1.count }
    var roll = Int.random(in: 0..<100, using: &random)
    if roll < 25, total >= Self.cardCap { roll = 85 }
    if roll >= 85, total <= 8 { roll = 0 }
    let filled = lists.indices.filter { !lists[$0].isEmpty }
    guard roll >= 25, let source = filled.randomElement(using: &random) else {
      let column = Int.random(in: lists.indices, using: &random)
      let card = newID("card")
      tx.insert(
        .string(card), at: Int.random(in: 0...lists[column].count, using: &random),
        intoList: Self.cardsField, of: keys[column])
      lastCardEvents.created.append(card)
      return
    }
    let from = Int.random(in: lists[source].indices, using: &random)
    let card = lists[source][from]
    let destinations = lists.indices.filter { $0 != source && !lists[$0].contains(card) }
    switch roll {
    case 55..<85 where !destinations.isEmpty:
      let destination = destinations.randomElement(using: &random) ?? destinations[0]
      let to = Int.random(in: 0...lists[destination].count, using: &random)
      tx.remove(at: from, fromList: Self.cardsField, of: keys[source])
      tx.insert(card, at: to, intoList: Self.cardsField, of: keys[destination])
    case 25..<85:
      let to = Int.random(in: lists[source].indices, using: &random)
      tx.move(from: from, to: to, inList: Self.cardsField, of: keys[source])
    default:
      tx.remove(at: from, fromList: Self.cardsField, of: keys[source])
      if case .string(let id) = card { lastCardEvents.deleted.append(id) }
    }
  }

  /// One edit of the subtask tree, over the nodes of the cards `cards`: a move of a card
  /// under another (two in three) or to the roots, at a random place among the new
  /// parent's subtasks (``DocumentTransaction/move(_:under:at:in:orderedBy:)``); one in
  /// twenty deletes the node instead (unless ``reusesIDs`` is off), so moves on other
  /// devices meet deleted parents; with it off, ``deletedNodes`` are left alone. A
  /// parent card not in the tree joins it as a root first. A move under the card's own
  /// subtree is refused on the device and writes nothing.
  mutating func treeEdit(_ tx: inout DocumentTransaction, cards allCards: [String]) {
    let cards = reusesIDs ? allCards : allCards.filter { !deletedNodes.contains($0) }
    guard let card = cards.randomElement(using: &random) else { return }
    let node = Self.cardNode(card)
    // Without reused ids (devices forget mid-run) a node is never deleted: the next move
    // of its card would create its key again, which must not happen once the delete may
    // be stable.
    if random.chance(0.05), reusesIDs {
      tx.delete(node)
      return
    }
    let parent =
      random.chance(2.0 / 3) ? cards.randomElement(using: &random).map(Self.cardNode) : nil
    if let parent, !tx.document.contains(parent) {
      // A card not in the tree yet (or deleted from it) joins it as a root first.
      tx.setParent(nil, of: parent, in: Self.parentField)
    }
    tx.move(
      node, under: parent, at: Int.random(in: 0...3, using: &random), in: Self.parentField,
      orderedBy: Self.subtasksField)
  }
}
