import ConvergeCore

extension RGA {
  /// Inserts `scalars` so that the first one lands at visible position `position`
  /// (clamped to `0...count`), with ids `firstDot.counter..<firstDot.counter + n`.
  ///
  /// The caller allocates the dots (the document layer takes them from its
  /// ``CausalContext``); ids already present, an empty insert or counters that would
  /// overflow leave the text unchanged and return an empty delta.
  ///
  /// - Returns: the delta to send to other replicas.
  /// - Complexity: O(log n + k) for k scalars.
  @discardableResult
  public mutating func insert<S: Collection>(
    _ scalars: S, at position: Int, firstDot: Dot
  ) -> RGADelta where S.Element == Unicode.Scalar {
    insert(scalars, content: nil, at: position, firstDot: firstDot)
  }

  /// ``insert(_:content:at:firstDot:)`` for an array of scalars, the form a document's
  /// transaction holds: the generic body specialized here, in the module that declares
  /// it, so that a caller in another module does not run it unspecialized (its arrays'
  /// metadata then comes from the runtime at every edit).
  package mutating func insert(
    _ scalars: [Unicode.Scalar], content: (utf8: UnsafeBufferPointer<UInt8>, utf16: Int)?,
    at position: Int, firstDot: Dot
  ) -> RGADelta {
    insertScalars(scalars, content: content, at: position, firstDot: firstDot)
  }

  /// ``insert(_:at:firstDot:)``, given the scalars' UTF-8 and UTF-16 length when the
  /// caller has them (a string's own storage): the bytes are copied into the content
  /// instead of encoded again. `content` must be exactly the UTF-8 of `scalars`.
  package mutating func insert<S: Collection>(
    _ scalars: S, content: (utf8: UnsafeBufferPointer<UInt8>, utf16: Int)?, at position: Int,
    firstDot: Dot
  ) -> RGADelta where S.Element == Unicode.Scalar {
    insertScalars(scalars, content: content, at: position, firstDot: firstDot)
  }

  private mutating func insertScalars<S: Collection>(
    _ scalars: S, content: (utf8: UnsafeBufferPointer<UInt8>, utf16: Int)?, at position: Int,
    firstDot: Dot
  ) -> RGADelta where S.Element == Unicode.Scalar {
    let length = scalars.count
    guard length > 0, let lamport = nextLamport(for: length),
      isFresh(firstDot, length: length)
    else { return RGADelta() }
    let (start, utf16, utf8) =
      content.map { appendContent(utf8: $0.utf8, utf16: $0.utf16) }
      ?? appendContent(scalars)
    let origins = insertLocally(
      firstDot: firstDot, lamport: lamport, contentStart: start, length: length, utf16: utf16,
      utf8: utf8, at: position)
    // One run with content is already in normal form: no sorting or joining to do.
    var delta = RGADelta()
    delta.inserts = [
      RGADelta.Insert(
        id: firstDot, lamport: lamport, origin: origins.left, rightOrigin: origins.right,
        scalars: Array(scalars))
    ]
    return delta
  }

  /// Inserts the `length` scalars whose UTF-8 is `utf8` (taking `utf16` UTF-16 code
  /// units) so that the first lands at visible position `position` (clamped), with ids
  /// from `firstDot`, and builds no delta: a document's transaction that types on in one
  /// field reads the delta of its edits from the text once (``delta(of:counters:)``).
  /// The bytes, which must be valid UTF-8, are copied into the content as they are.
  /// Returns whether it inserted; an empty insert or counters that would overflow leave
  /// the text unchanged.
  ///
  /// The ids are not looked up: the caller has found that the text holds none of
  /// `firstDot`'s replica from some counter at or below `firstDot.counter` on
  /// (``holdsNoEvent(of:from:)``), and nothing but its own such inserts and deletes has
  /// changed the text since. The run asks once for all its edits, instead of once an edit.
  ///
  /// - Complexity: O(log n + k) for k scalars.
  @discardableResult
  package mutating func insert(
    utf8: UnsafeBufferPointer<UInt8>, length: Int, utf16: Int, at position: Int, firstDot: Dot
  ) -> Bool {
    guard length > 0, let lamport = nextLamport(for: length), firstDot.counter > 0,
      !firstDot.counter.addingReportingOverflow(UInt64(length)).overflow
    else { return false }
    let (start, utf16, utf8) = appendContent(utf8: utf8, utf16: utf16)
    insertLocally(
      firstDot: firstDot, lamport: lamport, contentStart: start, length: length, utf16: utf16,
      utf8: utf8, at: position)
    return true
  }

  /// Deletes the visible scalars in `range` (clamped to `0..<count`); the `i`-th deleted
  /// scalar gets the delete dot `firstDot.counter + i`.
  ///
  /// - Returns: the delta to send to other replicas.
  /// - Complexity: O(log n + r) for r runs touched.
  @discardableResult
  public mutating func delete(_ range: Range<Int>, firstDot: Dot) -> RGADelta {
    var delta = RGADelta()
    deleteLocally(range, firstDot: firstDot) { delta.deletes.append($0) }
    return delta
  }

