/// A random multi-replica history on reference FugueMax replicas: local inserts (often in
/// forward or backward passages) and deletes, delivered late, in shuffled order and held back
/// until their dependencies arrive, then everything delivered so all replicas converge.
public struct FugueMaxHistory: Sendable {
  /// The replicas after every operation reached every one of them.
  public var replicas: [FugueMaxReference]
  /// Every replica's element ids (tombstones included) after each step, for the strong list
  /// specification.
  public var observations: [[FugueMaxReference.ID]]
  /// Every operation in the order it was made.
  public var operations: [FugueMaxReference.Operation]

  /// The converged list as the non-interleaving checker reads it.
  public var originRecords: [OriginRecord<FugueMaxReference.ID>] {
    (replicas.first?.elements ?? []).map {
      OriginRecord(id: $0.id, leftOrigin: $0.leftOrigin, rightOrigin: $0.rightOrigin)
    }
  }

  /// A history of about `steps` steps on `replicaCount` replicas drawn from `random`.
  public static func random<R: RandomNumberGenerator>(
    replicaCount: Int, steps: Int, using random: inout R
  ) -> FugueMaxHistory {
    var replicas = (0..<replicaCount).map { FugueMaxReference(replica: $0 + 1) }
    var inboxes = Array(repeating: [FugueMaxReference.Operation](), count: replicaCount)
    var operations: [FugueMaxReference.Operation] = []
    var observations: [[FugueMaxReference.ID]] = []
    // A passage: the replica keeps typing forward (cursor moves) or backward (cursor stays).
    var cursors = Array(repeating: (position: 0, forward: true, left: 0), count: replicaCount)
    for _ in 0..<steps {
      let r = Int.random(in: 0..<replicaCount, using: &random)
      let visible = replicas[r].string.count
      switch Int.random(in: 0..<10, using: &random) {
      case 0..<6:
        if cursors[r].left == 0 || cursors[r].position > visible {
          cursors[r] = (
            Int.random(in: 0...visible, using: &random), Bool.random(using: &random),
            Int.random(in: 1...6, using: &random)
          )
        }
        let letter = Character(Unicode.Scalar(UInt8(96 + r * 5 + cursors[r].left)))
        operations.append(replicas[r].insert(letter, at: cursors[r].position))
        if cursors[r].forward { cursors[r].position += 1 }
        cursors[r].left -= 1
      case 6..<8 where visible > 0:
        let at = Int.random(in: 0..<visible, using: &random)
        operations.append(replicas[r].delete(at: at))
        if at < cursors[r].position { cursors[r].position -= 1 }
      default:
        deliver(
          to: r, replicas: &replicas, inboxes: &inboxes, operations: operations, using: &random)
        cursors[r].left = 0
      }
      observations.append(replicas[r].elements.map(\.id))
    }
    for r in 0..<replicaCount {
      inboxes[r] = operations
      deliverReady(to: r, replicas: &replicas, inboxes: &inboxes)
      observations.append(replicas[r].elements.map(\.id))
    }
    return FugueMaxHistory(replicas: replicas, observations: observations, operations: operations)
  }

  /// Hands replica `r` a random, shuffled selection of what it has not seen.
  private static func deliver<R: RandomNumberGenerator>(
    to r: Int, replicas: inout [FugueMaxReference], inboxes: inout [[FugueMaxReference.Operation]],
    operations: [FugueMaxReference.Operation], using random: inout R
  ) {
    let unseen = operations.filter { operation in
      switch operation {
      case .insert(let id, _, _, _, _): !replicas[r].contains(id)
      case .delete: Bool.random(using: &random)
      }
    }
    inboxes[r] += unseen.filter { _ in Int.random(in: 0..<3, using: &random) > 0 }
    inboxes[r].shuffle(using: &random)
    deliverReady(to: r, replicas: &replicas, inboxes: &inboxes)
  }

  /// Applies whatever in the inbox has its dependencies, until nothing more can be applied.
  private static func deliverReady(
    to r: Int, replicas: inout [FugueMaxReference], inboxes: inout [[FugueMaxReference.Operation]]
  ) {
    var progress = true
    while progress {
      progress = false
      var waiting: [FugueMaxReference.Operation] = []
      for operation in inboxes[r] {
        if replicas[r].canApply(operation) {
          replicas[r].apply(operation)
          progress = true
        } else {
          waiting.append(operation)
        }
      }
      inboxes[r] = waiting
    }
  }
}
