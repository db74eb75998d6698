import ConvergeCore

extension RGA {
  /// Where an item sits: leaf id, run position in the leaf, offset in the run.
  package struct ItemLocation {
    package var leaf: Int
    package var run: Int
    package var offset: Int
    /// The visible scalars and UTF-16 code units of the runs before `run` in its leaf,
    /// counted by ``locate(_:)`` on its way (0 from ``locateVisible(_:)``).
    package var scalarsBefore = 0
    var utf16Before = 0
  }

  /// The item at visible position `position`, which must be below `count`.
  func locateVisible(_ position: Int) -> ItemLocation {
    let (leafID, remainder) = leafOrder.leaf(containingVisible: position)
    return locateVisible(remainder, inLeaf: leafID)
  }

  /// ``locateVisible(_:)`` for a local edit about to change the item's leaf, which the
  /// leaf order then keeps as its cursor.
  mutating func seekVisible(_ position: Int) -> ItemLocation {
    let (leafID, remainder) = leafOrder.seek(visible: position)
    return locateVisible(remainder, inLeaf: leafID)
  }

  /// The visible item `remainder` of leaf `leafID`. Inlined: a call from a mutating
  /// edit would copy the whole text to pass it (a 296-byte copy per keystroke).
  @inline(__always)
  private func locateVisible(_ remainder: Int, inLeaf leafID: Int) -> ItemLocation {
    var rest = remainder
    let runs = leaves[leafID].runs
    for index in runs.indices where !runs[index].deleted {
      if rest < runs[index].length { return ItemLocation(leaf: leafID, run: index, offset: rest) }
      rest -= runs[index].length
    }
    // Unreachable while the counts are consistent (checked by `_checkInvariants`).
    return ItemLocation(leaf: leafID, run: Swift.max(0, runs.count - 1), offset: 0)
  }

  /// The integrated item `dot`, if any, with the visible counts before its run in its
  /// leaf (so that placing or deleting there needs no second scan of the leaf).
  @inline(__always)
  package func locate(_ dot: Dot) -> ItemLocation? {
    // A text of one leaf keeps no index: the scan below is its lookup.
    guard
      let leafID = leaves.count == 1
        ? 0 : lookups.read({ $0.pointee.index[dot.replica]?.leaf(containing: dot.counter) }) ?? nil
    else { return nil }
    let runs = leaves[leafID].runs
    var scalars = 0
    var utf16 = 0
    for position in runs.indices {
      let run = runs[position]
      if run.contains(dot) {
        return ItemLocation(
          leaf: leafID, run: position, offset: Int(dot.counter - run.counter),
          scalarsBefore: scalars, utf16Before: utf16)
      }
      scalars &+= run.visibleLength
      utf16 &+= run.visibleUTF16
    }
    return nil
  }

  @inline(__always)
  package func isIntegrated(_ dot: Dot) -> Bool {
    guard leaves.count > 1 else { return leaves[0].runs.contains { $0.contains(dot) } }
    return lookups.read { $0.pointee.index[dot.replica]?.entry(containing: dot.counter) != nil }
      ?? false
  }

  // MARK: Ids

  // A text of one leaf keeps no per-replica index (``index`` stays empty): its at most
  // ``maxRunsPerLeaf`` runs are scanned instead, which costs less than a lookup, and a
  // short note's body saves the index's five allocations. The leaf's first split builds
  // the index, and leaves are never joined again, so a text of several leaves always
  // has one. The lookups are inlined: called from a mutating merge, a call would copy
  // the whole text to pass it.

  /// Whether no integrated id of `replica` lies in `lower..<upper`.
  @inline(__always)
  func integratesNone(of replica: ReplicaID, _ lower: UInt64, _ upper: UInt64) -> Bool {
    guard leaves.count > 1 else {
      return !leaves[0].runs.contains { run in
        run.replica == replica && run.counter < upper
          && lower < run.counter + UInt64(run.length)
      }
    }
    return lookups.read { $0.pointee.index[replica]?.isDisjoint(from: lower, upper) ?? true }
      ?? true
  }

  /// The parts of `lower..<upper` of `replica` that are not integrated, in order.
  @inline(__always)
  func notIntegrated(of replica: ReplicaID, _ lower: UInt64, _ upper: UInt64)
    -> [Range<UInt64>]
  {
    guard leaves.count > 1 else {
      guard integratesNone(of: replica, lower, upper) else {
        return ReplicaIndex(entries: oneLeafEntries(of: replica)).missing(lower, upper)
      }
      return [lower..<upper]
    }
    return lookups.read { $0.pointee.index[replica]?.missing(lower, upper) ?? [lower..<upper] }
      ?? [lower..<upper]
  }

