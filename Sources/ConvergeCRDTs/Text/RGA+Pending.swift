import ConvergeCore

/// Inserts waiting for their origin or right origin, indexed by their ids and by the one
/// origin each waits for, so that an arriving run wakes exactly the inserts that waited
/// for it (a woken insert that still lacks its other origin waits again, for that one).
///
/// Remote bytes decide what lands here, so no operation rescans the whole buffer:
/// adding an insert and finding the buffered parts of an id range cost O(log p) plus
/// a move of the sorted id list, and waking the inserts that wait for a range of k ids
/// costs O(min(k, w) + j log j) for w origins waited on in that replica and j woken
/// inserts. Draining p inserts is therefore O(p log p) overall.
///
/// Almost every text has nothing waiting: the indexes are held out of line
/// (``OutOfLine``) and only while an insert waits, so such a text pays one word for them.
package struct PendingBuffer: Sendable, Sequence {
  private var storage = OutOfLine<Contents>()

  init() {}

  package var isEmpty: Bool { storage.isEmpty }

  /// The number of buffered inserts.
  package var count: Int { storage.read { $0.pointee.count } ?? 0 }

  package func makeIterator() -> AnyIterator<RGADelta.Insert> {
    storage.read { $0.pointee.makeIterator() } ?? AnyIterator { nil }
  }

  /// The parts of `range` of `replica` that are not buffered.
  func missing(replica: ReplicaID, _ range: Range<UInt64>) -> [Range<UInt64>] {
    storage.read { $0.pointee.missing(replica: replica, range) } ?? [range]
  }

  /// Whether any id of `range` of `replica` is buffered.
  package func overlaps(replica: ReplicaID, _ range: Range<UInt64>) -> Bool {
    storage.read { $0.pointee.overlaps(replica: replica, range) } ?? false
  }

  /// Buffers `insert`, whose ids are disjoint from every buffered one, until `origin`
  /// (its origin or right origin) arrives. It keeps its own copy of its scalars, not the
  /// buffer of the message it came in.
  package mutating func add(_ received: RGADelta.Insert, waitingFor origin: Dot) {
    storage.update(creating: Contents.init) { $0.add(received, waitingFor: origin) }
  }

  /// Removes and returns the inserts waiting for an id in `lower..<upper` of `replica`,
  /// in the order they were buffered.
  mutating func takeWaiting(replica: ReplicaID, lower: UInt64, upper: UInt64)
    -> [RGADelta.Insert]
  {
    guard !storage.isEmpty else { return [] }
    let (woken, left) = storage.update(creating: Contents.init) {
      ($0.takeWaiting(replica: replica, lower: lower, upper: upper), $0.count)
    }
    if left == 0 { storage.empty() }
    return woken
  }

  /// Removes the buffered inserts `shouldRemove` picks (given each insert and the origin
  /// it waits for) and returns them; the others stay, waiting for what they waited for.
  ///
  /// - Complexity: O(p log p) for p buffered inserts.
  mutating func removeAll(where shouldRemove: (RGADelta.Insert, Dot) -> Bool)
    -> [RGADelta.Insert]
  {
    guard let contents = storage.value else { return [] }
    var kept = PendingBuffer()
    var removed: [RGADelta.Insert] = []
    for (insert, origin) in contents.waitingEntries() {
      if shouldRemove(insert, origin) {
        removed.append(insert)
      } else {
        kept.add(insert, waitingFor: origin)
      }
    }
    if !removed.isEmpty { self = kept }
    return removed
  }

  /// Checks that the indexes describe exactly the buffered inserts, and that they are
  /// held only while an insert is; traps otherwise.
  func checkInvariants() {
    guard let contents = storage.value else { return }
    precondition(contents.count > 0, "an empty pending buffer holds its indexes")
    contents.checkInvariants()
  }
}

