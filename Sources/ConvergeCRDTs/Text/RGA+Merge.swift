import ConvergeCore

extension RGA {
  /// Integrates a delta from another replica (or this one): inserts whose origin is
  /// present and deletes whose target is present take effect now, the rest is buffered
  /// and takes effect when what it depends on arrives. Duplicates are no-ops; malformed
  /// runs (counters or Lamport numbers out of range, an origin not older than its
  /// insert) are ignored, identically on every replica.
  ///
  /// - Returns: the visible changes, in order, each in the coordinates of the text right
  ///   before it.
  /// - Complexity: O(d (log n + s)) for d runs in the delta and s concurrent sibling runs
  ///   skipped; buffered inserts and deletes are indexed by what they wait for, so p
  ///   buffered items drain in O(p log p) overall.
  @discardableResult
  public mutating func apply(_ delta: RGADelta) -> [TextChange] {
    var changes: [TextChange] = []
    changes.reserveCapacity(delta.inserts.count + delta.deletes.count)
    reserveContent(for: delta)
    for insert in delta.inserts { receive(insert, changes: &changes) }
    for delete in delta.deletes { receive(delete, changes: &changes) }
    checkInvariantsIfEnabled()
    return changes
  }

  /// Makes room in `content` for the scalars of `delta` at once, so that a large delta
  /// does not grow the buffer step by step; the capacity still grows geometrically, so
  /// that many small deltas do not copy it each time.
  private mutating func reserveContent(for delta: RGADelta) {
    var incoming = 0
    for insert in delta.inserts { incoming += insert.content.count }
    guard content.capacity - content.count < incoming else { return }
    content.reserveCapacity(Swift.max(content.count + incoming, 2 * content.capacity))
  }

  /// Joins `other` into this text: afterwards it holds every insert and delete of both.
  ///
  /// - Complexity: O(n + m) for the two texts, plus the cost of ``apply(_:)`` for what
  ///   `other` adds.
  public mutating func merge(_ other: RGA) {
    apply(other.delta(since: dots))
  }

  /// This text joined with `other`.
  public func merging(_ other: RGA) -> RGA {
    var result = self
    result.merge(other)
    return result
  }

  /// This text with `delta` applied.
  public func merging(_ delta: RGADelta) -> RGA {
    var result = self
    result.apply(delta)
    return result
  }

  /// Every insert id and delete dot this text holds, buffered ones included.
  ///
  /// - Complexity: O(n + p).
  public var dots: CausalContext {
    var context = CausalContext()
    addDots(to: &context)
    return context
  }

  /// Adds every insert id and delete dot this text holds to `context`.
  ///
  /// - Complexity: O(r + e) for e index entries and delete runs.
  public func addDots(to context: inout CausalContext) {
    forEachIntegratedRange { replica, lower, upper, _ in
      context.insert(replica: replica, counters: lower...(upper - 1))
    }
    for insert in pendingInserts {
      context.insert(
        replica: insert.id.replica,
        counters: insert.id.counter...(insert.id.counter + UInt64(insert.length - 1)))
    }
    for (replica, log) in deleteLog {
      for delete in log {
        context.insert(
          replica: replica, counters: delete.dot.counter...(delete.dot.counter + delete.count - 1))
      }
    }
  }

  /// Exactly the inserts and deletes whose dots `context` lacks. Tombstones that
  /// arrived without their content are sent without it.
  ///
  /// - Complexity: O(e + d log d) for e index entries and delete runs and d runs in the
  ///   result, plus the size of the result.
  public func delta(since context: CausalContext) -> RGADelta {
    var inserts: [RGADelta.Insert] = []
    // The ranges come replica by replica from the index; a leaf's runs mostly share one.
    var knownReplica: ReplicaID?
    var known = CounterRanges()
    forEachIntegratedRange { replica, lower, upper, leaf in
      if knownReplica != replica {
        knownReplica = replica
        known = context.counters(of: replica)
      }
      let lacking = CounterRanges(lower...(upper - 1)).subtracting(known)
      for range in lacking.ranges {
        appendInserts(
          replica: replica, lower: range.lowerBound, upper: range.upperBound + 1,
          leaf: leaf, to: &inserts)
      }
    }
    for pending in pendingInserts {
      let known = context.counters(of: pending.id.replica)
      let lower = pending.id.counter
      let full = CounterRanges(lower...(lower + UInt64(pending.length - 1)))
      for range in full.subtracting(known).ranges {
        inserts.append(
          pending.slice(
            from: Int(range.lowerBound - lower),
            length: Int(range.upperBound - range.lowerBound + 1)))
      }
    }
    var deletes: [RGADelta.Delete] = []
    for (replica, log) in deleteLog {
      let known = context.counters(of: replica)
      for delete in log {
        let lower = delete.dot.counter
        let full = CounterRanges(lower...(lower + delete.count - 1))
        for range in full.subtracting(known).ranges {
          deletes.append(
            delete.slice(
              from: range.lowerBound - lower, count: range.upperBound - range.lowerBound + 1))
        }
      }
    }
    return RGADelta(inserts: inserts, deletes: deletes)
  }

