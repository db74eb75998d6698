import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The incremental forest (``ForestResolution``, behind ``Document/forest(of:)``) against
/// the full resolution (``DocumentForest/init(field:in:)``): seeded random histories of
/// two to four devices that move nodes (local moves, and remote moves older than local
/// ones arriving by sync, single commits out of order too), delete and revive them and
/// create new ones; after every step each device's incrementally kept forest must equal
/// the one resolved from scratch, exactly (parents, children, roots, refused writes).
@Suite struct ForestIncrementalTests {
  private static let field = "parent"
  private static let list = "children"

  private struct Device {
    var replica: Replica
    /// Kept up to date step by step, from the entities each step touched.
    var resolution: ForestResolution
    var resolvedAt: CausalContext
  }

  /// Throws unless `forest` is the full resolution of `document`.
  private func expectFull(_ forest: DocumentForest, in document: Document, _ label: String)
    throws
  {
    let full = DocumentForest(field: Self.field, in: document)
    guard forest == full else {
      throw LawViolation(
        law: "the incremental forest is the full resolution (\(label))",
        witnesses: [
          .init(label: "incremental", state: "\(forest)"), .init(label: "full", state: "\(full)"),
        ])
    }
  }

  @Test func incrementalResolutionEqualsTheFullOne() throws {
    // Histories whose forests refused a write: the law must hold where cycles arose.
    var refusing = 0
    var remoteSteps = 0
    try forEachSeed(count: 400, base: 0xF0_2E57) { random in
      let deviceCount = Int.random(in: 2...4, using: &random)
      var nodes = (0..<Int.random(in: 3...10, using: &random)).map {
        EntityKey(type: "node", id: "n\($0)")
      }
      var devices: [Device] = []
      var commits: [DocumentDelta] = []
      for index in 0..<deviceCount {
        // Clocks apart, so that one device's moves are older than another's.
        let replica = Replica(
          id: ReplicaID(rawValue: UInt64(index + 1)),
          wallClock: .fixed(1_000 + UInt64.random(in: 0...3, using: &random)))
        devices.append(
          Device(
            replica: replica, resolution: ForestResolution(field: Self.field),
            resolvedAt: replica.document.context))
      }
      let created = devices[0].replica.transact { tx in
        for node in nodes { tx.setParent(nil, of: node, in: Self.field) }
      }
      commits.append(created.delta)
      for index in 1..<deviceCount { devices[index].replica.apply(created.delta) }
      var kept: [Document] = []
      var sawRefusal = false
      for _ in 0..<Int.random(in: 10...60, using: &random) {
        let device = Int.random(in: 0..<deviceCount, using: &random)
        switch Int.random(in: 0..<10, using: &random) {
        case 0, 1:
          // A sync: everything another device holds, or one of its commits out of order.
          let other = Int.random(in: 0..<deviceCount, using: &random)
          let delta =
            Bool.random(using: &random)
            ? devices[other].replica.delta(since: devices[device].replica.document.context)
            : commits.randomElement(using: &random) ?? created.delta
          devices[device].replica.apply(try DocumentDelta(decoding: delta.encoded()))
          remoteSteps += 1
        case 2:
          if Int.random(in: 0..<3, using: &random) == 0 {
            kept.append(devices[device].replica.document)
          }
          let node = EntityKey(type: "node", id: "n\(nodes.count)")
          let parent = nodes.randomElement(using: &random)
          nodes.append(node)
          let commit = devices[device].replica.transact { tx in
            tx.setParent(parent, of: node, in: Self.field)
          }
          commits.append(commit.delta)
        default:
          let node = nodes.randomElement(using: &random) ?? nodes[0]
          let target = Bool.random(using: &random) ? nil : nodes.randomElement(using: &random)
          let commit = devices[device].replica.transact { tx in
            switch Int.random(in: 0..<8, using: &random) {
            case 0: tx.delete(node)
            case 1:
              // A move of a node that may be deleted revives it.
              tx.setParent(target, of: node, in: Self.field)
            case 2: tx.setValue(.string("x"), for: "title", of: node)
            default:
              tx.move(
                node, under: target, at: Int.random(in: 0...3, using: &random), in: Self.field,
                orderedBy: Self.list)
            }
          }
          if !commit.delta.isEmpty { commits.append(commit.delta) }
        }
        // The device's own resolution, brought up to date from what the step touched
        // (sometimes with unrelated entities listed too: a superset must do).
        let document = devices[device].replica.document
        guard var touched = document.keysTouched(since: devices[device].resolvedAt) else {
          throw LawViolation(
            law: "a small change lists the entities it touched", witnesses: [])
        }
        if Bool.random(using: &random), let extra = nodes.randomElement(using: &random) {
          touched.append(extra)
        }
        devices[device].resolution.update(touched: touched, in: document)
        devices[device].resolvedAt = document.context
        try expectFull(devices[device].resolution.forest, in: document, "update")
        if !devices[device].resolution.forest.rejected.isEmpty { sawRefusal = true }
        // The document's own cached forest, read at random steps (so one read folds in
        // several steps), and an older copy's after its original moved on.
        if Bool.random(using: &random) {
          try expectFull(document.forest(of: Self.field), in: document, "cache")
        }
        if let old = kept.randomElement(using: &random) {
          try expectFull(old.forest(of: Self.field), in: old, "older copy")
        }
      }
      if sawRefusal { refusing += 1 }
    }
    print("incremental forests: \(refusing) histories with a refused write, \(remoteSteps) syncs")
    #expect(refusing > 20)
    #expect(remoteSteps > 300)
  }

