/// A reference FugueMax list, one tree node per character, written straight from Weidner and
/// Kleppmann, "The Art of the Fugue: Minimizing Interleaving in Collaborative Text Editing"
/// (arXiv:2305.00583), the `fugue-max-simple` variant.
///
/// It is deliberately slow and plain: the run-length sequence in `Converge` is checked
/// against it, so it must be obviously right rather than fast. Every element is a node of a
/// tree whose in-order traversal (left children, the node, right children) is the list,
/// tombstones included. A character typed between a left origin `a` and a right origin `b`
/// (its neighbours at insertion time, tombstones included) becomes a right child of `a` when
/// `a` has none yet, and a left child of `b` otherwise. Left siblings sort by id; right
/// siblings sort by their right origin, the one further right first (that is what makes it
/// FugueMax rather than Fugue: backward passages stay whole), ties by id.
///
/// Complexity: every operation is O(n) or worse in the elements n, tombstones included.
public struct FugueMaxReference: Sendable {
  /// An element's id: the inserting replica and its per-replica counter; ties order by it.
  public struct ID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var replica: Int
    public var counter: Int

    public init(replica: Int, counter: Int) {
      self.replica = replica
      self.counter = counter
    }

    public static func < (lhs: ID, rhs: ID) -> Bool {
      (lhs.replica, lhs.counter) < (rhs.replica, rhs.counter)
    }