  /// The entries the index would hold for `replica` in a text of one leaf: its runs of
  /// that replica, sorted by counter.
  package func oneLeafEntries(of replica: ReplicaID) -> [ReplicaIndex.Entry] {
    leaves[0].runs.lazy.filter { $0.replica == replica }
      .map { ReplicaIndex.Entry(lower: $0.counter, upper: $0.counter + UInt64($0.length), leaf: 0) }
      .sorted { $0.lower < $1.lower }
  }

  /// Calls `body` with every integrated id range and the leaf that holds it: the index's
  /// entries, or the runs of a text of one leaf, in no particular order.
  @inline(__always)
  func forEachIntegratedRange(
    _ body: (_ replica: ReplicaID, _ lower: UInt64, _ upper: UInt64, _ leaf: Int) -> Void
  ) {
    guard leaves.count > 1 else {
      for run in leaves[0].runs {
        body(run.replica, run.counter, run.counter + UInt64(run.length), 0)
      }
      return
    }
    for (replica, replicaIndex) in index {
      for entry in replicaIndex.entries { body(replica, entry.lower, entry.upper, entry.leaf) }
    }
  }

  /// The visible scalar and UTF-16 offsets of the start of run `run` of leaf `leaf`.
  func visibleOffsets(leaf: Int, run: Int) -> (scalars: Int, utf16: Int) {
    var (scalars, utf16) = leafOrder.prefix(of: leaf)
    let runs = leaves[leaf].runs
    for position in 0..<run {
      scalars += runs[position].visibleLength
      utf16 += runs[position].visibleUTF16
    }
    return (scalars, utf16)
  }

  // MARK: Content

  /// Appends `scalars` to `content` as UTF-8; returns where their bytes start, and how
  /// many UTF-16 code units and UTF-8 bytes they take.
  @inline(__always)
  mutating func appendContent<C: Collection<Unicode.Scalar>>(_ scalars: C) -> (
    start: Int, utf16: Int, utf8: Int
  ) {
    let start = content.count
    let utf16 = Self.appendUTF8(ofScalars: scalars, to: &content)
    return (start, utf16, content.count - start)
  }

  /// Appends UTF-8 that is already at hand, of scalars that take `utf16` UTF-16 code
  /// units, to `content`; returns what ``appendContent(_:)`` returns.
  @inline(__always)
  mutating func appendContent(utf8: UnsafeBufferPointer<UInt8>, utf16: Int) -> (
    start: Int, utf16: Int, utf8: Int
  ) {
    let start = content.count
    if utf8.count <= 16 {
      // A keystroke or a word: appended byte by byte, as ``appendUTF8(ofScalars:to:)``
      // does. `append(contentsOf:)` of a buffer pointer costs a call and a `memcpy`
      // whatever its length, about 90 instructions for one byte.
      for byte in utf8 { content.append(byte) }
    } else {
      content.append(contentsOf: utf8)
    }
    return (start, utf16, utf8.count)
  }

  /// Appends the UTF-8 of `scalars`, a slice of a run's content, to `buffer`; returns how
  /// many UTF-16 code units they take.
  ///
  /// The generic ``appendUTF8(ofScalars:to:)`` specialized in this module for the codec, which
  /// calls it from another one: there the generic body ran unspecialized, through the
  /// runtime's witness tables, and encoding a library of notes took eight times the
  /// instructions.
  package static func appendUTF8(
    of scalars: ArraySlice<Unicode.Scalar>, to buffer: inout [UInt8]
  ) -> Int {
    appendUTF8(ofScalars: scalars, to: &buffer)
  }

