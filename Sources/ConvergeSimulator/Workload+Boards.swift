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
  mutating func boardEdit(_ tx: inout DocumentTransaction) {
    let keys = Self.boardColumns.map(Self.columnKey)
    let lists = keys.map { tx.document.list(of: Self.cardsField, in: $0) }
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
}
