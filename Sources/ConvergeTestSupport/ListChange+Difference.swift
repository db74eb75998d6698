import Converge

extension ListChange {
  /// `changes` as a `CollectionDifference`, a move as a removal and an insertion
  /// associated with each other, or `nil` if they are not a valid difference: what a
  /// test checks a list's reported changes against (`before.applying(difference)` must
  /// give the list after).
  package static func difference(_ changes: [ListChange]) -> CollectionDifference<FieldValue>? {
    var steps: [CollectionDifference<FieldValue>.Change] = []
    for change in changes {
      switch change {
      case .remove(let value, let index):
        steps.append(.remove(offset: index, element: value, associatedWith: nil))
      case .insert(let value, let index):
        steps.append(.insert(offset: index, element: value, associatedWith: nil))
      case .move(let value, let from, let to):
        steps.append(.remove(offset: from, element: value, associatedWith: to))
        steps.append(.insert(offset: to, element: value, associatedWith: from))
      }
    }
    return CollectionDifference(steps)
  }
}