  /// Copies of one document share its forest cache: copies that move nodes on several
  /// threads at once each read their own forest, equal to the full resolution.
  @Test func copiesOnSeveralThreadsReadTheirOwnForests() async throws {
    var replica = Replica(id: ReplicaID(rawValue: 1))
    let nodes = (0..<200).map { EntityKey(type: "node", id: "n\($0)") }
    replica.transact { tx in
      for (index, node) in nodes.enumerated() {
        tx.setParent(index == 0 ? nil : nodes[(index - 1) / 2], of: node, in: Self.field)
      }
    }
    _ = replica.document.forest(of: Self.field)
    let start = replica
    let mismatches = await withTaskGroup(of: Int.self) { group in
      for task in 0..<4 {
        group.addTask {
          var copy = start
          var random = SeededGenerator(seed: 0xF0_2E57 &+ UInt64(task))
          var mismatches = 0
          for _ in 0..<50 {
            let node = nodes[Int.random(in: 1..<nodes.count, using: &random)]
            let parent = nodes[Int.random(in: 0..<nodes.count, using: &random)]
            copy.transact { tx in tx.setParent(parent, of: node, in: Self.field) }
            let forest = copy.document.forest(of: Self.field)
            if forest != DocumentForest(field: Self.field, in: copy.document) { mismatches += 1 }
          }
          return mismatches
        }
      }
      return await group.reduce(0, +)
    }
    #expect(mismatches == 0, "seeds \(0xF0_2E57) to \(0xF0_2E57 + 3), one a task")
    #expect(
      start.document.forest(of: Self.field) == DocumentForest(field: Self.field, in: start.document)
    )
  }

  /// A copy edited apart from its original (the same replica id, so the same dots for
  /// other moves) reads its own forest, and so does the original: the cache they shared
  /// is not trusted once either changes. Before the fix, the second reader got the first
  /// one's forest (their contexts are equal).
  @Test func aCopyEditedApartReadsItsOwnForestAtAnEqualContext() throws {
    var original = Replica(id: ReplicaID(rawValue: 1))
    let (root, a, b) = (
      EntityKey(type: "node", id: "root"), EntityKey(type: "node", id: "a"),
      EntityKey(type: "node", id: "b")
    )
    original.transact { tx in
      tx.setParent(nil, of: root, in: Self.field)
      tx.setParent(root, of: a, in: Self.field)
      tx.setParent(root, of: b, in: Self.field)
    }
    _ = original.document.forest(of: Self.field)
    var preview = original
    preview.transact { tx in tx.setParent(a, of: b, in: Self.field) }
    original.transact { tx in tx.setParent(b, of: a, in: Self.field) }
    #expect(preview.document.context == original.document.context)
    for document in [preview.document, original.document, preview.document] {
      #expect(document.forest(of: Self.field) == DocumentForest(field: Self.field, in: document))
    }
    #expect(preview.document.forest(of: Self.field) != original.document.forest(of: Self.field))
  }

  @Test func documentsWithoutParentFieldsAllocateNoCache() throws {
    var replica = Replica(id: ReplicaID(rawValue: 1))
    let note = EntityKey(type: "note", id: "a")
    replica.transact { tx in tx.setValue(.string("title"), for: "title", of: note) }
    #expect(replica.document.forests == nil)
    #expect(replica.document.forest(of: Self.field).roots.isEmpty)
    let commit = replica.transact { tx in tx.setParent(nil, of: note, in: Self.field) }
    #expect(replica.document.forests != nil)
    // A replica that receives a parent field, and a decoded document, allocate theirs.
    var other = Replica(id: ReplicaID(rawValue: 2))
    other.apply(commit.delta)
    #expect(other.document.forests != nil)
    #expect(try Document(decoding: replica.document.encoded()).forests != nil)
    #expect(try Document(decoding: Document().encoded()).forests == nil)
  }
}