  /// Appends the integrated items `lower..<upper` of `replica`, all held by `leaf`.
  private func appendInserts(
    replica: ReplicaID, lower: UInt64, upper: UInt64, leaf: Int,
    to inserts: inout [RGADelta.Insert]
  ) {
    for run in leaves[leaf].runs where run.replica == replica {
      let runUpper = run.counter + UInt64(run.length)
      let from = Swift.max(lower, run.counter)
      let to = Swift.min(upper, runUpper)
      guard from < to else { continue }
      let offset = Int(from - run.counter)
      let id = Dot(replica: replica, counter: from)
      let lamport = run.lamport + UInt64(offset)
      let origin = offset == 0 ? run.origin : Dot(replica: replica, counter: from - 1)
      // Tombstones that arrived without content travel without it.
      inserts.append(
        !run.hasContent
          ? RGADelta.Insert(
            id: id, lamport: lamport, origin: origin, rightOrigin: run.rightOrigin,
            droppedLength: Int(to - from))
          : RGADelta.Insert(
            id: id, lamport: lamport, origin: origin, rightOrigin: run.rightOrigin,
            scalars: scalars(of: run, from: offset, count: Int(to - from))))
    }
  }

  // MARK: Integration

  private func isWellFormed(_ insert: RGADelta.Insert) -> Bool {
    let length = UInt64(insert.length)
    guard length > 0, insert.id.counter > 0 else { return false }
    let (_, idOverflow) = insert.id.counter.addingReportingOverflow(length)
    let (lamportEnd, lamportOverflow) = insert.lamport.addingReportingOverflow(length)
    guard !idOverflow, !lamportOverflow, lamportEnd <= Self.lamportLimit else { return false }
    // Both origins checked without collecting them in an array (one allocation per run).
    return isAcceptable(origin: insert.origin, of: insert.id, length: length)
      && isAcceptable(origin: insert.rightOrigin, of: insert.id, length: length)
  }

  /// Whether `origin` can be an origin of the run of `length` ids from `id`.
  private func isAcceptable(origin: Dot?, of id: Dot, length: UInt64) -> Bool {
    guard let origin else { return true }
    guard origin.counter > 0 else { return false }
    // An origin inside the run itself could never be satisfied.
    let isInside =
      origin.replica == id.replica && origin.counter >= id.counter
      && origin.counter - id.counter < length
    return !isInside
  }

  private mutating func receive(_ insert: RGADelta.Insert, changes: inout [TextChange]) {
    guard isWellFormed(insert) else { return }
    let lower = insert.id.counter
    let upper = lower + UInt64(insert.length)
    if pendingInserts.isEmpty, integratesNone(of: insert.id.replica, lower, upper) {
      // All new, nothing buffered (the common case): no ranges to compute.
      maxLamport = Swift.max(maxLamport, insert.lamport + UInt64(insert.length - 1))
      integrateOrBuffer(insert, changes: &changes)
      return
    }
    var lacking = notIntegrated(of: insert.id.replica, lower, upper)
    if !pendingInserts.isEmpty {
      lacking = lacking.flatMap { pendingInserts.missing(replica: insert.id.replica, $0) }
    }
    for range in lacking {
      let piece = insert.slice(from: Int(range.lowerBound - lower), length: range.count)
      maxLamport = Swift.max(maxLamport, piece.lamport + UInt64(piece.length - 1))
      integrateOrBuffer(piece, changes: &changes)
    }
  }

