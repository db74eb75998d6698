import Converge

extension Replica {
  /// A replica with an id drawn from `generator` and a fixed, possibly skewed wall clock,
  /// so that runs repeat exactly.
  public static func seeded(using generator: inout SeededGenerator, skewMilliseconds: Int64 = 0)
    -> Replica
  {
    let base: Int64 = 1_700_000_000_000
    let wall = UInt64(clamping: base + skewMilliseconds)
    return Replica(id: .random(using: &generator), wallClock: .fixed(wall))
  }

  /// Runs one random transaction of one to four edits over a small space of entities,
  /// fields and values, so that concurrent replicas collide often: creates, deletes,
  /// register writes, set adds and removes, text inserts and deletes (with non-ASCII
  /// scalars), and list inserts, moves and removes.
  @discardableResult
  public mutating func randomTransaction(using generator: inout SeededGenerator) -> Commit {
    transact { tx in
      for _ in 0..<Int.random(in: 1...4, using: &generator) {
        tx.randomEdit(using: &generator)
      }
    }
  }
}

extension DocumentTransaction {
  /// One random edit (see ``Replica/randomTransaction(using:)``).
  public mutating func randomEdit(using generator: inout SeededGenerator) {
    let key = EntityKey(type: "note", id: ["a", "b", "c"].randomElement(using: &generator) ?? "a")
    switch Int.random(in: 0..<13, using: &generator) {
    case 0:
      create(key)
    case 1:
      delete(key)
    case 2, 3:
      let values: [FieldValue] = [
        .null, .bool(true), .int(-3), .double(2.5), .string("x"), .string("é"),
        .record(["x": .int(1), "column": .string("todo")]),
      ]
      let field = ["title", "status"].randomElement(using: &generator) ?? "title"
      setValue(values.randomElement(using: &generator) ?? .null, for: field, of: key)
    case 4, 5:
      let tag = FieldValue.string(["home", "work", "red"].randomElement(using: &generator) ?? "")
      insert(tag, into: "tags", of: key)
    case 6:
      let tag = FieldValue.string(["home", "work", "red"].randomElement(using: &generator) ?? "")
      remove(tag, from: "tags", of: key)
    case 7, 8:
      let length = document.sequence(of: "body", in: key)?.count ?? 0
      let pieces = ["a", "bc", "xyz", "é", "👩‍💻", "中文"]
      let text = pieces.randomElement(using: &generator) ?? "a"
      insertText(text, at: Int.random(in: 0...length, using: &generator), in: "body", of: key)
    case 10:
      let card = FieldValue.string(["A", "B", "C", "D"].randomElement(using: &generator) ?? "A")
      let count = document.list(of: "cards", in: key).count
      insert(card, at: Int.random(in: 0...count, using: &generator), intoList: "cards", of: key)
    case 11:
      let count = document.list(of: "cards", in: key).count
      guard count > 0 else { return }
      move(
        from: Int.random(in: 0..<count, using: &generator),
        to: Int.random(in: 0..<count, using: &generator), inList: "cards", of: key)
    case 12:
      let count = document.list(of: "cards", in: key).count
      guard count > 0 else { return }
      remove(at: Int.random(in: 0..<count, using: &generator), fromList: "cards", of: key)
    default:
      let length = document.sequence(of: "body", in: key)?.count ?? 0
      guard length > 0 else { return }
      let start = Int.random(in: 0..<length, using: &generator)
      let end = Swift.min(length, start + Int.random(in: 1...3, using: &generator))
      deleteText(start..<end, in: "body", of: key)
    }
  }
}

/// A few replicas that made random transactions and exchanged a random part of them, in
/// random order with duplicates: realistic states for law tests, with concurrency,
/// deletions, tombstones and buffered text.
public struct DocumentNetwork: Sendable {
  /// The replicas, with distinct seeded ids; the second one's clock is an hour behind.
  public var replicas: [Replica]
  /// Every delta made, in the order made.
  public var deltas: [DocumentDelta]

  /// `replicaCount` replicas after `rounds` rounds; in each, one replica makes a random
  /// transaction and each other replica may apply a random earlier delta.
  public init(replicaCount: Int = 3, rounds: Int = 8, using generator: inout SeededGenerator) {
    replicas = (0..<replicaCount).map { index in
      // The second replica's clock is an hour behind.
      Replica.seeded(using: &generator, skewMilliseconds: index == 1 ? -3_600_000 : Int64(index))
    }
    deltas = []
    for _ in 0..<rounds {
      let author = Int.random(in: 0..<replicaCount, using: &generator)
      let commit = replicas[author].randomTransaction(using: &generator)
      deltas.append(commit.delta)
      for index in replicas.indices where index != author {
        // Deliver a random earlier delta (maybe again, maybe out of order).
        if Bool.random(using: &generator), let delta = deltas.randomElement(using: &generator) {
          replicas[index].apply(delta)
        }
      }
    }
  }
}

extension DocumentNetwork {
  /// Each replica's document as a store loads its own tagged snapshot of it (texts
  /// deferred, ``Document/init(decoding:tag:key:)``), under a key drawn from `generator`.
  public func taggedLoads(using generator: inout SeededGenerator) throws -> [(
    replica: Replica, loaded: Document
  )] {
    let key = SnapshotKey(using: &generator)
    return try replicas.map { replica in
      let bytes = replica.document.encoded()
      return (replica, try Document(decoding: bytes, tag: key.tag(of: bytes), key: key))
    }
  }
}
