import ConvergeCore

/// The inserts and deletes one text sends another: what a local edit produced, or what a
/// peer lacks (``RGA/delta(since:)``).
///
/// Deltas are idempotent and commute: applying one twice, or several in any order, gives
/// the same state. ``merged(with:)`` joins deltas into one, so that
/// `apply(a); apply(b)` equals `apply(a.merged(with: b))`.
public struct RGADelta: Sendable, Equatable {
  /// A run of scalars typed by one replica: ids `id.counter..<id.counter + length`
  /// and Lamport numbers `lamport..<lamport + length`. The first scalar follows
  /// `origin` (`nil`: the head of the text), every other one its predecessor; every
  /// scalar was typed before `rightOrigin` (`nil`: the end of the text), the item that
  /// followed the insertion point, tombstones included.
  ///
  /// A run of deleted scalars may travel without its content (a tombstone's content is
  /// dropped): its ``scalars`` are then empty and ``length`` still counts its ids.
  public struct Insert: Sendable, Equatable {
    public var id: Dot
    public var lamport: UInt64
    public var origin: Dot?
    public var rightOrigin: Dot?
    /// The run's scalars. Decoded runs share one buffer per message (``slice(from:length:)``
    /// shares it too), so a message of many runs makes one allocation, not one per run.
    package var content: ArraySlice<Unicode.Scalar>
    /// The length of a run without content (`content` empty), otherwise 0.
    var droppedLength = 0

    public init(
      id: Dot, lamport: UInt64, origin: Dot?, rightOrigin: Dot?, scalars: [Unicode.Scalar]
    ) {
      self.init(
        id: id, lamport: lamport, origin: origin, rightOrigin: rightOrigin, content: scalars[...])
    }

    /// A run whose scalars are `content` (possibly a slice of a shared buffer).
    package init(
      id: Dot, lamport: UInt64, origin: Dot?, rightOrigin: Dot?,
      content: ArraySlice<Unicode.Scalar>
    ) {
      self.id = id
      self.lamport = lamport
      self.origin = origin
      self.rightOrigin = rightOrigin
      self.content = content
    }

    /// A run of `length` deleted scalars whose content was dropped.
    package init(
      id: Dot, lamport: UInt64, origin: Dot?, rightOrigin: Dot?, droppedLength length: Int
    ) {
      self.id = id
      self.lamport = lamport
      self.origin = origin
      self.rightOrigin = rightOrigin
      self.content = []
      self.droppedLength = length
    }

    /// The run's scalars (empty when its content was dropped).
    public var scalars: [Unicode.Scalar] {
      get { Array(content) }
      set { content = newValue[...] }
    }

    /// The number of ids (scalars) in the run, with or without content.
    public var length: Int { content.isEmpty ? droppedLength : content.count }

    /// Whether the run travels without its content (only deleted scalars do).
    public var isContentDropped: Bool { content.isEmpty && droppedLength > 0 }

    /// The same run holding its own copy of its scalars, so that keeping it does not keep
    /// a whole decoded message's buffer alive.
    var compacted: Insert {
      var copy = self
      copy.content = Array(content)[...]
      return copy
    }

    /// The part of the run from `offset`, `length` scalars long.
    package func slice(from offset: Int, length: Int) -> Insert {
      if offset == 0 && length == self.length { return self }
      let step = UInt64(offset)
      let id = Dot(replica: self.id.replica, counter: self.id.counter + step)
      let origin =
        offset == 0 ? origin : Dot(replica: id.replica, counter: self.id.counter + step - 1)
      if isContentDropped {
        return Insert(
          id: id, lamport: lamport + step, origin: origin, rightOrigin: rightOrigin,
          droppedLength: length)
      }
      let start = content.startIndex + offset
      return Insert(
        id: id, lamport: lamport + step, origin: origin, rightOrigin: rightOrigin,
        content: content[start..<start + length])
    }

    /// The same run without content.
    var droppingContent: Insert {
      Insert(
        id: id, lamport: lamport, origin: origin, rightOrigin: rightOrigin, droppedLength: length)
    }

    /// Appends `next`, which continues this run and has content exactly when it has.
    package mutating func append(_ next: Insert) {
      if isContentDropped {
        droppedLength += next.length
      } else {
        content.append(contentsOf: next.content)
      }
    }

    /// Whether `next` continues this run exactly (``InsertRunContinuation``), with content
    /// exactly when it has.
    func isContinued(by next: Insert) -> Bool {
      isContentDropped == next.isContentDropped
        && InsertRunContinuation.continues(
          id: id, lamport: lamport, length: length, rightOrigin: rightOrigin,
          by: (next.id, next.lamport, next.origin, next.rightOrigin))
    }
  }