  /// The Lamport number of the next local insert of `length` scalars, if it fits.
  func nextLamport(for length: Int) -> UInt64? {
    let (lamport, overflow) = maxLamport.addingReportingOverflow(1)
    guard !overflow, UInt64(length) < Self.lamportLimit, lamport < Self.lamportLimit else {
      return nil
    }
    return lamport
  }

  /// Whether `length` ids from `firstDot` are well formed and none is known.
  func isFresh(_ firstDot: Dot, length: Int) -> Bool {
    guard firstDot.counter > 0 else { return false }
    let (end, overflow) = firstDot.counter.addingReportingOverflow(UInt64(length))
    guard !overflow else { return false }
    guard integratesNone(of: firstDot.replica, firstDot.counter, end) else { return false }
    return !pendingInserts.overlaps(replica: firstDot.replica, firstDot.counter..<end)
  }

  /// Whether the text holds no insert and no delete of `replica` from `counter` on,
  /// integrated or waiting: then every id and delete dot of `replica` from `counter` up
  /// is fresh (``isFresh(_:length:)``, and the delete log's check in
  /// ``deleteLocally(_:firstDot:dotsKnownFresh:report:)``) until something else than
  /// edits with those dots adds one.
  ///
  /// - Complexity: O(log n + log p), or O(r) in a text of one leaf of r runs, and a
  ///   lookup of `replica` in the delete log.
  package func holdsNoEvent(of replica: ReplicaID, from counter: UInt64) -> Bool {
    guard counter > 0, integratesNone(of: replica, counter, .max),
      !pendingInserts.overlaps(replica: replica, counter ..< .max)
    else { return false }
    return lookups.read { $0.pointee.deleteLog.holdsNoDelete(of: replica, from: counter) }
      ?? true
  }

  /// Inserts already-appended content as a new local run; returns its origins: the item
  /// it follows and the item that followed that one (tombstones included), which is
  /// where the run goes, so no concurrent sibling has to be skipped.
  @discardableResult
  mutating func insertLocally(
    firstDot: Dot, lamport: UInt64, contentStart: Int, length: Int, utf16: Int, utf8: Int,
    at position: Int
  ) -> (left: Dot?, right: Dot?) {
    let target = Swift.min(Swift.max(position, 0), count)
    var origin: Dot?
    var leaf = leafOrder.first
    var slot = 0
    if target > 0 {
      let found = seekVisible(target - 1)
      let run = leaves[found.leaf].runs[found.run]
      origin = Dot(replica: run.replica, counter: run.counter + UInt64(found.offset))
      if found.offset + 1 < run.length {
        splitRun(leaf: found.leaf, run: found.run, at: found.offset + 1)
      }
      leaf = found.leaf
      slot = found.run + 1
    }
    let rightOrigin = placeLocalRun(
      firstDot: firstDot, lamport: lamport, contentStart: contentStart, length: length,
      utf16: utf16, utf8: utf8, origin: origin, leaf: leaf, slot: slot)
    return (origin, rightOrigin)
  }

  /// Puts a new local run of already-appended content at run `slot` of `leaf`, right
  /// after its origin `origin`; returns its right origin, the item that follows it.
  @inline(__always)
  mutating func placeLocalRun(
    firstDot: Dot, lamport: UInt64, contentStart: Int, length: Int, utf16: Int, utf8: Int,
    origin: Dot?, leaf: Int, slot: Int
  ) -> Dot? {
    let rightOrigin = firstItem(from: leaf, slot: slot)
    let run = Run(
      replica: firstDot.replica, counter: firstDot.counter, lamport: lamport, origin: origin,
      rightOrigin: rightOrigin, deleted: false, contentStart: contentStart, length: length,
      utf16: utf16, utf8: utf8)
    insertRun(run, leaf: leaf, at: slot)
    maxLamport = lamport + UInt64(length - 1)
    checkInvariantsIfEnabled()
    return rightOrigin
  }

  /// The id of the first item at or after run `slot` of `leaf` in document order,
  /// tombstones included; `nil` at the end of the text. Inlined into the edits, which
  /// would otherwise copy the whole text to call it.
  @inline(__always)
  func firstItem(from leaf: Int, slot: Int) -> Dot? {
    var current = leaf
    var position = slot
    while position == leaves[current].runs.count {
      guard let next = leafOrder.leaf(after: current) else { return nil }
      current = next
      position = 0
    }
    return leaves[current].runs[position].firstID
  }