extension PendingBuffer {
  /// The buffered inserts and their indexes.
  fileprivate struct Contents: Sendable {
    /// A buffered insert's id range and its slot in `items`.
    struct Entry: Sendable, Equatable {
      var lower: UInt64
      var upper: UInt64
      package var slot: Int
    }

    /// Buffered inserts by slot; `nil` marks a free slot.
    private(set) var items: [RGADelta.Insert?] = []
    /// By slot, the origin or right origin the insert waits for.
    private var waitedFor: [Dot] = []
    private var freeSlots: [Int] = []
    /// The number of buffered inserts.
    package private(set) var count = 0
    /// Per replica: the buffered id ranges, sorted and disjoint.
    private(set) var ids = ReplicaMap<[Entry]>()
    /// Per origin replica: origin counter → slots of the inserts waiting for it.
    private(set) var waiting = ReplicaMap<[UInt64: [Int]]>()

    func makeIterator() -> AnyIterator<RGADelta.Insert> {
      var position = 0
      let items = self.items
      return AnyIterator {
        while position < items.count {
          defer { position += 1 }
          if let item = items[position] { return item }
        }
        return nil
      }
    }

    /// The first entry of `entries` whose upper bound is above `counter`.
    private static func firstEntry(_ entries: [Entry], endingAfter counter: UInt64) -> Int {
      entries.partitioningIndex { $0.upper > counter }
    }

    /// The buffered inserts in slot order, each with the origin it waits for.
    func waitingEntries() -> [(RGADelta.Insert, Dot)] {
      items.indices.compactMap { slot in items[slot].map { ($0, waitedFor[slot]) } }
    }

    /// See ``PendingBuffer/missing(replica:_:)``.
    func missing(replica: ReplicaID, _ range: Range<UInt64>) -> [Range<UInt64>] {
      guard let entries = ids[replica], !entries.isEmpty else { return [range] }
      var result: [Range<UInt64>] = []
      var cursor = range.lowerBound
      var position = Self.firstEntry(entries, endingAfter: cursor)
      while cursor < range.upperBound {
        guard position < entries.count, entries[position].lower < range.upperBound else {
          result.append(cursor..<range.upperBound)
          break
        }
        let entry = entries[position]
        if entry.lower > cursor { result.append(cursor..<entry.lower) }
        cursor = Swift.max(cursor, entry.upper)
        position += 1
      }
      return result
    }

    /// See ``PendingBuffer/overlaps(replica:_:)``.
    package func overlaps(replica: ReplicaID, _ range: Range<UInt64>) -> Bool {
      guard let entries = ids[replica] else { return false }
      let position = Self.firstEntry(entries, endingAfter: range.lowerBound)
      return position < entries.count && entries[position].lower < range.upperBound
    }

    /// See ``PendingBuffer/add(_:waitingFor:)``.
    package mutating func add(_ received: RGADelta.Insert, waitingFor origin: Dot) {
      let insert = received.compacted
      let slot: Int
      if let reused = freeSlots.popLast() {
        slot = reused
        items[slot] = insert
        waitedFor[slot] = origin
      } else {
        slot = items.count
        items.append(insert)
        waitedFor.append(origin)
      }
      count += 1
      let lower = insert.id.counter
      let entry = Entry(lower: lower, upper: lower + UInt64(insert.length), slot: slot)
      let idSlot = ids.slotCreating(insert.id.replica, default: [])
      if let last = ids.values[idSlot].last, last.upper > lower {
        let position = Self.firstEntry(ids.values[idSlot], endingAfter: lower)
        ids.values[idSlot].insert(entry, at: position)
      } else {
        ids.values[idSlot].append(entry)
      }
      let waitSlot = waiting.slotCreating(origin.replica, default: [:])
      waiting.values[waitSlot][origin.counter, default: []].append(slot)
    }

    /// See ``PendingBuffer/takeWaiting(replica:lower:upper:)``.
    mutating func takeWaiting(replica: ReplicaID, lower: UInt64, upper: UInt64)
      -> [RGADelta.Insert]
    {
      guard let waitSlot = waiting.slot(of: replica), !waiting.values[waitSlot].isEmpty
      else { return [] }
      var counters: [UInt64] = []
      // Probe each id of the range, or scan the waited-on origins, whichever is fewer.
      if upper - lower <= UInt64(waiting.values[waitSlot].count) {
        var counter = lower
        while counter < upper {
          if waiting.values[waitSlot][counter] != nil { counters.append(counter) }
          counter += 1
        }
      } else {
        for counter in waiting.values[waitSlot].keys where counter >= lower && counter < upper {
          counters.append(counter)
        }
      }
      guard !counters.isEmpty else { return [] }
      var slots: [Int] = []
      for counter in counters {
        if let waiters = waiting.values[waitSlot].removeValue(forKey: counter) {
          slots.append(contentsOf: waiters)
        }
      }
      slots.sort()
      var result: [RGADelta.Insert] = []
      result.reserveCapacity(slots.count)
      for slot in slots {
        guard let insert = items[slot] else { continue }
        result.append(insert)
        items[slot] = nil
        freeSlots.append(slot)
        count -= 1
        removeID(of: insert)
      }
      // A drained buffer is dropped whole by `PendingBuffer.takeWaiting`.
      return result
    }

    private mutating func removeID(of insert: RGADelta.Insert) {
      guard let idSlot = ids.slot(of: insert.id.replica) else { return }
      let position = Self.firstEntry(ids.values[idSlot], endingAfter: insert.id.counter)
      guard position < ids.values[idSlot].count,
        ids.values[idSlot][position].lower == insert.id.counter
      else { return }
      ids.values[idSlot].remove(at: position)
    }

    /// Checks that the indexes describe exactly the buffered inserts; traps otherwise.
    func checkInvariants() {
      var live = 0
      precondition(waitedFor.count == items.count, "one waited-for origin per slot")
      for (slot, item) in items.enumerated() {
        guard let item else { continue }
        let origin = waitedFor[slot]
        precondition(
          origin == item.origin || origin == item.rightOrigin, "buffered insert waits for an origin"
        )
        live += 1
        precondition(
          waiting[origin.replica]?[origin.counter]?.contains(slot) == true,
          "buffered insert not indexed by its origin")
        let entries = ids[item.id.replica] ?? []
        let position = Self.firstEntry(entries, endingAfter: item.id.counter)
        precondition(
          position < entries.count && entries[position].slot == slot
            && entries[position].lower == item.id.counter
            && entries[position].upper == item.id.counter + UInt64(item.length),
          "buffered insert not indexed by its ids")
      }
      precondition(live == count, "buffered insert count")
      var indexed = 0
      for (_, entries) in ids {
        for (position, entry) in entries.enumerated() {
          precondition(entry.lower < entry.upper, "empty buffered range")
          if position > 0 {
            precondition(entries[position - 1].upper <= entry.lower, "buffered ranges overlap")
          }
          indexed += 1
        }
      }
      precondition(indexed == count, "buffered id index size")
      var waiters = 0
      for (_, map) in waiting {
        for (_, slots) in map { waiters += slots.count }
      }
      precondition(waiters == count, "origin index size")
    }
  }
}

