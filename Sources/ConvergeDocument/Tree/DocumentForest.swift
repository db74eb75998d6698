/// The forest that the parent fields of one name form, resolved without cycles.
///
/// Each node's parent field is a last-writer-wins register holding a ``ParentMove``: the
/// parent the node moved under and the parent it had when it moved. Registers converge,
/// so every replica holding the same events holds the same writes; the forest is a pure
/// function of them, and so the same on every replica, whatever the order the events
/// arrived in:
///
/// 1. Take the current write of every visible node, in stamp order (timestamp, then the
///    writer's replica and counter; then the node's key).
/// 2. Accept a write's parent if it is a visible entity and the edge closes no cycle with
///    the edges accepted so far. Otherwise fall back to the parent the node had when the
///    move was made, under the same test; if that fails too, the node is a root.
///
/// The accepted edges form a forest at every step (an edge is accepted only if it closes
/// no cycle, and each node gets at most one), so the result has no cycle, and every
/// visible node is in it: with a parent, or as a root. This is a read-time form of
/// Kleppmann et al., "A highly-available move operation for replicated trees" (IEEE
/// TPDS 2021): there every move of the history is applied in timestamp order and one
/// that would close a cycle is skipped, leaving the node where the moves before it put
/// it; here only each node's latest move is kept, and "where it was" is the parent that
/// move recorded. Two devices that move X under Y and Y under X at once both end with the
/// earlier move applied and the later node where it was; a subtree moved under its own
/// descendant on one device while that descendant moved elsewhere on another ends
/// wherever the earlier move leaves room for.
///
/// A node whose parent is deleted falls back the same way (the parent it had before, or
/// the roots), so deleting a node never loses its children: an app that deletes a
/// subtree deletes its nodes, and a child moved under one of them concurrently on another
/// device goes back where it was.
///
/// ```swift
/// let forest = document.forest(of: "parent")
/// let children = forest.children(of: project)  // resolved, sorted by key
/// let path = forest.path(to: task)  // [a root, …, task]
/// ```
///
/// - Complexity: resolving from scratch is O(n log n + n h) for n nodes with a written
///   parent and a forest h deep; ``Document/forest(of:)`` keeps the latest resolution per
///   field and brings it up to date after a change by judging again only the writes the
///   change can affect (a local move: O(h + log n)). Every read of a resolved forest is
///   O(1) or O(h) as stated.
public struct DocumentForest: Sendable, Equatable {
  /// The field whose writes this forest resolves.
  public let field: String
  /// Each node with a resolved parent, and that parent.
  var parents: [EntityKey: EntityKey] = [:]
  /// Each parent's resolved children, sorted by key.
  var childLists: [EntityKey: [EntityKey]] = [:]
  /// The visible entities that have the field or are some node's parent, and have no
  /// parent themselves, sorted by key.
  public internal(set) var roots: [EntityKey] = []
  /// The writes that did not stand as written, by node: the move fell back to the
  /// previous parent or to the roots (for diagnostics and tests).
  public internal(set) var rejected: [EntityKey: ParentMove] = [:]

  /// Resolves the forest of `field` in `document` from scratch, every write judged in
  /// stamp order: the reference that ``ForestResolution``, which ``Document/forest(of:)``
  /// keeps up to date incrementally, must equal.
  init(field: String, in document: Document) {
    self.field = field
    var writes: [(stamp: LWWRegister<FieldValue>.Stamp, node: EntityKey, move: ParentMove)] = []
    var nodes: [EntityKey] = []
    for (key, record) in document.entities where record.isVisible {
      guard case .parent(let register)? = record.fields[field] else { continue }
      nodes.append(key)
      if let stamp = register.stamp, let value = register.value,
        let move = ParentMove(fieldValue: value)
      {
        writes.append((stamp, key, move))
      }
    }
    writes.sort { ($0.stamp, $0.node) < ($1.stamp, $1.node) }
    for write in writes {
      guard let target = write.move.parent else { continue }
      if accepts(target, for: write.node, in: document) {
        parents[write.node] = target
        continue
      }
      rejected[write.node] = write.move
      if let previous = write.move.previous, accepts(previous, for: write.node, in: document) {
        parents[write.node] = previous
      }
    }
    var rootSet = Set<EntityKey>()
    for node in nodes where parents[node] == nil { rootSet.insert(node) }
    for (child, parent) in parents {
      childLists[parent, default: []].append(child)
      if parents[parent] == nil { rootSet.insert(parent) }
    }
    for parent in childLists.keys { childLists[parent]?.sort() }
    roots = rootSet.sorted()
  }

  /// Whether `node` may hang under `parent` given the edges accepted so far: the parent
  /// is visible, and the node is not the parent or one of its ancestors.
  private func accepts(_ parent: EntityKey, for node: EntityKey, in document: Document) -> Bool {
    guard document.contains(parent) else { return false }
    var ancestor: EntityKey? = parent
    while let current = ancestor {
      if current == node { return false }
      ancestor = parents[current]
    }
    return true
  }

  /// The resolved parent of `node`; `nil` for a root or an entity outside the forest.
  ///
  /// - Complexity: O(1) expected.
  public func parent(of node: EntityKey) -> EntityKey? { parents[node] }

  /// The resolved children of `node`, sorted by key (``Document/children(of:in:orderedBy:)``
  /// orders them by a list field).
  ///
  /// - Complexity: O(1) expected.
  public func children(of node: EntityKey) -> [EntityKey] { childLists[node] ?? [] }

  /// The nodes from a root down to `node`, both included.
  ///
  /// - Complexity: O(h) for the node's depth h.
  public func path(to node: EntityKey) -> [EntityKey] {
    var path = [node]
    var current = node
    while let parent = parents[current] {
      path.append(parent)
      current = parent
    }
    return path.reversed()
  }

  /// Whether `ancestor` is `node` or above it.
  ///
  /// - Complexity: O(h).
  public func isAncestor(_ ancestor: EntityKey, of node: EntityKey) -> Bool {
    var current: EntityKey? = node
    while let key = current {
      if key == ancestor { return true }
      current = parents[key]
    }
    return false
  }

  /// How many nodes have a resolved parent.
  public var edgeCount: Int { parents.count }
}