  /// Integrates `insert`, then every buffered insert that waited for it or for one of
  /// the inserts this integrates in turn, each exactly once; an insert whose origin or
  /// right origin is not integrated is buffered until it is.
  private mutating func integrateOrBuffer(
    _ insert: RGADelta.Insert, changes: inout [TextChange]
  ) {
    // The common case, nothing buffered, makes no work list.
    guard place(insert, changes: &changes), !pendingInserts.isEmpty else { return }
    var work: [RGADelta.Insert] = pendingInserts.takeWaiting(
      replica: insert.id.replica, lower: insert.id.counter,
      upper: insert.id.counter + UInt64(insert.length)
    ).reversed()
    while let next = work.popLast() {
      guard place(next, changes: &changes), !pendingInserts.isEmpty else { continue }
      let woken = pendingInserts.takeWaiting(
        replica: next.id.replica, lower: next.id.counter,
        upper: next.id.counter + UInt64(next.length))
      work.append(contentsOf: woken.reversed())
    }
  }

  /// Integrates `insert` if both its origins are integrated, buffers it otherwise;
  /// returns whether it integrated it.
  private mutating func place(_ insert: RGADelta.Insert, changes: inout [TextChange]) -> Bool {
    var left: ItemLocation?
    if let origin = insert.origin {
      left = locate(origin)
      if left == nil {
        pendingInserts.add(insert, waitingFor: origin)
        return false
      }
    }
    // Usually nothing was typed between the two origins since: the right origin is the
    // item after the origin, found without a lookup, and there is nothing to scan.
    let adjacent = id(at: cursor(after: left)) == insert.rightOrigin
    var right: ItemLocation?
    if !adjacent, let rightOrigin = insert.rightOrigin {
      right = locate(rightOrigin)
      if right == nil {
        pendingInserts.add(insert, waitingFor: rightOrigin)
        return false
      }
    }
    return integrate(insert, left: left, right: right, adjacent: adjacent, changes: &changes)
  }

  /// A place between items: before item `offset` of run `slot` of `leaf` (`slot` may be
  /// the leaf's run count: after its last run).
  typealias Cursor = (leaf: Int, slot: Int, offset: Int)

  /// The place right after the item at `location` (`nil`: the head).
  @inline(__always)
  func cursor(after location: ItemLocation?) -> Cursor {
    guard let found = location else { return (leafOrder.first, 0, 0) }
    if found.offset + 1 < leaves[found.leaf].runs[found.run].length {
      return (found.leaf, found.run, found.offset + 1)
    }
    return (found.leaf, found.run + 1, 0)
  }

  /// The id and Lamport number of the item right after `cursor`, if any.
  @inline(__always)
  func item(at cursor: Cursor) -> (id: Dot, lamport: UInt64)? {
    if cursor.offset > 0 {
      let run = leaves[cursor.leaf].runs[cursor.slot]
      let step = UInt64(cursor.offset)
      return (Dot(replica: run.replica, counter: run.counter + step), run.lamport + step)
    }
    var leaf = cursor.leaf
    var slot = cursor.slot
    while slot == leaves[leaf].runs.count {
      guard let next = leafOrder.leaf(after: leaf) else { return nil }
      leaf = next
      slot = 0
    }
    let run = leaves[leaf].runs[slot]
    return (run.firstID, run.lamport)
  }

  func id(at cursor: Cursor) -> Dot? { item(at: cursor)?.id }

  /// An item's place in document order, tombstones included, comparable in O(1); valid
  /// while the storage does not change.
  struct OrderKey: Comparable {
    var block: Int
    package var slot: Int
    package var run: Int
    package var offset: Int

    /// Before every item: the head of the text.
    static let head = OrderKey(block: -1, slot: 0, run: 0, offset: 0)
    /// After every item: the end of the text.
    static let end = OrderKey(block: .max, slot: 0, run: 0, offset: 0)

    static func < (lhs: OrderKey, rhs: OrderKey) -> Bool {
      (lhs.block, lhs.slot, lhs.run, lhs.offset) < (rhs.block, rhs.slot, rhs.run, rhs.offset)
    }
  }

  func orderKey(leaf: Int, run: Int, offset: Int) -> OrderKey {
    let (block, slot) = leafOrder.rank(of: leaf)
    return OrderKey(block: block, slot: slot, run: run, offset: offset)
  }

