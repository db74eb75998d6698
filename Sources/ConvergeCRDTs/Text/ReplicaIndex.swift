import ConvergeCore

/// One replica's integrated ids: sorted, disjoint counter ranges, each naming the leaf
/// that holds it. Adjacent ranges in the same leaf are joined.
///
/// The entries sit in chunks of at most ``maxEntriesPerChunk``, so that changing one
/// (a leaf split moves runs to a new leaf, which splits or joins their entries) moves at
/// most a chunk's entries and, when a chunk fills up or empties, the chunk list, instead
/// of every entry after it. Lookups are two binary searches.
package struct ReplicaIndex: Sendable {
  package struct Entry: Sendable, Equatable {
    package var lower: UInt64
    package var upper: UInt64
    package var leaf: Int

    package init(lower: UInt64, upper: UInt64, leaf: Int) {
      self.lower = lower
      self.upper = upper
      self.leaf = leaf
    }
  }

  /// Entries per chunk before the chunk splits in two.
  static let maxEntriesPerChunk = 128

  /// The entries in order, in non-empty chunks.
  private var chunks: [[Entry]] = []
  /// The upper bound of each chunk's last entry, for the search over chunks.
  private var uppers: [UInt64] = []

  package init() {}

  /// An index holding `entries`, which must be sorted, disjoint and joined.
  package init(entries: [Entry]) {
    let perChunk = Self.maxEntriesPerChunk * 3 / 4
    var start = 0
    while start < entries.count {
      let end = Swift.min(start + perChunk, entries.count)
      chunks.append(Array(entries[start..<end]))
      uppers.append(entries[end - 1].upper)
      start = end
    }
  }

  /// Every entry in order.
  package var entries: FlattenSequence<[[Entry]]> { chunks.joined() }

  /// The entry with the largest counters.
  var last: Entry? { chunks.last?.last }

  /// Where an entry sits: chunk, then slot in the chunk.
  private struct Position {
    var chunk: Int
    package var slot: Int
  }

  /// The first entry whose upper bound is above `counter`; `chunk == chunks.count` when
  /// there is none.
  private func position(endingAfter counter: UInt64) -> Position {
    // Past the last entry (new ids, typed locally or arriving in order): no search.
    guard let last = uppers.last, last > counter else {
      return Position(chunk: uppers.count, slot: 0)
    }
    let low = uppers.partitioningIndex { $0 > counter }
    guard low < chunks.count else { return Position(chunk: low, slot: 0) }
    return chunks[low].withUnsafeBufferPointer { chunk in
      Position(chunk: low, slot: chunk.partitioningIndex { $0.upper > counter })
    }
  }

  private func entry(at position: Position) -> Entry? {
    position.chunk < chunks.count ? chunks[position.chunk][position.slot] : nil
  }

  private func after(_ position: Position) -> Position {
    position.slot + 1 < chunks[position.chunk].count
      ? Position(chunk: position.chunk, slot: position.slot + 1)
      : Position(chunk: position.chunk + 1, slot: 0)
  }

  private func before(_ position: Position) -> Position? {
    if position.slot > 0 { return Position(chunk: position.chunk, slot: position.slot - 1) }
    guard position.chunk > 0 else { return nil }
    return Position(chunk: position.chunk - 1, slot: chunks[position.chunk - 1].count - 1)
  }

  /// The entry holding `counter`, if any.
  func entry(containing counter: UInt64) -> Entry? {
    guard let entry = entry(at: position(endingAfter: counter)), entry.lower <= counter else {
      return nil
    }
    return entry
  }

  package func leaf(containing counter: UInt64) -> Int? {
    entry(containing: counter)?.leaf
  }

  /// Calls `body` with each entry holding a counter of `lower..<upper`, in order.
  ///
  /// - Complexity: O(log e + k) for e entries, k of them reported.
  package func forEachEntry(
    overlapping lower: UInt64, _ upper: UInt64, _ body: (Entry) -> Void
  ) {
    var position = position(endingAfter: lower)
    while let entry = entry(at: position), entry.lower < upper {
      body(entry)
      position = after(position)
    }
  }

  /// Whether no counter of `lower..<upper` is indexed.
  func isDisjoint(from lower: UInt64, _ upper: UInt64) -> Bool {
    guard let entry = entry(at: position(endingAfter: lower)) else { return true }
    return entry.lower >= upper
  }

  /// The parts of `lower..<upper` that are not indexed.
  func missing(_ lower: UInt64, _ upper: UInt64) -> [Range<UInt64>] {
    var result: [Range<UInt64>] = []
    var cursor = lower
    var position = position(endingAfter: lower)
    while cursor < upper {
      guard let entry = entry(at: position), entry.lower < upper else {
        result.append(cursor..<upper)
        break
      }
      if entry.lower > cursor { result.append(cursor..<entry.lower) }
      cursor = Swift.max(cursor, entry.upper)
      position = after(position)
    }
    return result
  }

  /// Records that `lower..<upper` lives in `leaf`.
  mutating func assign(_ lower: UInt64, _ upper: UInt64, to leaf: Int) {
    if let last = chunks.last?.last, last.upper <= lower {
      if last.upper == lower && last.leaf == leaf {
        chunks[chunks.count - 1][chunks[chunks.count - 1].count - 1].upper = upper
      } else if chunks[chunks.count - 1].count < Self.maxEntriesPerChunk {
        chunks[chunks.count - 1].append(Entry(lower: lower, upper: upper, leaf: leaf))
      } else {
        chunks.append([Entry(lower: lower, upper: upper, leaf: leaf)])
        uppers.append(upper)
      }
      uppers[uppers.count - 1] = upper
      return
    }
    // The entries overlapping `lower..<upper` give way to at most three: the part of the
    // first before `lower`, the new range, the part of the last after `upper`; each joins
    // its neighbours where the leaf and the counters line up.
    var start = position(endingAfter: lower)
    var replaced = 0
    var end = start
    var firstOverlap: Entry?
    var lastOverlap: Entry?
    while let entry = entry(at: end), entry.lower < upper {
      if firstOverlap == nil { firstOverlap = entry }
      lastOverlap = entry
      replaced += 1
      end = after(end)
    }
    var middle = Entry(lower: lower, upper: upper, leaf: leaf)
    var head: Entry?
    var tail: Entry?
    if let first = firstOverlap, first.lower < lower {
      if first.leaf == leaf {
        middle.lower = first.lower
      } else {
        head = Entry(lower: first.lower, upper: lower, leaf: first.leaf)
      }
    }
    if let last = lastOverlap, last.upper > upper {
      if last.leaf == leaf {
        middle.upper = last.upper
      } else {
        tail = Entry(lower: upper, upper: last.upper, leaf: last.leaf)
      }
    }
    if head == nil, let previous = before(start), let entry = entry(at: previous),
      entry.upper == middle.lower, entry.leaf == leaf
    {
      middle.lower = entry.lower
      start = previous
      replaced += 1
    }
    if tail == nil, let entry = entry(at: end), entry.lower == middle.upper, entry.leaf == leaf {
      middle.upper = entry.upper
      replaced += 1
    }
    replace(replaced, from: start, with: Pieces(head: head, middle: middle, tail: tail))
  }

  /// One to three entries in order, without an array.
  private struct Pieces {
    var head: Entry?
    var middle: Entry
    var tail: Entry?

    package var count: Int { (head == nil ? 0 : 1) + 1 + (tail == nil ? 0 : 1) }

    package subscript(index: Int) -> Entry {
      let shifted = head == nil ? index + 1 : index
      switch shifted {
      case 0: return head ?? middle
      case 1: return middle
      default: return tail ?? middle
      }
    }
  }

  /// Replaces the `count` entries from `start` (which may be the end) with `pieces`.
  private mutating func replace(_ count: Int, from start: Position, with pieces: Pieces) {
    var position = start
    var written = 0
    // Overwrite in place as far as both go.
    while written < Swift.min(count, pieces.count) {
      chunks[position.chunk][position.slot] = pieces[written]
      if position.slot == chunks[position.chunk].count - 1 {
        uppers[position.chunk] = pieces[written].upper
      }
      written += 1
      position = after(position)
    }
    // Remove the surplus, chunk by chunk.
    var surplus = count - written
    while surplus > 0 {
      let take = Swift.min(surplus, chunks[position.chunk].count - position.slot)
      chunks[position.chunk].removeSubrange(position.slot..<position.slot + take)
      surplus -= take
      if chunks[position.chunk].isEmpty {
        chunks.remove(at: position.chunk)
        uppers.remove(at: position.chunk)
        position.slot = 0
      } else if position.slot == chunks[position.chunk].count {
        uppers[position.chunk] = chunks[position.chunk][position.slot - 1].upper
        position = Position(chunk: position.chunk + 1, slot: 0)
      }
    }
    guard written < pieces.count else { return }
    // Insert the rest: at the end of the chunk before when the position is a chunk's
    // start, so that appending at the very end needs no new chunk.
    if position.slot == 0, position.chunk > 0 {
      position = Position(chunk: position.chunk - 1, slot: chunks[position.chunk - 1].count)
    }
    if position.chunk == chunks.count {
      chunks.append([])
      uppers.append(0)
    }
    while written < pieces.count {
      chunks[position.chunk].insert(pieces[written], at: position.slot)
      if position.slot == chunks[position.chunk].count - 1 {
        uppers[position.chunk] = pieces[written].upper
      }
      written += 1
      position.slot += 1
      if chunks[position.chunk].count > Self.maxEntriesPerChunk {
        let half = chunks[position.chunk].count / 2
        let moved = Array(chunks[position.chunk][half...])
        chunks[position.chunk].removeSubrange(half...)
        chunks.insert(moved, at: position.chunk + 1)
        uppers.insert(uppers[position.chunk], at: position.chunk + 1)
        uppers[position.chunk] = chunks[position.chunk][half - 1].upper
        if position.slot > half {
          position = Position(chunk: position.chunk + 1, slot: position.slot - half)
        }
      }
    }
  }

  /// Checks the chunks' shape (none empty or over capacity) and their upper bounds;
  /// traps otherwise.
  func _checkChunks() {
    precondition(uppers.count == chunks.count, "one upper bound per chunk")
    for (chunk, upper) in zip(chunks, uppers) {
      precondition(!chunk.isEmpty && chunk.count <= Self.maxEntriesPerChunk, "index chunk")
      precondition(chunk.last?.upper == upper, "chunk upper bound")
    }
  }
}

extension ReplicaIndex: Equatable {
  package static func == (lhs: ReplicaIndex, rhs: ReplicaIndex) -> Bool {
    lhs.entries.elementsEqual(rhs.entries)
  }
}
