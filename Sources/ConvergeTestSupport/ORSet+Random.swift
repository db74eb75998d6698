import Converge

extension ORSet: RandomlyMutable where Element: Comparable {
  /// A random change by `replica`, which returns its delta: mostly adds and removes of
  /// elements from `element` (a small domain makes re-adds and concurrent add/remove
  /// pairs common), sometimes a `removeAll`.
  ///
  /// `Element: Comparable` lets a remove pick a present element without depending on
  /// `Set` iteration order, which changes from one process to the next.
  public static func randomMutation(
    by replica: inout SimulatedReplica<ORSet>, using generator: inout SeededGenerator,
    content element: (inout SeededGenerator) -> Element
  ) -> ORSet {
    switch Int.random(in: 0..<100, using: &generator) {
    case 0..<55:
      return replica.state.insert(element(&generator), replica: replica.id) ?? ORSet()
    case 55..<95:
      let present = replica.state.elements.sorted()
      let target =
        present.isEmpty || Int.random(in: 0..<4, using: &generator) == 0
        ? element(&generator)
        : present[Int.random(in: present.indices, using: &generator)]
      return replica.state.remove(target, replica: replica.id) ?? ORSet()
    default:
      return replica.state.removeAll(replica: replica.id) ?? ORSet()
    }
  }
}
