import Converge

/// A CRDT that the test support knows how to change at random, so that one
/// ``randomNetwork(replicas:steps:using:content:)`` builds a network of any of them.
public protocol RandomlyMutable: Mergeable {
  /// What a change writes or adds: a register's value, a set's element.
  associatedtype Content

  /// The state every replica of a random network starts from.
  init()

  /// A random change by `replica`, which returns its delta; `content` draws what the
  /// change writes or adds (a small domain makes concurrent changes to the same content
  /// common).
  static func randomMutation(
    by replica: inout SimulatedReplica<Self>, using generator: inout SeededGenerator,
    content: (inout SeededGenerator) -> Content
  ) -> Self
}

extension RandomlyMutable {
  /// A network of `replicas` states after `steps` random changes and exchanges.
  public static func randomNetwork(
    replicas: Int = 3, steps: Int = 24, using generator: inout SeededGenerator,
    content: (inout SeededGenerator) -> Content
  ) -> ReplicaNetwork<Self> {
    ReplicaNetwork(replicas: replicas, initial: Self(), steps: steps, using: &generator) {
      randomMutation(by: &$0, using: &$1, content: content)
    }
  }
}