/// Delete targets not integrated yet: per target replica, sorted disjoint counter ranges.
/// Held out of line (``OutOfLine``) and only while a target is waited for.
package struct UnresolvedDeletes: Sendable {
  private var storage = OutOfLine<ReplicaMap<[Range<UInt64>]>>()

  /// The ranges per target replica.
  package var ranges: ReplicaMap<[Range<UInt64>]> { storage.value ?? ReplicaMap() }

  package var isEmpty: Bool { storage.isEmpty }

  /// The number of counters waited for.
  var total: Int {
    var sum = 0
    for (_, list) in ranges {
      for range in list {
        let (next, overflow) = sum.addingReportingOverflow(Int(clamping: range.count))
        sum = overflow ? .max : next
      }
    }
    return sum
  }

  private static func firstRange(_ list: [Range<UInt64>], endingAfter counter: UInt64) -> Int {
    list.partitioningIndex { $0.upperBound > counter }
  }

  /// Adds `range` of `replica`, joining it with the ranges it touches.
  package mutating func add(replica: ReplicaID, _ range: Range<UInt64>) {
    guard !range.isEmpty else { return }
    storage.update(creating: ReplicaMap.init) { Self.add(replica: replica, range, to: &$0) }
  }

  private static func add(
    replica: ReplicaID, _ range: Range<UInt64>, to ranges: inout ReplicaMap<[Range<UInt64>]>
  ) {
    let slot = ranges.slotCreating(replica, default: [])
    if let last = ranges.values[slot].last, last.upperBound < range.lowerBound {
      ranges.values[slot].append(range)
      return
    }
    // Ranges that overlap or touch `range` are joined into one.
    let list = ranges.values[slot]
    var start = Self.firstRange(list, endingAfter: range.lowerBound)
    if start > 0, list[start - 1].upperBound == range.lowerBound { start -= 1 }
    var end = start
    var lower = range.lowerBound
    var upper = range.upperBound
    while end < list.count, list[end].lowerBound <= upper {
      lower = Swift.min(lower, list[end].lowerBound)
      upper = Swift.max(upper, list[end].upperBound)
      end += 1
    }
    ranges.values[slot].replaceSubrange(start..<end, with: [lower..<upper])
  }

  /// Removes and returns the waited-for parts of `range` of `replica`.
  mutating func take(replica: ReplicaID, _ range: Range<UInt64>) -> [Range<UInt64>] {
    guard !storage.isEmpty else { return [] }
    let (taken, left) = storage.update(creating: ReplicaMap.init) {
      (Self.take(replica: replica, range, from: &$0), $0.values.contains { !$0.isEmpty })
    }
    if !left { storage.empty() }
    return taken
  }

  private static func take(
    replica: ReplicaID, _ range: Range<UInt64>, from ranges: inout ReplicaMap<[Range<UInt64>]>
  ) -> [Range<UInt64>] {
    guard let slot = ranges.slot(of: replica) else { return [] }
    let list = ranges.values[slot]
    let start = Self.firstRange(list, endingAfter: range.lowerBound)
    var end = start
    var taken: [Range<UInt64>] = []
    var kept: [Range<UInt64>] = []
    while end < list.count, list[end].lowerBound < range.upperBound {
      let current = list[end]
      let lower = Swift.max(current.lowerBound, range.lowerBound)
      let upper = Swift.min(current.upperBound, range.upperBound)
      taken.append(lower..<upper)
      if current.lowerBound < lower { kept.append(current.lowerBound..<lower) }
      if upper < current.upperBound { kept.append(upper..<current.upperBound) }
      end += 1
    }
    guard !taken.isEmpty else { return [] }
    ranges.values[slot].replaceSubrange(start..<end, with: kept)
    return taken
  }

  /// `insert` cut where buffered delete targets begin and end, the targeted pieces
  /// without content.
  func splitDroppingTargets(_ insert: RGADelta.Insert) -> [RGADelta.Insert] {
    guard let list = ranges[insert.id.replica], !list.isEmpty else { return [insert] }
    let lower = insert.id.counter
    let upper = lower + UInt64(insert.length)
    var position = Self.firstRange(list, endingAfter: lower)
    guard position < list.count, list[position].lowerBound < upper else { return [insert] }
    var pieces: [RGADelta.Insert] = []
    var cursor = lower
    while cursor < upper {
      if position < list.count, list[position].lowerBound < upper {
        let target = list[position]
        let from = Swift.max(target.lowerBound, cursor)
        let to = Swift.min(target.upperBound, upper)
        if cursor < from {
          pieces.append(insert.slice(from: Int(cursor - lower), length: Int(from - cursor)))
        }
        pieces.append(
          insert.slice(from: Int(from - lower), length: Int(to - from)).droppingContent)
        cursor = to
        position += 1
      } else {
        pieces.append(insert.slice(from: Int(cursor - lower), length: Int(upper - cursor)))
        cursor = upper
      }
    }
    return pieces
  }
}
