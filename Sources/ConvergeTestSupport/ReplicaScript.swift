import Converge

/// Arbitrary bytes read as a script for three replicas: local edits, deliveries of
/// their deltas in any order (with duplicates and drops), and partial syncs. At the end
/// every replica receives everything, and the script checks that all of them converge,
/// that the converged texts interleave no concurrent passage (``checkNonInterleaving(_:)``)
/// and that no two characters ever swapped places at any replica
/// (``checkStrongListOrder(observations:final:)``).
///
/// With `moves`, the edits also insert, move and remove items of a list field and move
/// notes in a tree (a parent field, with each parent's list ordering its children), and
/// the script checks that the converged forest holds every visible node once, in no
/// cycle. Without it, bytes mean what they always meant, so the crashers kept from
/// earlier fuzzing replay as they were found.
///
/// Fuzzers feed it raw bytes (`Fuzz/`), and crashers found there are replayed by unit
/// tests through ``run(_:moves:transport:)``.
public enum ReplicaScript {
  /// Why a script failed.
  public struct Divergence: Error, CustomStringConvertible {
    public var description: String
  }

  /// Runs `bytes` as a script. Every delivered delta passes through `transport` (for
  /// example, encode and decode), whose error fails the script.
  ///
  /// - Throws: ``Divergence`` if the replicas do not converge.
  @discardableResult
  public static func run(
    _ bytes: some Collection<UInt8>, moves: Bool = false,
    transport: (DocumentDelta) throws -> DocumentDelta = { $0 }
  ) throws -> [Replica] {
    var input = bytes.makeIterator()
    func next() -> Int? { input.next().map(Int.init) }
    var replicas = (1...3).map {
      Replica(id: ReplicaID(rawValue: UInt64($0)), wallClock: .fixed(UInt64($0) * 1_000))
    }
    var outbox: [DocumentDelta] = []
    // Per note, every replica's items after every step.
    var observations: [EntityKey: [[Dot]]] = [:]
    func observe() {
      for replica in replicas {
        for field in textFields(of: replica.document) where field.field == "body" {
          observations[field.key, default: []].append(field.text.itemIDs)
        }
      }
    }

    while let opcode = next() {
      let replica = opcode % 3
      switch (opcode / 3) % 4 {
      case 0, 1:
        guard let detail = next(), let argument = next() else { break }
        let commit = replicas[replica].transact {
          edit(&$0, detail: detail, argument: argument, moves: moves)
        }
        outbox.append(commit.delta)
      case 2:
        // Deliver a pending delta (maybe once more); high bit of the index: drop it.
        guard let index = next(), !outbox.isEmpty else { break }
        let position = index % outbox.count
        if index >= 128 {
          outbox.remove(at: position)
        } else {
          replicas[replica].apply(try transport(outbox[position]))
        }
      default:
        // A partial handshake: `replica` sends another what it lacks.
        guard let other = next() else { break }
        let target = other % 3
        let delta = replicas[replica].delta(since: replicas[target].context)
        replicas[target].apply(try transport(delta))
      }
      observe()
    }

    // Heal: everyone receives everything, twice round, through the transport.
    for _ in 0..<2 {
      for source in replicas.indices {
        for target in replicas.indices where target != source {
          let delta = replicas[source].delta(since: replicas[target].context)
          replicas[target].apply(try transport(delta))
        }
      }
    }
    for (index, replica) in replicas.enumerated() {
      replica.document._checkInvariants()
      guard !replica.document.hasPendingChanges else {
        throw Divergence(description: "replica \(index) still waits for dependencies")
      }
      guard replica.document == replicas[0].document else {
        throw Divergence(description: "replica \(index) differs from replica 0 after healing")
      }
    }
    if moves, let failure = forestFailure(in: replicas[0].document) {
      throw Divergence(description: failure)
    }
    if let failure = nonInterleavingFailures(of: replicas[0].document).first {
      throw Divergence(description: failure)
    }
    for (key, seen) in observations {
      guard let text = replicas[0].document.sequence(of: "body", in: key) else { continue }
      do {
        try checkStrongListOrder(observations: seen, final: text.itemIDs)
      } catch {
        throw Divergence(description: "text \(key)/body: \(error)")
      }
    }
    return replicas
  }

