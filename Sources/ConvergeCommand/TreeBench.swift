import Converge
import ConvergeTestSupport
import Foundation

/// `converge bench --trees [--json]`: a forest of 1,000 and of 10,000 tasks in one replica
/// (issue #47 item 2): what resolving the forest costs after a change, what a read of the
/// resolved forest costs, what a reparent costs as a transaction and on the wire, and
/// what applying a remote reparent and reading the forest costs.
///
/// The forest is a random recursive tree (each task under a random earlier one, one in
/// twenty a root), so h, its depth, is about ln n, as in an outline; a chain n deep would
/// make resolving O(n²).
enum TreeBench {
  static let sizes = [1_000, 10_000]
  static let reparents = 101
  /// How many of the phone's local moves are newer than the laptop's concurrent move
  /// in the "remote older move" figure (the phone's first move of each round ties with
  /// the laptop's on the clock, and the laptop's replica id breaks the tie).
  static let olderBy = 4

  static func run(json: Bool) -> Int32 {
    var rows: [(key: String, label: String, value: String)] = []
    var intact = true
    for size in sizes {
      let figures = measure(nodes: size)
      intact = intact && figures.intact
      let n = "\(size)"
      rows += [
        ("nodes_\(n)", "tasks in the forest", n),
        ("depth_\(n)", "its depth", "\(figures.depth)"),
        (
          "resolve_us_\(n)", "resolve after a change (median)",
          ListBench.fixed(figures.resolveMilliseconds * 1e3) + " µs"
        ),
        (
          "cached_read_us_\(n)", "forest(of:) unchanged (median)",
          ListBench.fixed(figures.cachedMicroseconds) + " µs"
        ),
        (
          "children_us_\(n)", "children(of:in:orderedBy:) of a parent, unchanged (median)",
          ListBench.fixed(figures.childrenMicroseconds) + " µs"
        ),
        (
          "reparent_us_\(n)", "a reparent (transaction, forest resolved before) (median)",
          ListBench.fixed(figures.reparentMicroseconds) + " µs"
        ),
        ("reparent_bytes_\(n)", "a reparent's delta, encoded (median)", "\(figures.bytes) B"),
        (
          "remote_us_\(n)", "apply a remote reparent, then read the forest (median)",
          ListBench.fixed(figures.remoteMilliseconds * 1e3) + " µs"
        ),
        (
          "older_us_\(n)",
          "apply a remote move older than the last \(olderBy) local ones, then read the forest (median)",
          ListBench.fixed(figures.olderMilliseconds * 1e3) + " µs"
        ),
        ("intact_\(n)", "every task in one forest, same on both devices", "\(figures.intact)"),
      ]
    }
    FileHandleOutput.printRows(rows, json: json)
    return intact ? 0 : 1
  }

  struct Figures {
    var depth = 0
    var resolveMilliseconds = 0.0
    var cachedMicroseconds = 0.0
    var childrenMicroseconds = 0.0
    var reparentMicroseconds = 0.0
    var bytes = 0
    var remoteMilliseconds = 0.0
    var olderMilliseconds = 0.0
    var intact = false
  }

  static func task(_ index: Int) -> EntityKey { EntityKey(type: "task", id: "t\(index)") }

  /// A random task and a random task outside its subtree in `document`'s forest.
  static func randomReparent(
    in document: Document, nodes: Int, using random: inout SeededGenerator
  ) -> (node: EntityKey, parent: EntityKey) {
    let forest = document.forest(of: "parent")
    let node = task(Int.random(in: 1..<nodes, using: &random))
    var parent = task(Int.random(in: 0..<nodes, using: &random))
    while forest.isAncestor(node, of: parent) {
      parent = task(Int.random(in: 0..<nodes, using: &random))
    }
    return (node, parent)
  }