  /// Deletes made by one replica with consecutive delete dots
  /// `dot.counter..<dot.counter + count`. The delete dot `dot.counter + i` removes the
  /// scalar `target.counter + i` (ascending) or `target.counter - i` (descending, as a
  /// run of backspaces does) of replica `target.replica`.
  public struct Delete: Sendable, Equatable {
    public var dot: Dot
    public var target: Dot
    public var count: UInt64
    public var isDescending: Bool

    public init(dot: Dot, target: Dot, count: UInt64, isDescending: Bool) {
      self.dot = dot
      self.target = target
      self.count = count
      self.isDescending = count > 1 && isDescending
    }

    /// The target of the `offset`-th delete dot.
    package func target(at offset: UInt64) -> UInt64 {
      isDescending ? target.counter - offset : target.counter + offset
    }

    /// The deleted counters as an ascending half-open range.
    package var targetRange: TargetRange {
      let lower = isDescending ? target.counter - (count - 1) : target.counter
      return TargetRange(replica: target.replica, lower: lower, upper: lower + count)
    }

    package func slice(from offset: UInt64, count length: UInt64) -> Delete {
      Delete(
        dot: Dot(replica: dot.replica, counter: dot.counter + offset),
        target: Dot(replica: target.replica, counter: target(at: offset)),
        count: length, isDescending: isDescending)
    }

    /// Checked validity: counters at least 1, no range running past `UInt64.max`.
    package var isWellFormed: Bool {
      guard count > 0, dot.counter > 0, target.counter > 0 else { return false }
      let (dotEnd, dotOverflow) = dot.counter.addingReportingOverflow(count)
      guard !dotOverflow, dotEnd > dot.counter else { return false }
      // The targets, as a half-open range, must end at or below `UInt64.max`.
      if isDescending { return target.counter >= count && target.counter < .max }
      let (_, targetOverflow) = target.counter.addingReportingOverflow(count)
      return !targetOverflow
    }

    /// This delete followed by `next` as one run, if their dots and targets line up.
    func joined(with next: Delete) -> Delete? {
      // Checked: remote runs may carry any counters.
      let (end, overflow) = dot.counter.addingReportingOverflow(count)
      let (total, totalOverflow) = count.addingReportingOverflow(next.count)
      guard !overflow, !totalOverflow, count > 0, total > 0, next.dot.replica == dot.replica,
        next.dot.counter == end, next.target.replica == target.replica
      else { return nil }
      if isDescending, target.counter < count - 1 { return nil }
      if !isDescending, target.counter > .max - (count - 1) { return nil }
      let last = target(at: count - 1)
      if count == 1 || !isDescending, next.count == 1 || !next.isDescending,
        last < .max, next.target.counter == last + 1
      {
        return Delete(dot: dot, target: target, count: total, isDescending: false)
      }
      if count == 1 || isDescending, next.count == 1 || next.isDescending,
        last > 1, next.target.counter == last - 1
      {
        return Delete(dot: dot, target: target, count: total, isDescending: true)
      }
      return nil
    }
  }

  /// Insert runs, sorted by Lamport number so that origins come before their children.
  public package(set) var inserts: [Insert]
  /// Delete runs, sorted by delete dot.
  public package(set) var deletes: [Delete]

  /// The empty delta.
  public init() {
    inserts = []
    deletes = []
  }

  /// A delta holding the given runs, in any order.
  public init(inserts: [Insert], deletes: [Delete]) {
    self.inserts = inserts
    self.deletes = deletes
    normalize()
  }

  public var isEmpty: Bool { inserts.isEmpty && deletes.isEmpty }

  /// Two deltas are equal when they hold the same runs; the content of scalars the delta
  /// itself deletes does not count (the wire form does not carry it).
  public static func == (lhs: RGADelta, rhs: RGADelta) -> Bool {
    lhs.deletes == rhs.deletes
      && lhs.insertsWithoutDeletedContent() == rhs.insertsWithoutDeletedContent()
  }

  /// The insert runs sorted by id, cut where this delta's deletes begin and end, the
  /// deleted pieces without content, and joined again.
  func insertsWithoutDeletedContent() -> [Insert] {
    let deleted = RGADelta.DeletedRanges(deletes)
    var result: [Insert] = []
    for insert in inserts.sorted(by: { $0.id < $1.id }) {
      let lower = insert.id.counter
      for (range, isDeleted) in deleted.pieces(
        replica: insert.id.replica, lower, lower + UInt64(insert.length))
      {
        var piece = insert.slice(from: Int(range.lowerBound - lower), length: range.count)
        if isDeleted { piece = piece.droppingContent }
        if let last = result.last, last.isContinued(by: piece) {
          result[result.count - 1].append(piece)
        } else {
          result.append(piece)
        }
      }
    }
    return result
  }

