/// A resolved forest (``DocumentForest``) with what it takes to bring it up to date after
/// a change without resolving every write again: the writes in resolution order, each
/// node's current write, the writes whose judgement met a cycle, and the visibility of
/// every entity a judgement consulted.
///
/// The forest judges the writes one by one in stamp order (``DocumentForest``), so a
/// change is folded in as in Kleppmann et al.'s undo-do-redo: the judgements from the
/// earliest write the change can affect onwards are undone, the writes are updated, and
/// those judgements are made again. Which write is the earliest affected:
///
/// - a new or rewritten write: its own place (a local move, the newest, is the last);
/// - an entity whose visibility changed: the first write that names it;
/// - a write removed (the node moved again, or was deleted): the first later write whose
///   judgement met a cycle. Removing an edge only shortens ancestor chains, so a later
///   write accepted stays accepted and one refused for a parent that is not visible stays
///   refused; only a judgement that met a cycle can turn. Without such a write after it,
///   a removal changes no other judgement.
///
/// Every judgement before that point sees the same visibility and the same edges (minus
/// removed ones that, by the above, turned none of them), so it stands; from that point
/// the judgements are made again exactly as a full resolution makes them. The result is
/// therefore the full resolution's (a seeded differential law checks it).
///
/// - Complexity: a change costs O(k log n + m h) for k changed entities, n writes, and
///   m writes from the earliest affected one to the last, each judged in O(h) for a
///   forest h deep; plus O(n) to find the first write naming an entity whose
///   visibility changed (a delete or revival of a named entity), and amortized O(1)
///   for compacting the removed writes. A local move (the newest write) is O(h + log n +
///   c) with c the siblings it leaves and joins.
struct ForestResolution: Sendable {
  /// A write's place in the resolution order.
  struct Key: Comparable, Sendable {
    var stamp: LWWRegister<FieldValue>.Stamp
    var node: EntityKey

    static func < (lhs: Key, rhs: Key) -> Bool {
      (lhs.stamp, lhs.node) < (rhs.stamp, rhs.node)
    }
  }

  /// One node's write, in resolution order; `live` is false once the node's write
  /// changed or the node is gone (compacted away later).
  struct Write: Sendable {
    var key: Key
    var move: ParentMove
    var live = true
  }

  private(set) var forest: DocumentForest
  /// The writes, sorted by key, removed ones included until compaction.
  private var writes: [Write] = []
  private var removedCount = 0
  /// Each node's live write's stamp.
  private var current: [EntityKey: LWWRegister<FieldValue>.Stamp] = [:]
  /// The keys of live writes whose judgement met a cycle, sorted.
  private var cycleMet: [Key] = []
  /// The visibility of every entity a judgement consulted, kept up to date for the
  /// entities a change touches.
  private var visibility: [EntityKey: Bool] = [:]

  /// An empty resolution of `field`: no node, no write.
  init(field: String) {
    forest = DocumentForest(field: field)
  }

  /// Resolves the forest of `field` in `document` from scratch.
  init(field: String, in document: Document) {
    forest = DocumentForest(field: field)
    var nodes: [EntityKey] = []
    for (key, record) in document.entities where record.isVisible {
      guard case .parent(let register)? = record.fields[field] else { continue }
      nodes.append(key)
      if let write = Self.write(of: key, register) {
        writes.append(write)
        current[key] = write.key.stamp
      }
    }
    writes.sort { $0.key < $1.key }
    for index in writes.indices { judge(index, in: document) }
    var rootSet = Set<EntityKey>()
    for node in nodes where forest.parents[node] == nil { rootSet.insert(node) }
    for (child, parent) in forest.parents {
      forest.childLists[parent, default: []].append(child)
      if forest.parents[parent] == nil { rootSet.insert(parent) }
    }
    for parent in forest.childLists.keys { forest.childLists[parent]?.sort() }
    forest.roots = rootSet.sorted()
  }

  private static func write(of node: EntityKey, _ register: LWWRegister<FieldValue>) -> Write? {
    guard let stamp = register.stamp, let value = register.value,
      let move = ParentMove(fieldValue: value)
    else { return nil }
    return Write(key: Key(stamp: stamp, node: node), move: move)
  }

  /// The write `node` holds in `document` now: none if it is not visible, lacks the
  /// field or holds no move.
  private func currentWrite(of node: EntityKey, in document: Document) -> Write? {
    guard let record = document.entities[node], record.isVisible,
      case .parent(let register)? = record.fields[forest.field]
    else { return nil }
    return Self.write(of: node, register)
  }

  // MARK: Judging

  private enum Verdict { case accepted, notVisible, cycle }

  /// Whether `node` may hang under `parent` given the edges accepted so far.
  private mutating func verdict(_ parent: EntityKey, for node: EntityKey, in document: Document)
    -> Verdict
  {
    let visible = document.contains(parent)
    visibility[parent] = visible
    guard visible else { return .notVisible }
    var ancestor: EntityKey? = parent
    while let current = ancestor {
      if current == node { return .cycle }
      ancestor = forest.parents[current]
    }
    return .accepted
  }

  /// Judges the write at `index` on the edges accepted so far (``DocumentForest``).
  private mutating func judge(_ index: Int, in document: Document) {
    let write = writes[index]
    guard let target = write.move.parent else { return }
    let node = write.key.node
    var metCycle = false
    switch verdict(target, for: node, in: document) {
    case .accepted:
      forest.parents[node] = target
      return
    case .cycle: metCycle = true
    case .notVisible: break
    }
    forest.rejected[node] = write.move
    if let previous = write.move.previous {
      switch verdict(previous, for: node, in: document) {
      case .accepted: forest.parents[node] = previous
      case .cycle: metCycle = true
      case .notVisible: break
      }
    }
    if metCycle {
      // Judged in order, so mostly appended.
      let at = cycleMet.partitioningIndex { $0 > write.key }
      cycleMet.insert(write.key, at: at)
    }
  }