    public var description: String { "\(replica).\(counter)" }
  }

  /// Which side of its parent a node hangs on.
  public enum Side: Sendable, Hashable { case left, right }

  /// One operation as it travels between replicas.
  public enum Operation: Sendable, Hashable {
    /// A character typed between `leftOrigin` and `rightOrigin` (nil: the start or the end),
    /// hung on `side` of its parent (the left origin for `.right`, the right origin for `.left`).
    case insert(id: ID, value: Character, leftOrigin: ID?, rightOrigin: ID?, side: Side)
    case delete(id: ID)

    /// The elements a replica must hold before it can apply this operation.
    public var dependencies: [ID] {
      switch self {
      case .insert(_, _, let left, let right, _): [left, right].compactMap { $0 }
      case .delete(let id): [id]
      }
    }
  }

  /// An element with the origins it was typed between, for the non-interleaving checker.
  public struct Element: Sendable, Hashable {
    public var id: ID
    public var value: Character
    public var leftOrigin: ID?
    public var rightOrigin: ID?
    public var isDeleted: Bool

    public init(id: ID, value: Character, leftOrigin: ID?, rightOrigin: ID?, isDeleted: Bool) {
      self.id = id
      self.value = value
      self.leftOrigin = leftOrigin
      self.rightOrigin = rightOrigin
      self.isDeleted = isDeleted
    }
  }

  private struct Node: Sendable {
    var element: Element
    var parent: ID?
    var side: Side
    var leftChildren: [ID] = []
    var rightChildren: [ID] = []
  }

  public let replica: Int
  private var counter = 0
  private var nodes: [ID: Node] = [:]
  private var rootRightChildren: [ID] = []
  private var rootLeftChildren: [ID] = []

  public init(replica: Int) { self.replica = replica }

  /// Every element in list order, tombstones included.
  public var elements: [Element] { order().compactMap { nodes[$0]?.element } }

  /// The visible text.
  public var string: String { String(elements.filter { !$0.isDeleted }.map(\.value)) }

  /// Whether this replica holds `id`.
  public func contains(_ id: ID) -> Bool { nodes[id] != nil }

  /// Whether `operation` can be applied now (its origins or target are here).
  public func canApply(_ operation: Operation) -> Bool {
    operation.dependencies.allSatisfy(contains)
  }

  /// Types `value` so that it becomes the visible character at `position`.
  public mutating func insert(_ value: Character, at position: Int) -> Operation {
    let all = order()
    let visible = all.indices.filter { nodes[all[$0]]?.element.isDeleted == false }
    precondition(position >= 0 && position <= visible.count, "position out of range")
    // The gap right after the visible left neighbour: tombstones after it lie to the right.
    let gap = position == 0 ? 0 : visible[position - 1] + 1
    let leftOrigin = gap > 0 ? all[gap - 1] : nil
    let rightOrigin = gap < all.count ? all[gap] : nil
    let leftHasRightChildren =
      leftOrigin.map { nodes[$0]?.rightChildren.isEmpty == false } ?? !rootRightChildren.isEmpty
    counter += 1
    let operation = Operation.insert(
      id: ID(replica: replica, counter: counter), value: value, leftOrigin: leftOrigin,
      rightOrigin: rightOrigin, side: leftHasRightChildren && rightOrigin != nil ? .left : .right)
    apply(operation)
    return operation
  }

  /// Deletes the visible character at `position`.
  public mutating func delete(at position: Int) -> Operation {
    let visible = order().filter { nodes[$0]?.element.isDeleted == false }
    let operation = Operation.delete(id: visible[position])
    apply(operation)
    return operation
  }

  /// Applies a local or remote operation; a repeated one changes nothing.
  /// - Precondition: ``canApply(_:)``.
  public mutating func apply(_ operation: Operation) {
    precondition(canApply(operation), "operation applied before its dependencies")
    switch operation {
    case .delete(let id):
      nodes[id]?.element.isDeleted = true
    case .insert(let id, let value, let leftOrigin, let rightOrigin, let side):
      guard nodes[id] == nil else { return }
      if id.replica == replica { counter = max(counter, id.counter) }
      let parent = side == .right ? leftOrigin : rightOrigin
      let element = Element(
        id: id, value: value, leftOrigin: leftOrigin, rightOrigin: rightOrigin, isDeleted: false)
      var siblings = children(of: parent, side: side)
      let positions = side == .right ? listPositions() : [:]
      let index =
        siblings.firstIndex { sibling in
          guard let other = nodes[sibling]?.element else { return false }
          return Self.sortsBefore(element, other, side: side, positions: positions)
        } ?? siblings.endIndex
      siblings.insert(id, at: index)
      nodes[id] = Node(element: element, parent: parent, side: side)
      setChildren(siblings, of: parent, side: side)
    }
  }

  /// FugueMax's sibling order: left siblings by id; right siblings by right origin, the one
  /// further right first (the end is furthest), then by id.
  private static func sortsBefore(
    _ new: Element, _ other: Element, side: Side, positions: [ID: Int]
  ) -> Bool {
    guard side == .right else { return new.id < other.id }
    let end = Int.max
    let newRight = new.rightOrigin.map { positions[$0] ?? end } ?? end
    let otherRight = other.rightOrigin.map { positions[$0] ?? end } ?? end
    if newRight != otherRight { return newRight > otherRight }
    return new.id < other.id
  }

  private func children(of parent: ID?, side: Side) -> [ID] {
    guard let parent else { return side == .right ? rootRightChildren : rootLeftChildren }
    return side == .right ? nodes[parent]?.rightChildren ?? [] : nodes[parent]?.leftChildren ?? []
  }

  private mutating func setChildren(_ children: [ID], of parent: ID?, side: Side) {
    switch (parent, side) {
    case (nil, .right): rootRightChildren = children
    case (nil, .left): rootLeftChildren = children
    case (let id?, .right): nodes[id]?.rightChildren = children
    case (let id?, .left): nodes[id]?.leftChildren = children
    }
  }

  private func listPositions() -> [ID: Int] {
    Dictionary(uniqueKeysWithValues: order().enumerated().map { ($1, $0) })
  }

  /// In-order traversal without recursion, so long passages cannot exhaust the stack.
  private func order() -> [ID] {
    enum Step {
      case expand(ID)
      case emit(ID)
    }
    var result: [ID] = []
    result.reserveCapacity(nodes.count)
    var stack: [Step] = []
    func pushSubtrees(left: [ID], right: [ID], node: ID?) {
      for child in right.reversed() { stack.append(.expand(child)) }
      if let node { stack.append(.emit(node)) }
      for child in left.reversed() { stack.append(.expand(child)) }
    }
    pushSubtrees(left: rootLeftChildren, right: rootRightChildren, node: nil)
    while let step = stack.popLast() {
      switch step {
      case .emit(let id): result.append(id)
      case .expand(let id):
        guard let node = nodes[id] else { continue }
        pushSubtrees(left: node.leftChildren, right: node.rightChildren, node: id)
      }
    }
    return result
  }
}