  /// Adds everything `other` holds.
  ///
  /// - Complexity: O(d log d) for d runs in both deltas.
  public mutating func merge(_ other: RGADelta) {
    inserts.append(contentsOf: other.inserts)
    deletes.append(contentsOf: other.deletes)
    normalize()
  }

  /// This delta joined with `other`.
  public func merged(with other: RGADelta) -> RGADelta {
    var result = self
    result.merge(other)
    return result
  }

  /// Whether two runs claim one counter of a replica. An insert's ids and a delete's dots
  /// are each an event of their own: runs of a joined delta may overlap only as pieces of
  /// one run, which the wire form writes once. Decoders of deltas refuse any overlap: one
  /// dot naming two events would let replicas that saw different ones diverge, as a
  /// handshake never re-sends a dot the peer already has.
  ///
  /// - Complexity: O(d log d) for d runs, O(d) when the insert runs ascend by id (one
  ///   replica's typing does); O(1) for a keystroke's one run.
  package var hasRunsSharingCounters: Bool {
    guard inserts.count + deletes.count > 1 else { return false }
    var insertRanges: [TargetRange] = []
    insertRanges.reserveCapacity(inserts.count)
    for index in inserts.indices {
      let (upper, overflow) = inserts[index].id.counter.addingReportingOverflow(
        UInt64(inserts[index].length))
      insertRanges.append(
        TargetRange(
          replica: inserts[index].id.replica, lower: inserts[index].id.counter,
          upper: overflow ? .max : upper))
    }
    var deleteRanges: [TargetRange] = []
    deleteRanges.reserveCapacity(deletes.count)
    for delete in deletes {
      let (upper, overflow) = delete.dot.counter.addingReportingOverflow(delete.count)
      deleteRanges.append(
        TargetRange(
          replica: delete.dot.replica, lower: delete.dot.counter, upper: overflow ? .max : upper))
    }
    // Each list is usually in order already (inserts by Lamport number follow their ids
    // when one replica typed them, deletes are sorted by dot): sort only when not, then
    // walk both in one merged order (inserts first among equals, as one stable sort of
    // both lists would put them).
    insertRanges.sortIfNeeded()
    deleteRanges.sortIfNeeded()
    var previous: TargetRange?
    var nextInsert = 0
    var nextDelete = 0
    while nextInsert < insertRanges.count || nextDelete < deleteRanges.count {
      let range: TargetRange
      if nextDelete == deleteRanges.count
        || (nextInsert < insertRanges.count
          && !(deleteRanges[nextDelete] < insertRanges[nextInsert]))
      {
        range = insertRanges[nextInsert]
        nextInsert += 1
      } else {
        range = deleteRanges[nextDelete]
        nextDelete += 1
      }
      if let previous, previous.replica == range.replica, range.lower < previous.upper {
        return true
      }
      previous = range
    }
    return false
  }

  /// Appends `later`'s runs after these and returns whether the result is in normal form,
  /// both being in it: it is when `later`'s first insert and first delete each come after
  /// this delta's last in normal order, the two joined when one continues the other (as
  /// ``normalize()`` would join them; nothing further can join, each side being joined
  /// already). Otherwise the runs are appended as they are, for ``normalize()`` to sort.
  /// A transaction that adds a run of edits' runs to the ones before them checks the two
  /// ends instead of every run (a typed paper's 12,500 inserts, normalized again, were 6
  /// instructions an edit).
  ///
  /// - Complexity: O(k) for the k runs of `later`.
  package mutating func appendKeepingNormalForm(_ later: consuming RGADelta) -> Bool {
    let insertsFollow = Self.append(
      &later.inserts, to: &inserts, follows: { ($0.lamport, $0.id) < ($1.lamport, $1.id) },
      joined: { last, first in
        guard last.isContinued(by: first) else { return nil }
        var joined = last
        joined.append(first)
        return joined
      })
    let deletesFollow = Self.append(
      &later.deletes, to: &deletes, follows: { ($0.dot, $0.target) < ($1.dot, $1.target) },
      joined: { $0.joined(with: $1) })
    return insertsFollow && deletesFollow
  }