  // MARK: Updating

  /// The index of the live write `key`, if any.
  private func index(of key: Key) -> Int? {
    var index = writes.partitioningIndex { $0.key >= key }
    while index < writes.count, writes[index].key == key {
      if writes[index].live { return index }
      index += 1
    }
    return nil
  }

  /// Brings the resolution up to date with `document`, which differs from the one it
  /// was last resolved in only in the entities `touched` (and may list others too).
  mutating func update(touched: some Sequence<EntityKey>, in document: Document) {
    var start: Key?
    func lower(to key: Key) { start = start.map { Swift.min($0, key) } ?? key }
    // The nodes whose judgements are undone, and their parents before.
    var before: [EntityKey: EntityKey?] = [:]
    var dirty = Set<EntityKey>()
    var inserted: [Write] = []
    for node in touched {
      dirty.insert(node)
      let new = currentWrite(of: node, in: document)
      let old = current[node]
      if old != new?.key.stamp {
        if let old {
          let key = Key(stamp: old, node: node)
          if let at = index(of: key) {
            writes[at].live = false
            removedCount += 1
          }
          current[node] = nil
          undoJudgement(of: node, key: key, before: &before)
          // The first later judgement that met a cycle may turn without this edge.
          let after = cycleMet.partitioningIndex { $0 > key }
          if after < cycleMet.count { lower(to: cycleMet[after]) }
        }
        if let new {
          inserted.append(new)
          current[node] = new.key.stamp
          lower(to: new.key)
        }
      }
      let visible = document.contains(node)
      if let was = visibility[node], was != visible {
        visibility[node] = visible
        // The first live write that names it; no later than `start` matters.
        for write in writes where write.live {
          if let start, write.key >= start { break }
          if write.move.parent == node || write.move.previous == node {
            lower(to: write.key)
            break
          }
        }
      }
    }
    for write in inserted {
      if let last = writes.last, last.key > write.key {
        writes.insert(write, at: writes.partitioningIndex { $0.key > write.key })
      } else {
        writes.append(write)
      }
    }
    if let start {
      let first = writes.partitioningIndex { $0.key >= start }
      for index in first..<writes.count where writes[index].live {
        undoJudgement(of: writes[index].key.node, key: nil, before: &before)
      }
      cycleMet.removeSubrange(cycleMet.partitioningIndex { $0 >= start }...)
      for index in first..<writes.count where writes[index].live { judge(index, in: document) }
    }
    for (node, old) in before {
      let new = forest.parents[node]
      guard old != new else { continue }
      dirty.insert(node)
      if let old {
        forest.removeChild(node, of: old)
        dirty.insert(old)
      }
      if let new {
        forest.addChild(node, to: new)
        dirty.insert(new)
      }
    }
    for entity in dirty { forest.noteRoot(entity, isRoot: isRoot(entity, in: document)) }
    if removedCount > 32 + writes.count / 2 {
      writes.removeAll { !$0.live }
      removedCount = 0
    }
  }

  /// Forgets the judgement of `node`'s write (`key`, if it is removed: its place among
  /// the writes that met a cycle), noting its parent in `before` the first time.
  private mutating func undoJudgement(
    of node: EntityKey, key: Key?, before: inout [EntityKey: EntityKey?]
  ) {
    if before[node] == nil { before[node] = .some(forest.parents[node]) }
    forest.parents[node] = nil
    forest.rejected[node] = nil
    if let key {
      let at = cycleMet.partitioningIndex { $0 >= key }
      if at < cycleMet.count, cycleMet[at] == key { cycleMet.remove(at: at) }
    }
  }

  /// Whether `entity` is a root: a visible node with the field, or a parent, with no
  /// parent itself.
  private func isRoot(_ entity: EntityKey, in document: Document) -> Bool {
    guard forest.parents[entity] == nil else { return false }
    if !forest.children(of: entity).isEmpty { return true }
    guard let record = document.entities[entity], record.isVisible,
      case .parent? = record.fields[forest.field]
    else { return false }
    return true
  }
}

extension DocumentForest {
  /// An empty forest of `field`, for ``ForestResolution`` to fill.
  init(field: String) {
    self.field = field
  }

  /// Adds `child` to `parent`'s sorted children.
  mutating func addChild(_ child: EntityKey, to parent: EntityKey) {
    var children = childLists.removeValue(forKey: parent) ?? []
    children.insert(child, at: children.partitioningIndex { $0 > child })
    childLists[parent] = children
  }

  /// Removes `child` from `parent`'s sorted children.
  mutating func removeChild(_ child: EntityKey, of parent: EntityKey) {
    guard var children = childLists.removeValue(forKey: parent) else { return }
    let at = children.partitioningIndex { $0 >= child }
    if at < children.count, children[at] == child { children.remove(at: at) }
    if !children.isEmpty { childLists[parent] = children }
  }

  /// Puts `entity` among the sorted roots or takes it out.
  mutating func noteRoot(_ entity: EntityKey, isRoot: Bool) {
    let at = roots.partitioningIndex { $0 >= entity }
    let present = at < roots.count && roots[at] == entity
    if isRoot, !present { roots.insert(entity, at: at) }
    if !isRoot, present { roots.remove(at: at) }
  }
}