  /// Deletes a visible range locally, reporting each delete run made. A delete dot the
  /// log holds already deletes nothing, unless `dotsKnownFresh`: the caller has found
  /// that the text holds no event of `firstDot`'s replica from some counter at or below
  /// `firstDot.counter` on (``holdsNoEvent(of:from:)``), and nothing but its own edits
  /// has changed the text since, as for ``insert(utf8:length:utf16:at:firstDot:)``. The
  /// log's lookup was about 80 instructions of every delete of a transaction's run.
  package mutating func deleteLocally(
    _ range: Range<Int>, firstDot: Dot, dotsKnownFresh: Bool = false,
    report: (RGADelta.Delete) -> Void
  ) {
    let lower = Swift.min(Swift.max(range.lowerBound, 0), count)
    let upper = Swift.min(Swift.max(range.upperBound, lower), count)
    let total = upper - lower
    guard total > 0, firstDot.counter > 0 else { return }
    let (_, overflow) = firstDot.counter.addingReportingOverflow(UInt64(total))
    guard !overflow,
      dotsKnownFresh
        || lookups.read({ $0.pointee.deleteLog.isFresh(deleteDot: firstDot) }) ?? true
    else { return }
    var done = 0
    while done < total {
      let found = seekVisible(lower)
      let run = leaves[found.leaf].runs[found.run]
      let length = Swift.min(total - done, run.length - found.offset)
      let delete = RGADelta.Delete(
        dot: Dot(replica: firstDot.replica, counter: firstDot.counter + UInt64(done)),
        target: Dot(replica: run.replica, counter: run.counter + UInt64(found.offset)),
        count: UInt64(length), isDescending: false)
      markDeleted(leaf: found.leaf, run: found.run, offset: found.offset, length: length)
      appendToDeleteLog(delete)
      report(delete)
      done += length
    }
    checkInvariantsIfEnabled()
  }

  /// Adds a delete whose dots all follow the log of its replica, or are new.
  mutating func appendToDeleteLog(_ delete: RGADelta.Delete) {
    lookups.update(creating: Lookups.init) { lookups in
      let slot = lookups.deleteLog.slotCreating(delete.dot.replica, default: [])
      Self.appendSorted(delete, to: &lookups.deleteLog.values[slot])
    }
  }

  private static func appendSorted(_ delete: RGADelta.Delete, to log: inout [RGADelta.Delete]) {
    if let last = log.last, last.dot.counter + last.count <= delete.dot.counter {
      if let joined = last.joined(with: delete) {
        log[log.count - 1] = joined
      } else {
        log.append(delete)
      }
    } else if log.isEmpty {
      log.append(delete)
    } else {
      // Out of order: insert sorted, then join with the neighbours where possible.
      let low = log.partitioningIndex { $0.dot.counter >= delete.dot.counter }
      log.insert(delete, at: low)
      if low + 1 < log.count, let joined = log[low].joined(with: log[low + 1]) {
        log[low] = joined
        log.remove(at: low + 1)
      }
      if low > 0, let joined = log[low - 1].joined(with: log[low]) {
        log[low - 1] = joined
        log.remove(at: low)
      }
    }
  }

  /// Runs ``_checkInvariants()`` when compiled with `-DCONVERGE_INTERNAL_CHECKS`.
  ///
  /// The check is O(n log n) in the scalars held, so past 2,048 scalars it runs once
  /// every n / 32 mutations, which keeps its amortized cost per mutation constant and a
  /// 260,000-edit trace replay testable.
  package mutating func checkInvariantsIfEnabled() {
    #if CONVERGE_INTERNAL_CHECKS
      mutationsSinceCheck += 1
      if content.count <= 2048 || mutationsSinceCheck * 32 >= content.count {
        mutationsSinceCheck = 0
        _checkInvariants()
      }
    #endif
  }
}

/// The delete log's queries, on the log itself rather than the text: a call on the whole
/// text from a mutating edit would copy it (296 bytes) to pass it.
extension ReplicaMap where Value == [RGADelta.Delete] {
  /// Whether no delete of `dot` is logged.
  func isFresh(deleteDot dot: Dot) -> Bool {
    if holdsNoDelete(of: dot.replica, from: dot.counter) { return true }
    return newParts(of: RGADelta.Delete(dot: dot, target: dot, count: 1, isDescending: false))
      .count == 1
  }

  /// Whether no delete of `replica` with a dot from `counter` on is logged: the log of a
  /// replica is sorted by dot, so its last delete tells.
  func holdsNoDelete(of replica: ReplicaID, from counter: UInt64) -> Bool {
    guard let last = self[replica]?.last else { return true }
    let (end, overflow) = last.dot.counter.addingReportingOverflow(last.count)
    return !overflow && end <= counter
  }

  /// The parts of `delete` whose delete dots are not in the log yet.
  func newParts(of delete: RGADelta.Delete) -> [RGADelta.Delete] {
    guard let log = self[delete.dot.replica], !log.isEmpty else { return [delete] }
    let lower = delete.dot.counter
    let upper = lower + delete.count
    let low = log.partitioningIndex { $0.dot.counter + $0.count > lower }
    var parts: [RGADelta.Delete] = []
    var cursor = lower
    var position = low
    while cursor < upper {
      guard position < log.count, log[position].dot.counter < upper else {
        parts.append(delete.slice(from: cursor - lower, count: upper - cursor))
        break
      }
      let entry = log[position]
      if entry.dot.counter > cursor {
        parts.append(delete.slice(from: cursor - lower, count: entry.dot.counter - cursor))
      }
      cursor = Swift.max(cursor, entry.dot.counter + entry.count)
      position += 1
    }
    return parts
  }
}