  /// Appends the UTF-8 of `scalars` to `buffer`; returns how many UTF-16 code units they
  /// take.
  @inline(__always)
  static func appendUTF8<C: Collection<Unicode.Scalar>>(
    ofScalars scalars: C, to buffer: inout [UInt8]
  ) -> Int {
    var utf16 = 0
    guard scalars.count > 16 else {
      // A keystroke or a word: appended byte by byte, the array growing as it does.
      for scalar in scalars {
        utf16 &+= scalar.value > 0xFFFF ? 2 : 1
        guard scalar.isASCII else {
          UTF8.encode(scalar) { buffer.append($0) }
          continue
        }
        buffer.append(UInt8(truncatingIfNeeded: scalar.value))
      }
      return utf16
    }
    // A body or a paste: counted, zeroed, then written through one pointer. Appending byte
    // by byte checked the buffer's uniqueness at every byte, twice the cost of the rest of
    // inserting a note's body. At least doubled, so that pastes still grow the buffer
    // geometrically.
    let start = buffer.count
    var bytes = 0
    for scalar in scalars {
      let value = scalar.value
      bytes &+= value < 0x80 ? 1 : value < 0x800 ? 2 : value < 0x1_0000 ? 3 : 4
      utf16 &+= value > 0xFFFF ? 2 : 1
    }
    if buffer.capacity < start + bytes {
      buffer.reserveCapacity(Swift.max(start + bytes, 2 * buffer.capacity))
    }
    buffer.append(contentsOf: repeatElement(0, count: bytes))
    buffer.withUnsafeMutableBufferPointer { buffer in
      // Written by hand: the standard library's encoder, through a closure, was a tenth
      // of creating a note. The count above sized the buffer for these bytes.
      var position = start
      for scalar in scalars {
        let value = scalar.value
        if value < 0x80 {
          buffer[position] = UInt8(truncatingIfNeeded: value)
          position &+= 1
        } else if value < 0x800 {
          buffer[position] = UInt8(truncatingIfNeeded: 0xC0 | value >> 6)
          buffer[position &+ 1] = UInt8(truncatingIfNeeded: 0x80 | value & 0x3F)
          position &+= 2
        } else if value < 0x1_0000 {
          buffer[position] = UInt8(truncatingIfNeeded: 0xE0 | value >> 12)
          buffer[position &+ 1] = UInt8(truncatingIfNeeded: 0x80 | value >> 6 & 0x3F)
          buffer[position &+ 2] = UInt8(truncatingIfNeeded: 0x80 | value & 0x3F)
          position &+= 3
        } else {
          buffer[position] = UInt8(truncatingIfNeeded: 0xF0 | value >> 18)
          buffer[position &+ 1] = UInt8(truncatingIfNeeded: 0x80 | value >> 12 & 0x3F)
          buffer[position &+ 2] = UInt8(truncatingIfNeeded: 0x80 | value >> 6 & 0x3F)
          buffer[position &+ 3] = UInt8(truncatingIfNeeded: 0x80 | value & 0x3F)
          position &+= 4
        }
      }
    }
    return utf16
  }

  /// The UTF-8 bytes and UTF-16 code units of the first `scalars` scalars of `run` (its
  /// ids when it has no content): direct when every scalar of the run has one width (all
  /// ASCII; all three bytes, such as CJK text; all four bytes, such as emoji), counted
  /// otherwise.
  @inline(__always)
  func prefixCounts(of run: Run, scalars: Int) -> (utf8: Int, utf16: Int) {
    guard run.utf8 != run.length else { return (scalars, scalars) }
    // Without supplementary scalars a scalar takes at most three bytes, so three bytes a
    // scalar on average means three each.
    if run.utf16 == run.length, run.utf8 == 3 * run.length { return (3 * scalars, scalars) }
    if run.utf8 == 4 * run.length { return (4 * scalars, 2 * scalars) }
    return countedPrefix(of: run, scalars: scalars)
  }

  /// ``prefixCounts(of:scalars:)`` of a run that is not ASCII, walking its bytes: out of
  /// line, so that the edits it is inlined into stay small.
  @inline(never)
  func countedPrefix(of run: Run, scalars: Int) -> (utf8: Int, utf16: Int) {
    let end = content.withUnsafeBufferPointer {
      UTF8Scalars.advance($0, from: run.contentStart, scalars: scalars)
    }
    return (end.end - run.contentStart, scalars + end.supplementary)
  }

  /// The UTF-16 code units of the first `scalars` scalars of `run`.
  @inline(__always)
  func utf16Count(of run: Run, scalars: Int) -> Int {
    guard run.utf16 != run.length else { return scalars }
    return prefixCounts(of: run, scalars: scalars).utf16
  }

  /// `length` scalars of the content of `run`, from its scalar `offset`.
  func scalars(of run: Run, from offset: Int, count length: Int) -> [Unicode.Scalar] {
    let through = offset + length
    let start: Int
    let end: Int
    if through == run.length {
      // A run's tail (typing that continued the run, a keystroke's delta) is found from
      // the run's end: counting from its start would walk the whole run.
      end = run.contentStart + run.utf8
      start = offset == 0 ? run.contentStart : startOfLastScalars(length, endingAt: end)
    } else {
      start = run.contentStart + prefixCounts(of: run, scalars: offset).utf8
      end = run.contentStart + prefixCounts(of: run, scalars: through).utf8
    }
    // Written in place: appending scalar by scalar checked the array's uniqueness at each.
    return [Unicode.Scalar](unsafeUninitializedCapacity: length) { scalars, written in
      forEachScalar(inContent: start..<end) { scalar in
        guard written < scalars.count else { return }
        scalars.initializeElement(at: written, to: scalar)
        written &+= 1
      }
    }
  }