  /// Appends `later` to `runs`, the last of `runs` and the first of `later` joined into
  /// one when `joined` joins them, and returns whether `later`'s first `follows` the
  /// last of `runs`; `later` is left empty or spent. The shorter array is the one copied,
  /// into the other: a run's many runs after its first edit's one are not.
  private static func append<Run>(
    _ later: inout [Run], to runs: inout [Run], follows: (Run, Run) -> Bool,
    joined: (Run, Run) -> Run?
  ) -> Bool {
    var isInOrder = true
    if let last = runs.last, let first = later.first {
      isInOrder = follows(last, first)
      if isInOrder, let both = joined(last, first) {
        runs.removeLast()
        later[0] = both
      }
    }
    if runs.count < later.count {
      later.insert(contentsOf: runs, at: 0)
      swap(&runs, &later)
    } else {
      runs.append(contentsOf: later)
    }
    return isInOrder
  }

  /// Sorts the runs, drops exact duplicates and joins runs that continue each other.
  package mutating func normalize() {
    // At most one non-empty run of each kind (a keystroke) is in normal form already;
    // returning early skips building the two arrays below.
    if inserts.count <= 1, deletes.count <= 1, (inserts.first?.length ?? 1) > 0,
      (deletes.first?.count ?? 1) > 0
    {
      return
    }
    normalizeInGeneral()
  }

  /// ``normalize()`` without its shortcut for a keystroke's runs (its tests compare the
  /// two).
  mutating func normalizeInGeneral() {
    // Decoded and freshly typed runs are usually in order and maximal already: checking
    // that costs a comparison per run, where sorting or rebuilding would move every run.
    normalizeInserts()
    normalizeDeletes()
  }

  /// Sorts the insert runs, drops exact duplicates and joins runs that continue each other.
  private mutating func normalizeInserts() {
    inserts.sortIfNeeded { ($0.lamport, $0.id) < ($1.lamport, $1.id) }
    inserts.coalesce(
      dropping: { $0.length == 0 },
      into: { last, insert in
        if last == insert { return true }
        guard last.isContinued(by: insert) else { return false }
        last.append(insert)
        return true
      })
  }

  /// Sorts the delete runs, drops exact duplicates and joins runs that continue each
  /// other: ``normalize()`` of a delta whose inserts are in normal form already.
  package mutating func normalizeDeletes() {
    deletes.sortIfNeeded { ($0.dot, $0.target) < ($1.dot, $1.target) }
    deletes.coalesce(
      dropping: { $0.count == 0 },
      into: { last, delete in
        if last == delete { return true }
        guard let joined = last.joined(with: delete) else { return false }
        last = joined
        return true
      })
  }
}

extension Array {
  /// Sorts the array unless it is sorted already (checked in one pass: an array of one
  /// element or none is never copied).
  @inlinable
  package mutating func sortIfNeeded(by areInIncreasingOrder: (Element, Element) -> Bool) {
    if indices.dropFirst().contains(where: { areInIncreasingOrder(self[$0], self[$0 - 1]) }) {
      sort(by: areInIncreasingOrder)
    }
  }

  /// Removes, in place and in order, the elements `isEmpty` drops and those `absorb`
  /// takes into the kept element before them (it returns `true` when it did); an array
  /// with nothing to remove is left as it is.
  mutating func coalesce(
    dropping isEmpty: (Element) -> Bool, into absorb: (inout Element, Element) -> Bool
  ) {
    // Through the buffer, so that an element is read in place, not copied, and moved
    // only when something before it was removed.
    let kept = withUnsafeMutableBufferPointer { buffer in
      var kept = 0
      for index in buffer.indices {
        if isEmpty(buffer[index]) { continue }
        if kept > 0, absorb(&buffer[kept - 1], buffer[index]) { continue }
        if kept != index { buffer.swapAt(kept, index) }
        kept += 1
      }
      return kept
    }
    if kept < count { removeSubrange(kept...) }
  }
}

extension Array where Element: Comparable {
  /// Sorts the array unless it is sorted already (checked in one pass).
  @inlinable package mutating func sortIfNeeded() { sortIfNeeded(by: <) }
}

extension RGADelta.Insert: CustomStringConvertible {
  public var description: String {
    var text = String.UnicodeScalarView()
    text.append(contentsOf: content)
    let head =
      "+\(id)#\(lamport)<\(origin.map { "\($0)" } ?? "head"),\(rightOrigin.map { "\($0)" } ?? "end")>"
    if isContentDropped { return head + "x\(length)" }
    return head + "\"\(String(text))\""
  }
}

extension RGADelta.Delete: CustomStringConvertible {
  public var description: String {
    "-\(dot)x\(count)->\(target)\(isDescending ? "desc" : "")"
  }
}