  /// One local edit chosen by two bytes; with `moves`, one of twelve kinds, the last
  /// four list and tree edits (``moveEdit(_:kind:key:argument:)``).
  private static func edit(
    _ tx: inout DocumentTransaction, detail: Int, argument: Int, moves: Bool
  ) {
    let key = EntityKey(type: "note", id: ["a", "b"][detail & 1])
    let length = tx.document.sequence(of: "body", in: key)?.count ?? 0
    if moves, (detail >> 1) % 12 >= 8 {
      moveEdit(&tx, kind: (detail >> 1) % 12 - 8, key: key, argument: argument)
      return
    }
    switch (detail >> 1) % 8 {
    case 0: tx.create(key)
    case 1: tx.delete(key)
    case 2: tx.setValue(.int(Int64(argument)), for: "title", of: key)
    case 3: tx.insert(.int(Int64(argument % 4)), into: "tags", of: key)
    case 4: tx.remove(.int(Int64(argument % 4)), from: "tags", of: key)
    case 5, 6:
      let pieces = ["a", "bc", "é", "👩‍💻", "中"]
      tx.insertText(
        pieces[argument % pieces.count], at: argument % (length + 1), in: "body", of: key)
    default:
      guard length > 0 else { return }
      let start = argument % length
      tx.deleteText(start..<Swift.min(length, start + 1 + argument % 3), in: "body", of: key)
    }
  }

  /// The notes a tree edit moves, and the list field and parent field it edits.
  private static let nodes = ["a", "b", "c"].map { EntityKey(type: "note", id: $0) }

  /// A list or tree edit: insert a value into `key`'s list `cards`, move one, remove one,
  /// or move a note under another note (or to the roots) at a place among its children.
  private static func moveEdit(
    _ tx: inout DocumentTransaction, kind: Int, key: EntityKey, argument: Int
  ) {
    let count = tx.document.list(of: "cards", in: key).count
    switch kind {
    case 0:
      tx.insert(.int(Int64(argument % 6)), at: argument % (count + 1), intoList: "cards", of: key)
    case 1:
      guard count > 0 else { return }
      tx.move(
        from: argument % count, to: (argument / 7) % count, inList: "cards", of: key)
    case 2:
      guard count > 0 else { return }
      tx.remove(at: argument % count, fromList: "cards", of: key)
    default:
      let node = nodes[argument % 3]
      let parent = [nil] + nodes.map(Optional.some)
      tx.move(
        node, under: parent[(argument / 3) % 4], at: argument / 12 % 3, in: "parent",
        orderedBy: "children")
    }
  }

  /// Why `document`'s forest of `parent` fields is not one: a visible node missing from
  /// it or shown twice, a node in a cycle, children ordered other than resolved.
  static func forestFailure(in document: Document) -> String? {
    let forest = document.forest(of: "parent")
    var seen = Set<EntityKey>()
    var stack = forest.roots
    while let node = stack.popLast() {
      guard seen.insert(node).inserted else { return "tree: \(node) shows twice" }
      guard forest.path(to: node).count <= document.keys.count + 1 else {
        return "tree: \(node) is in a cycle"
      }
      let ordered = document.children(of: node, in: "parent", orderedBy: "children")
      guard Set(ordered) == Set(forest.children(of: node)) else {
        return "tree: \(node)'s ordered children are not its children"
      }
      stack += ordered
    }
    for key in document.keys where document.fieldKind("parent", of: key) == .parent {
      guard seen.contains(key) else { return "tree: \(key) is lost" }
    }
    return nil
  }
}