  /// Where the last `count` scalars of the content before `end` start: found by walking
  /// back over continuation bytes (the content is valid UTF-8).
  ///
  /// - Complexity: O(b) for the b bytes of those scalars.
  func startOfLastScalars(_ count: Int, endingAt end: Int) -> Int {
    content.withUnsafeBufferPointer { bytes in
      var position = end
      var found = 0
      while found < count, position > 0 {
        position &-= 1
        if bytes[position] & 0xC0 != 0x80 { found &+= 1 }
      }
      return position
    }
  }

  /// Calls `body` with the scalars of the UTF-8 `content[range]` (the text's own, valid
  /// UTF-8: decoded without checks).
  @inline(__always)
  func forEachScalar(inContent range: Range<Int>, _ body: (Unicode.Scalar) -> Void) {
    content.withUnsafeBufferPointer { content in
      let bytes = UnsafeBufferPointer(rebasing: content[range])
      UTF8Scalars.forEachScalar(of: bytes, body)
    }
  }

  /// Whether `right` continues `left` exactly (``InsertRunContinuation``), so the two
  /// can be one run: both deleted or neither, both with content or neither, and the
  /// content of `right` right after that of `left`.
  static func canJoin(_ left: Run, _ right: Run) -> Bool {
    left.deleted == right.deleted && left.hasContent == right.hasContent
      && (!left.hasContent || left.contentStart + left.utf8 == right.contentStart)
      && InsertRunContinuation.continues(
        id: Dot(replica: left.replica, counter: left.counter), lamport: left.lamport,
        length: left.length, rightOrigin: left.rightOrigin,
        by: (
          Dot(replica: right.replica, counter: right.counter), right.lamport, right.origin,
          right.rightOrigin
        ))
  }

  /// Splits run `run` of leaf `leaf` so that a new run starts at `offset`: the right
  /// piece's origin is the left piece's last item, and both keep the run's right origin.
  mutating func splitRun(leaf: Int, run: Int, at offset: Int) {
    let original = leaves[leaf].runs[run]
    let step = UInt64(offset)
    var right = original
    right.counter += step
    right.lamport += step
    right.origin = Dot(replica: original.replica, counter: original.counter + step - 1)
    let (bytes, units) = prefixCounts(of: original, scalars: offset)
    right.contentStart += bytes
    right.length -= offset
    right.utf16 = original.utf16 - units
    right.utf8 = original.utf8 - bytes
    leaves[leaf].runs[run].length = offset
    leaves[leaf].runs[run].utf16 = units
    leaves[leaf].runs[run].utf8 = bytes
    leaves[leaf].runs.insert(right, at: run + 1)
  }

  /// Inserts the new items `run` at position `position` of leaf `leaf`, joining it to the
  /// run before when it continues it, and keeps counts and index current.
  mutating func insertRun(_ run: Run, leaf: Int, at position: Int) {
    if position > 0, Self.canJoin(leaves[leaf].runs[position - 1], run) {
      leaves[leaf].runs[position - 1].length += run.length
      leaves[leaf].runs[position - 1].utf16 += run.utf16
      leaves[leaf].runs[position - 1].utf8 += run.utf8
    } else {
      leaves[leaf].runs.insert(run, at: position)
    }
    adjustCounts(leaf: leaf, scalars: run.visibleLength, utf16: run.visibleUTF16)
    if leaves.count > 1 {
      assignToIndex(
        TargetRange(
          replica: run.replica, lower: run.counter, upper: run.counter + UInt64(run.length)),
        leaf: leaf)
    }
    splitLeafIfNeeded(leaf)
  }

  mutating func adjustCounts(leaf: Int, scalars: Int, utf16: Int) {
    guard scalars != 0 || utf16 != 0 else { return }
    leafOrder.add(visible: scalars, utf16: utf16, to: leaf)
  }