  /// The order key of `dot`, or `absent` when it is `nil` (or not integrated).
  func orderKey(of dot: Dot?, absent: OrderKey) -> OrderKey {
    guard let dot, let found = locate(dot) else { return absent }
    return orderKey(leaf: found.leaf, run: found.run, offset: found.offset)
  }

  /// Places a run of new items whose origins are integrated at `left` and `right` (`nil`: the
  /// head, the end); returns whether it did. Malformed runs are ignored, identically on
  /// every replica since the order of integrated items never changes: a run not younger
  /// than an origin, or whose right origin does not follow its origin.
  ///
  /// The place is YjsMod's (Gentle's `integrateYjsMod`), which orders concurrent
  /// inserts exactly as FugueMax does (Weidner and Kleppmann, "The Art of the Fugue"):
  /// scanning from the origin towards the right origin, an item whose origin lies
  /// further left ends the scan; one with the same origin and a right origin further
  /// left is skipped with what hangs under it; one with the same origins comes first
  /// when its id is smaller; one with a right origin further right comes first. Inside
  /// a run, an item's origin is its predecessor, so only a run's first item (or the one
  /// right after the origin) can stop the scan: the scan moves run by run.
  @discardableResult
  private mutating func integrate(
    _ insert: RGADelta.Insert, left: ItemLocation?, right: ItemLocation?, adjacent: Bool,
    changes: inout [TextChange]
  ) -> Bool {
    var leftKey = OrderKey.head
    var rightKey = OrderKey.end
    var (leaf, slot, offset) = cursor(after: left)
    if let found = left {
      let originRun = leaves[found.leaf].runs[found.run]
      // A child older than its parent would break the order's invariants: ignore it.
      guard originRun.lamport + UInt64(found.offset) < insert.lamport else { return false }
      if !adjacent { leftKey = orderKey(leaf: found.leaf, run: found.run, offset: found.offset) }
    }
    if adjacent {
      if let next = item(at: (leaf, slot, offset)) {
        guard next.lamport < insert.lamport else { return false }
      }
    } else if let found = right {
      let rightRun = leaves[found.leaf].runs[found.run]
      guard rightRun.lamport + UInt64(found.offset) < insert.lamport else { return false }
      rightKey = orderKey(leaf: found.leaf, run: found.run, offset: found.offset)
      guard leftKey < rightKey else { return false }
    }
    var destination = (leaf: leaf, slot: slot, offset: offset)
    var scanning = false
    // The item before the scan's position: its origin is the insert's at the first step,
    // and further right after that.
    var previous = insert.origin
    var isFirstStep = true
    scan: while !adjacent {
      let here = (leaf: leaf, slot: slot, offset: offset)
      var atEnd = false
      while slot == leaves[leaf].runs.count {
        guard let next = leafOrder.leaf(after: leaf) else {
          atEnd = true
          break
        }
        leaf = next
        slot = 0
        offset = 0
      }
      if !scanning { destination = here }
      if atEnd { break }
      let key = orderKey(leaf: leaf, run: slot, offset: offset)
      if key == rightKey { break }
      let run = leaves[leaf].runs[slot]
      // An item typed right after the item before it (inside a run, or a run following
      // its origin) has the insert's origin only at the first step, and needs no lookup.
      var sameOrigin = isFirstStep
      if offset == 0, run.origin != previous {
        let otherLeft = orderKey(of: run.origin, absent: .head)
        if otherLeft < leftKey { break }
        sameOrigin = otherLeft == leftKey
      }
      isFirstStep = false
      if sameOrigin {
        let otherRight = orderKey(of: run.rightOrigin, absent: .end)
        if otherRight < rightKey {
          scanning = true
        } else if otherRight == rightKey {
          let otherID = Dot(replica: run.replica, counter: run.counter + UInt64(offset))
          if insert.id < otherID { break scan }
          scanning = false
        } else {
          scanning = false
        }
      }
      // The run's later items follow their predecessors: only the right origin, if it
      // is one of them, stops the scan among them.
      var stop = run.length
      if rightKey.block == key.block, rightKey.slot == key.slot, rightKey.run == slot,
        rightKey.offset > offset
      {
        stop = rightKey.offset
      }
      previous = Dot(replica: run.replica, counter: run.counter + UInt64(stop - 1))
      if stop == run.length {
        slot += 1
        offset = 0
      } else {
        offset = stop
      }
    }
    leaf = destination.leaf
    slot = destination.slot
    if destination.offset > 0 {
      splitRun(leaf: leaf, run: slot, at: destination.offset)
      slot += 1
    }
    let length = insert.length
    if insert.isContentDropped {
      // A tombstone without content: it only holds its ids, invisible from the start.
      let run = Run(
        replica: insert.id.replica, counter: insert.id.counter, lamport: insert.lamport,
        origin: insert.origin, rightOrigin: insert.rightOrigin, hasContent: false,
        deleted: true, contentStart: 0, length: length, utf16: length, utf8: length)
      insertRun(run, leaf: leaf, at: slot)
    } else {
      var (scalarOffset, utf16Offset) = (0, 0)
      if let found = left, leaf == found.leaf, slot == found.run + 1 {
        // Right after the origin's run (split there if need be), whose leaf's counts
        // `locate` took on its way.
        let (leafScalars, leafUTF16) = leafOrder.prefix(of: leaf)
        let head = leaves[leaf].runs[found.run]
        scalarOffset = leafScalars + found.scalarsBefore + head.visibleLength
        utf16Offset = leafUTF16 + found.utf16Before + head.visibleUTF16
      } else {
        (scalarOffset, utf16Offset) = visibleOffsets(leaf: leaf, run: slot)
      }
      let (start, utf16, utf8) = appendContent(insert.content)
      let run = Run(
        replica: insert.id.replica, counter: insert.id.counter, lamport: insert.lamport,
        origin: insert.origin, rightOrigin: insert.rightOrigin, deleted: false,
        contentStart: start, length: length, utf16: utf16, utf8: utf8)
      insertRun(run, leaf: leaf, at: slot)
      changes.append(
        TextChange(
          kind: .insert, scalarRange: scalarOffset..<scalarOffset + length,
          utf16Range: utf16Offset..<utf16Offset + utf16))
    }
    let resolved = unresolvedDeletes.take(
      replica: insert.id.replica, insert.id.counter..<insert.id.counter + UInt64(length))
    for target in resolved {
      deleteTargets(
        TargetRange(
          replica: insert.id.replica, lower: target.lowerBound, upper: target.upperBound),
        changes: &changes)
    }
    return true
  }