  static func measure(nodes: Int) -> Figures {
    let clock = ContinuousClock()
    var random = SeededGenerator(seed: 0x7EE_BE7 &+ UInt64(nodes))
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_700_000_000_000))
    phone.transact { tx in
      for index in 0..<nodes {
        let parent =
          index == 0 || Int.random(in: 0..<20, using: &random) == 0
          ? nil : task(Int.random(in: 0..<index, using: &random))
        tx.setParent(parent, of: task(index), in: "parent")
      }
    }
    // From the encoded state, not a fork: a fork shares the phone's cache of resolved
    // forests, and would find each forest the phone resolved at the same events.
    guard let state = try? Document(decoding: phone.document.encoded()) else { return Figures() }
    var laptop = Replica(
      document: state, id: ReplicaID(rawValue: 2), wallClock: .fixed(1_700_000_000_000))
    var figures = Figures()
    figures.depth =
      (0..<nodes).map { phone.document.forest(of: "parent").path(to: task($0)).count }
      .max() ?? 0

    var resolve: [Double] = []
    var cached: [Double] = []
    var children: [Double] = []
    var reparent: [Double] = []
    var bytes: [Int] = []
    var remote: [Double] = []
    for _ in 0..<reparents {
      let node = task(Int.random(in: 1..<nodes, using: &random))
      // A parent outside the node's subtree, so that the move is written.
      let before = phone.document.forest(of: "parent")  // resolved before the transaction
      var parent = task(Int.random(in: 0..<nodes, using: &random))
      while before.isAncestor(node, of: parent) {
        parent = task(Int.random(in: 0..<nodes, using: &random))
      }
      var start = clock.now
      let commit = phone.transact { $0.setParent(parent, of: node, in: "parent") }
      reparent.append(ListBench.seconds(clock.now - start) * 1e6)
      bytes.append(commit.delta.encoded().count)
      start = clock.now
      let forest = phone.document.forest(of: "parent")
      resolve.append(ListBench.seconds(clock.now - start) * 1e3)
      start = clock.now
      let again = phone.document.forest(of: "parent")
      cached.append(ListBench.seconds(clock.now - start) * 1e6)
      let holder = forest.parent(of: node) ?? parent
      start = clock.now
      let shown = phone.document.children(of: holder, in: "parent", orderedBy: "subtasks")
      children.append(ListBench.seconds(clock.now - start) * 1e6)
      figures.intact = again == forest && shown.count == forest.children(of: holder).count
      start = clock.now
      laptop.apply(commit.delta)
      _ = laptop.document.forest(of: "parent")
      remote.append(ListBench.seconds(clock.now - start) * 1e3)
    }
    // A remote move older than the phone's latest: the laptop moves a task, the phone
    // makes `olderBy + 1` moves of its own meanwhile (each read), then applies the
    // laptop's, which undoes and redoes the judgements of the moves after it.
    var older: [Double] = []
    for _ in 0..<reparents {
      var move = randomReparent(in: laptop.document, nodes: nodes, using: &random)
      let fromLaptop = laptop.transact { $0.setParent(move.parent, of: move.node, in: "parent") }
      var fromPhone: [DocumentDelta] = []
      for _ in 0...olderBy {
        move = randomReparent(in: phone.document, nodes: nodes, using: &random)
        let commit = phone.transact { $0.setParent(move.parent, of: move.node, in: "parent") }
        fromPhone.append(commit.delta)
        _ = phone.document.forest(of: "parent")
      }
      let start = clock.now
      phone.apply(fromLaptop.delta)
      _ = phone.document.forest(of: "parent")
      older.append(ListBench.seconds(clock.now - start) * 1e3)
      for delta in fromPhone { laptop.apply(delta) }
    }
    figures.olderMilliseconds = ListBench.median(older)
    let phoneForest = phone.document.forest(of: "parent")
    var inForest = 0
    for index in 0..<nodes where phoneForest.path(to: task(index)).count <= nodes { inForest += 1 }
    figures.intact =
      figures.intact && inForest == nodes
      && laptop.document.forest(of: "parent") == phoneForest
    figures.resolveMilliseconds = ListBench.median(resolve)
    figures.cachedMicroseconds = ListBench.median(cached)
    figures.childrenMicroseconds = ListBench.median(children)
    figures.reparentMicroseconds = ListBench.median(reparent)
    figures.bytes = bytes.sorted()[bytes.count / 2]
    figures.remoteMilliseconds = ListBench.median(remote)
    return figures
  }
}