  /// Marks `length` items of run `run` of leaf `leaf`, from `offset`, as deleted. The run
  /// must be visible.
  mutating func markDeleted(leaf: Int, run: Int, offset: Int, length: Int) {
    var position = run
    if offset > 0 {
      splitRun(leaf: leaf, run: position, at: offset)
      position += 1
    }
    if length < leaves[leaf].runs[position].length {
      splitRun(leaf: leaf, run: position, at: length)
    }
    leaves[leaf].runs[position].deleted = true
    let removed = leaves[leaf].runs[position]
    adjustCounts(leaf: leaf, scalars: -removed.length, utf16: -removed.utf16)
    // Tombstones next to each other that continue one another become one run again.
    if position + 1 < leaves[leaf].runs.count,
      Self.canJoin(leaves[leaf].runs[position], leaves[leaf].runs[position + 1])
    {
      let next = leaves[leaf].runs.remove(at: position + 1)
      leaves[leaf].runs[position].length += next.length
      leaves[leaf].runs[position].utf16 += next.utf16
      leaves[leaf].runs[position].utf8 += next.utf8
    }
    if position > 0, Self.canJoin(leaves[leaf].runs[position - 1], leaves[leaf].runs[position]) {
      let current = leaves[leaf].runs.remove(at: position)
      leaves[leaf].runs[position - 1].length += current.length
      leaves[leaf].runs[position - 1].utf16 += current.utf16
      leaves[leaf].runs[position - 1].utf8 += current.utf8
    }
    splitLeafIfNeeded(leaf)
  }

  /// Splits a leaf that holds too many runs into two halves.
  mutating func splitLeafIfNeeded(_ leaf: Int) {
    guard leaves[leaf].runs.count > Self.maxRunsPerLeaf else { return }
    let half = leaves[leaf].runs.count / 2
    var moved = Leaf()
    moved.runs = Array(leaves[leaf].runs[half...])
    leaves[leaf].runs.removeSubrange(half...)
    // The text's first split: from now on ids are found through the index, which gets the
    // runs that stay here too.
    if leaves.count == 1 { assignToIndex(leaves[leaf].runs, leaf: leaf) }
    let counts = moved.counts
    leafOrder.add(visible: -counts.visible, utf16: -counts.utf16, to: leaf)
    let newID = leafOrder.insertLeaf(after: leaf, visible: counts.visible, utf16: counts.utf16)
    leaves.append(moved)
    assignToIndex(moved.runs, leaf: newID)
  }

  /// Records in the index that the ids of `runs` live in `leaf`: sorted and joined where
  /// one range's counters continue another's of the same replica (the parts of a run split
  /// by inserts or deletes usually move together), so the index changes once per joined
  /// range, not per run. Runs that continue the one before them in document order join at
  /// once.
  private mutating func assignToIndex(_ runs: [Run], leaf: Int) {
    var ranges: [TargetRange] = []
    ranges.reserveCapacity(runs.count)
    for run in runs {
      let upper = run.counter + UInt64(run.length)
      if let last = ranges.last, last.replica == run.replica, last.upper == run.counter {
        ranges[ranges.count - 1].upper = upper
      } else {
        ranges.append(TargetRange(replica: run.replica, lower: run.counter, upper: upper))
      }
    }
    Self.insertionSort(&ranges)
    guard var joined = ranges.first else { return }
    for range in ranges.dropFirst() {
      if range.replica == joined.replica && range.lower == joined.upper {
        joined.upper = range.upper
      } else {
        assignToIndex(joined, leaf: leaf)
        joined = range
      }
    }
    assignToIndex(joined, leaf: leaf)
  }

  /// Sorts the ranges of at most one leaf's runs in place. The standard sort swaps
  /// elements at every step; shifting them costs half as much on these few dozen ranges,
  /// whose order in the document is close to random (a leaf split sorted that way cost
  /// 5% of merging two offline halves of automerge-paper).
  private static func insertionSort(_ ranges: inout [TargetRange]) {
    ranges.withUnsafeMutableBufferPointer { buffer in
      guard buffer.count > 1 else { return }
      for index in 1..<buffer.count {
        let range = buffer[index]
        var slot = index
        while slot > 0, range < buffer[slot - 1] {
          buffer[slot] = buffer[slot - 1]
          slot -= 1
        }
        buffer[slot] = range
      }
    }
  }

  /// Records in the index that the ids of `range` live in `leaf`.
  private mutating func assignToIndex(_ range: TargetRange, leaf: Int) {
    lookups.update(creating: Lookups.init) { lookups in
      let slot = lookups.index.slotCreating(range.replica, default: ReplicaIndex())
      lookups.index.values[slot].assign(range.lower, range.upper, to: leaf)
    }
  }
}