  private mutating func receive(_ delete: RGADelta.Delete, changes: inout [TextChange]) {
    guard delete.isWellFormed else { return }
    for part in lookups.read({ $0.pointee.deleteLog.newParts(of: delete) }) ?? [delete] {
      appendToDeleteLog(part)
      deleteTargets(part.targetRange, changes: &changes)
    }
  }

  /// Deletes the items of `target` that are integrated and buffers the others.
  private mutating func deleteTargets(_ target: TargetRange, changes: inout [TextChange]) {
    let missing = notIntegrated(of: target.replica, target.lower, target.upper)
    for range in missing { unresolvedDeletes.add(replica: target.replica, range) }
    var cursor = target.lower
    while cursor < target.upper {
      let dot = Dot(replica: target.replica, counter: cursor)
      guard let found = locate(dot) else {
        // Not integrated: skip to the next integrated counter.
        let next = missing.first { $0.contains(cursor) }?.upperBound ?? target.upper
        cursor = Swift.max(next, cursor + 1)
        continue
      }
      let run = leaves[found.leaf].runs[found.run]
      let length = Int(Swift.min(target.upper - cursor, UInt64(run.length - found.offset)))
      if !run.deleted {
        let (leafScalars, leafUTF16) = leafOrder.prefix(of: found.leaf)
        let scalarOffset = leafScalars + found.scalarsBefore
        let utf16Offset = leafUTF16 + found.utf16Before
        let start = scalarOffset + found.offset
        let before = utf16Count(of: run, scalars: found.offset)
        let startUTF16 = utf16Offset + before
        let removedUTF16 = utf16Count(of: run, scalars: found.offset + length) - before
        markDeleted(leaf: found.leaf, run: found.run, offset: found.offset, length: length)
        changes.append(
          TextChange(
            kind: .delete, scalarRange: start..<start + length,
            utf16Range: startUTF16..<startUTF16 + removedUTF16))
      }
      cursor += UInt64(length)
    }
  }
}
