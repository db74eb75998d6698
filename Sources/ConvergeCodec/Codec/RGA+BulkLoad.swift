/// Building a text from its whole state, as loading a saved document does.
///
/// A text's state lists its insert runs sorted by id (`FORMAT.md`, "RGA text"). Where a
/// run goes depends on its two origins and on the runs placed between them since
/// (FugueMax's order, see ``RGA/apply(_:)``). In the common state, every run was typed
/// where nothing concurrent had been typed yet: integrated in Lamport order, each lands
/// right after its origin, before the item that followed the origin, which is its right
/// origin. The text is then the pre-order walk of the tree in which every run hangs under
/// its origin and every later item of a run under its predecessor, the children of an
/// item in descending `(lamport, replica, counter)` order: the loader resolves each origin
/// once (binary search over the runs), sorts the children of every item once, walks the
/// tree with an explicit stack (no recursion, whatever the depth) and fills the leaves,
/// the id index, the sums and the delete log directly, leaves half full so that later
/// edits do not split them at once.
///
/// It then checks that the walk is that order: in the walk, the item after an item's
/// subtree is the first later item with a Lamport number not above it (a child's number
/// is above its parent's), and every run's right origin must be exactly that item, with
/// a smaller number (one pass over the runs with a stack). A state where some run was
/// typed concurrently with another at its place, or that `apply` would not integrate the
/// same way, is loaded through the one integration path instead: its runs applied to an
/// empty text in Lamport order (every origin comes before the runs that name it).
///
/// Either way it accepts exactly the states that applying the runs to an empty text
/// accepts: a run that apply would ignore (not younger than an origin, or whose right
/// origin does not follow its origin) has no encoding and is refused.
///
/// - Complexity: O((h + d) log (h + d) + s) for h insert runs, d delete runs and s
///   scalars of content, whatever the runs' lengths, when the walk is the order;
///   otherwise that of applying the runs one by one.
extension RGA {
  /// The text holding exactly the given runs, as ``apply(_:)`` would build it from an
  /// empty text.
  ///
  /// - Parameters:
  ///   - headers: the insert runs, sorted by id, disjoint, each well formed (checked by
  ///     the reader: counters from 1, no range past `UInt64.max`, Lamport numbers below
  ///     ``lamportLimit``, no origin inside its own run).
  ///   - deletes: the delete runs, well formed.
  ///   - content: the UTF-8 of every scalar no delete run targets, in run order.
  ///   - start: the offset of the text in the message, for errors.
  /// - Throws: `invalidUTF8` or `invalidValue` when the content does not match the runs,
  ///   `invalidValue` for a run the text cannot hold.
  init(
    loading headers: [TextWire.RunHeader], deletes: [RGADelta.Delete],
    content: (bytes: ArraySlice<UInt8>, offset: Int), at start: Int
  ) throws {
    if let header = headers.first, headers.count == 1, deletes.isEmpty, header.origin == nil,
      header.rightOrigin == nil
    {
      // A text typed in one go into an empty text (most notes): one run in one leaf,
      // what the walk below builds for it, without the walk's tables.
      try self.init(loadingOneRun: header, content: content)
      return
    }
    var loader = try StateLoader(headers: headers, deletes: deletes, content: content)
    self.init()
    if (try? loader.walk(offset: start)) != nil {
      loader.build(into: &self, deletes: deletes)
      if isRightOriginOrder {
        checkInvariantsIfEnabled()
        return
      }
      self = RGA()
    }
    let inserts = try TextWire.attachContent(
      content, to: headers, deleted: RGADelta.DeletedRanges(deletes))
    apply(RGADelta(inserts: inserts, deletes: deletes))
    for insert in inserts {
      let lower = insert.id.counter
      let upper = lower + UInt64(insert.length)
      guard
        isIntegrated(insert.id)
          || pendingInserts.overlaps(replica: insert.id.replica, lower..<upper)
      else {
        throw ConvergeDecodingError.invalidValue(
          offset: start, reason: "text run the sequence cannot hold")
      }
    }
  }

  /// The text of `header` alone, a run from the head to the end with `content` as its
  /// scalars.
  ///
  /// - Throws: `invalidUTF8`, or `invalidValue` when the content does not hold the run's
  ///   scalars, as ``init(loading:deletes:content:at:)`` does.
  private init(
    loadingOneRun header: TextWire.RunHeader, content: (bytes: ArraySlice<UInt8>, offset: Int)
  ) throws {
    let (scalars, supplementary) = try TextWire.countScalars(
      content.bytes, offset: content.offset)
    guard scalars == header.length else {
      throw ConvergeDecodingError.invalidValue(
        offset: content.offset, reason: "text content does not match its runs")
    }
    self.init()
    var leaf = Leaf()
    leaf.runs = [
      Run(
        replica: header.id.replica, counter: header.id.counter, lamport: header.lamport,
        origin: nil, rightOrigin: nil, deleted: false, contentStart: 0, length: scalars,
        utf16: scalars + supplementary, utf8: content.bytes.count)
    ]
    leaves = [leaf]
    leafOrder = LeafOrder(visible: [scalars], utf16: [scalars + supplementary])
    self.content = Array(content.bytes)
    maxLamport = header.lamport + UInt64(header.length - 1)
    checkInvariantsIfEnabled()
  }

  /// Whether every integrated run's right origin is the first item after it, in document
  /// order, whose Lamport number is not above its own (the end of its subtree in the
  /// loader's walk), and that item's number is below its own: then integrating the runs
  /// in Lamport order puts each right after its origin, where the walk put it.
  ///
  /// - Complexity: O(runs).
  var isRightOriginOrder: Bool {
    // Runs waiting for the item that ends their subtree, with the Lamport numbers of
    // their first and last items, ascending.
    var waiting: [(first: UInt64, last: UInt64, rightOrigin: Dot?)] = []
    for leafID in leafOrder.documentOrder {
      for run in leaves[leafID].runs {
        // Only a run's first item can end another's subtree: the others are younger.
        // It ends the subtree of every waiting item not younger than it, a run's later
        // items included: each of them shares the run's right origin, so that item must
        // be the right origin and older than the whole run. (A sibling of a later item
        // that the walk put after it, with the same Lamport number or a smaller one,
        // ends that item's subtree too soon: the walk is then not the order.)
        while let last = waiting.last, last.last >= run.lamport {
          guard last.first > run.lamport, last.rightOrigin == run.firstID else { return false }
          waiting.removeLast()
        }
        waiting.append((run.lamport, run.lamport + UInt64(run.length - 1), run.rightOrigin))
      }
    }
    return waiting.allSatisfy { $0.rightOrigin == nil }
  }
}

/// The working state of ``RGA/init(loading:deletes:content:at:)``.
private struct StateLoader {
  /// A piece of an insert run that is wholly deleted or wholly visible.
  struct Segment {
    /// Where the piece starts in its run.
    var offset: Int
    var length: Int
    /// Where its UTF-8 starts in `bytes`, from its start; -1 for a tombstone (no content).
    var byteStart: Int
  }

  /// A run hanging under an item: `parent` is the run index plus one (0 is the head).
  struct Attachment {
    var parent: Int
    var offset: Int
    var child: Int
    var lamport: UInt64
    /// The child's first item.
    var id: Dot

    /// Whether this child comes before `other` under the same item: the greater Lamport
    /// number first, then the greater id.
    func sortsBefore(_ other: Attachment) -> Bool {
      (lamport, id) > (other.lamport, other.id)
    }
  }

  /// A run placed in a leaf: the id range `lower..<upper` of insert run `header`.
  struct Placement {
    var header: Int
    var lower: UInt64
    var upper: UInt64
    var leaf: Int
  }

  enum Task {
    /// Emit insert run `header` from item `from` on.
    case run(header: Int, from: Int)
    /// Visit the children `attachments[range]` in order.
    case children(Range<Int>)
  }

  let headers: [TextWire.RunHeader]
  /// The content's UTF-8, as read (validated), and how many scalars it holds: the runs
  /// take their bytes from it, and only runs left waiting decode theirs.
  let bytes: ArraySlice<UInt8>
  let scalarCount: Int
  /// How many of the content's scalars lie outside the Basic Multilingual Plane.
  let supplementaryCount: Int
  /// Whether every scalar of the content is ASCII: then a run's scalars are its bytes.
  var isASCII: Bool { bytes.count == scalarCount }
  /// Per replica, the deleted counters: sorted, disjoint, not touching.
  let targets: ReplicaMap<[Range<UInt64>]>
  /// The segments of run `h` are `segments[segmentStart[h]..<segmentStart[h + 1]]`.
  var segments: [Segment] = []
  var segmentStart: [Int] = []
  /// Per replica, the indices of its runs in `headers`.
  var groups = ReplicaMap<Range<Int>>()
  /// Sorted by parent, then offset, then child order.
  var attachments: [Attachment] = []
  /// The children of parent `p` (run index + 1, 0 the head) start at `firstChild[p]`.
  var firstChild: [Int] = []

  // The walk's output.
  var leaves: [RGA.Leaf] = []
  /// The leaves' visible scalars and UTF-16 code units, for the leaf order.
  var leafCounts: (visible: [Int], utf16: [Int]) = ([], [])
  /// The UTF-8 of the scalars the placed runs hold, ranges of `bytes` from its start, in
  /// the order the walk places them (one range for runs that continue one another), which
  /// is the order of the text's content; and the bytes they take.
  var contentRanges: [Range<Int>] = []
  var contentBytes = 0
  /// Where the last walk through a segment's UTF-8 ended (its segment, scalar offset in
  /// it and byte): a run's parts are placed in order, so each walk starts from there
  /// instead of from the segment's start.
  var walked = (segment: -1, scalar: 0, byte: 0)
  var placements: [Placement] = []
  var visited: [Bool] = []
  /// The leaf being filled, and the run whose items end it (-1: none).
  var filling = RGA.Leaf()
  var fillingCounts = (visible: 0, utf16: 0)
  var lastHeader = -1

  init(
    headers: [TextWire.RunHeader], deletes: [RGADelta.Delete],
    content: (bytes: ArraySlice<UInt8>, offset: Int)
  ) throws {
    self.headers = headers
    bytes = content.bytes
    (scalarCount, supplementaryCount) = try TextWire.countScalars(
      content.bytes, offset: content.offset)
    targets = Self.targetRanges(deletes)
    try cutSegments(contentOffset: content.offset)
    attachRuns()
  }

  /// Per target replica, the counters the delete runs remove, sorted and joined.
  static func targetRanges(_ deletes: [RGADelta.Delete]) -> ReplicaMap<[Range<UInt64>]> {
    // Counted first, so that each replica's list is allocated once.
    var counts = ReplicaMap<Int>()
    for delete in deletes {
      counts.values[counts.slotCreating(delete.target.replica, default: 0)] += 1
    }
    var unsorted = ReplicaMap<[Range<UInt64>]>()
    for (replica, count) in counts {
      var list: [Range<UInt64>] = []
      list.reserveCapacity(count)
      unsorted.values[unsorted.slotCreating(replica, default: [])] = list
    }
    var slot = -1
    var replica: ReplicaID?
    for delete in deletes {
      let target = delete.targetRange
      if target.replica != replica {
        replica = target.replica
        slot = unsorted.slot(of: target.replica) ?? 0
      }
      unsorted.values[slot].append(target.lower..<target.upper)
    }
    var result = ReplicaMap<[Range<UInt64>]>()
    for (replica, list) in unsorted {
      var joined: [Range<UInt64>] = []
      let sorted = sortedByLowerBound(list)
      joined.reserveCapacity(sorted.count)
      for range in sorted {
        if let last = joined.last, range.lowerBound <= last.upperBound {
          joined[joined.count - 1] = last.lowerBound..<Swift.max(last.upperBound, range.upperBound)
        } else {
          joined.append(range)
        }
      }
      let slot = result.slotCreating(replica, default: [])
      result.values[slot] = joined
    }
    return result
  }

  /// `ranges` sorted by lower bound: a least-significant-digit radix sort, 11 bits a
  /// pass, as many passes as the largest lower bound needs (two for counters below
  /// 2^22), so sorting the delete targets of a long history costs a few linear passes.
  static func sortedByLowerBound(_ ranges: [Range<UInt64>]) -> [Range<UInt64>] {
    guard ranges.count > 32 else { return ranges.sorted { $0.lowerBound < $1.lowerBound } }
    var largest: UInt64 = 0
    var isSorted = true
    for index in ranges.indices {
      largest = Swift.max(largest, ranges[index].lowerBound)
      if index > 0, ranges[index].lowerBound < ranges[index - 1].lowerBound { isSorted = false }
    }
    guard !isSorted else { return ranges }
    let digitBits: UInt64 = 11
    let buckets = 1 << digitBits
    let mask = UInt64(buckets - 1)
    var source = ranges
    var target = ranges
    var counts = [Int](repeating: 0, count: buckets)
    var shift: UInt64 = 0
    while shift < 64, largest >> shift > 0 {
      for index in counts.indices { counts[index] = 0 }
      for range in source { counts[Int((range.lowerBound >> shift) & mask)] += 1 }
      var total = 0
      for index in counts.indices {
        let count = counts[index]
        counts[index] = total
        total += count
      }
      for range in source {
        let digit = Int((range.lowerBound >> shift) & mask)
        target[counts[digit]] = range
        counts[digit] += 1
      }
      swap(&source, &target)
      shift += digitBits
    }
    return source
  }

  /// Cuts every run into deleted and visible segments and gives the visible ones their
  /// scalars, in run order.
  mutating func cutSegments(contentOffset: Int) throws {
    let mismatch = ConvergeDecodingError.invalidValue(
      offset: contentOffset, reason: "text content does not match its runs")
    segmentStart.reserveCapacity(headers.count + 1)
    segments.reserveCapacity(headers.count)
    var contentCursor = 0
    var byteCursor = 0
    var replica: ReplicaID?
    var list: [Range<UInt64>] = []
    var position = 0
    var groupStart = 0
    for (index, header) in headers.enumerated() {
      if header.id.replica != replica {
        if let replica {
          let slot = groups.slotCreating(replica, default: 0..<0)
          groups.values[slot] = groupStart..<index
        }
        replica = header.id.replica
        list = targets[header.id.replica] ?? []
        position = 0
        groupStart = index
      }
      segmentStart.append(segments.count)
      let lower = header.id.counter
      let upper = lower + UInt64(header.length)
      while position < list.count, list[position].upperBound <= lower { position += 1 }
      var cursor = lower
      while cursor < upper {
        var visibleEnd = upper
        if position < list.count, list[position].lowerBound < upper {
          visibleEnd = Swift.max(cursor, list[position].lowerBound)
        }
        if cursor < visibleEnd {
          let length = Int(visibleEnd - cursor)
          guard length <= scalarCount - contentCursor else { throw mismatch }
          segments.append(
            Segment(offset: Int(cursor - lower), length: length, byteStart: byteCursor))
          contentCursor += length
          // The last visible segment (the only one of a text typed in order) ends the
          // content: its bytes need no walk.
          byteCursor =
            isASCII
            ? contentCursor
            : contentCursor == scalarCount
              ? bytes.count : advance(from: byteCursor, scalars: length).end
          cursor = visibleEnd
        }
        guard cursor < upper else { break }
        // `list[position]` covers `cursor`: a tombstone up to its end or the run's.
        let deletedEnd = Swift.min(list[position].upperBound, upper)
        segments.append(
          Segment(offset: Int(cursor - lower), length: Int(deletedEnd - cursor), byteStart: -1))
        cursor = deletedEnd
        if list[position].upperBound <= upper { position += 1 }
      }
    }
    if let replica {
      let slot = groups.slotCreating(replica, default: 0..<0)
      groups.values[slot] = groupStart..<headers.count
    }
    segmentStart.append(segments.count)
    guard contentCursor == scalarCount else { throw mismatch }
  }

  /// The run holding `dot` and the offset of `dot` in it, if any run does. `ends` holds
  /// each run's end counter, a compact array to search.
  func locate(_ dot: Dot, ends: UnsafeBufferPointer<UInt64>) -> (header: Int, offset: Int)? {
    guard let range = groups[dot.replica] else { return nil }
    let low = ends[range].partitioningIndex { $0 > dot.counter }
    guard low < range.upperBound, headers[low].id.counter <= dot.counter else { return nil }
    return (low, Int(dot.counter - headers[low].id.counter))
  }

  /// Hangs every run whose origin is present under it (the head's children under 0),
  /// sorted so that each item's children are consecutive and in document order: a
  /// counting sort by parent, then a sort of each parent's children (usually one).
  mutating func attachRuns() {
    var parents = [Int](repeating: -1, count: headers.count)
    var offsets = [Int](repeating: 0, count: headers.count)
    var starts = [Int](repeating: 0, count: headers.count + 2)
    let ends = headers.map { $0.id.counter + UInt64($0.length) }
    ends.withUnsafeBufferPointer { ends in
      for (index, header) in headers.enumerated() {
        var parent = 0
        if let origin = header.origin {
          guard let found = locate(origin, ends: ends) else { continue }
          parent = found.header + 1
          offsets[index] = found.offset
        }
        parents[index] = parent
        starts[parent + 1] += 1
      }
    }
    for parent in 0...headers.count { starts[parent + 1] += starts[parent] }
    var next = starts
    let placeholder = Attachment(
      parent: 0, offset: 0, child: 0, lamport: 0,
      id: Dot(replica: ReplicaID(rawValue: 0), counter: 0))
    var sorted = [Attachment](repeating: placeholder, count: starts[headers.count + 1])
    for (index, header) in headers.enumerated() where parents[index] >= 0 {
      let parent = parents[index]
      sorted[next[parent]] = Attachment(
        parent: parent, offset: offsets[index], child: index, lamport: header.lamport,
        id: header.id)
      next[parent] += 1
    }
    firstChild = starts
    attachments = sorted
    for parent in 0...headers.count where firstChild[parent + 1] - firstChild[parent] > 1 {
      sortChildren(firstChild[parent]..<firstChild[parent + 1])
    }
  }

  /// Sorts `attachments[range]` by offset, then in document order: an insertion sort for
  /// the few children an item usually has, the standard sort beyond.
  mutating func sortChildren(_ range: Range<Int>) {
    func before(_ left: Attachment, _ right: Attachment) -> Bool {
      left.offset != right.offset ? left.offset < right.offset : left.sortsBefore(right)
    }
    guard range.count <= 16 else {
      attachments[range].sort(by: before)
      return
    }
    for index in range.dropFirst() {
      let moving = attachments[index]
      var position = index
      while position > range.lowerBound, before(moving, attachments[position - 1]) {
        attachments[position] = attachments[position - 1]
        position -= 1
      }
      attachments[position] = moving
    }
  }

  /// Walks the tree from the head in document order, placing every integrated run.
  ///
  /// - Throws: `invalidValue` for a run not younger than its origin.
  mutating func walk(offset start: Int) throws {
    visited = Array(repeating: false, count: headers.count)
    let leafCapacity = headers.count / (RGA.maxRunsPerLeaf / 2) + 1
    leaves.reserveCapacity(leafCapacity)
    leafCounts.visible.reserveCapacity(leafCapacity)
    leafCounts.utf16.reserveCapacity(leafCapacity)
    placements.reserveCapacity(headers.count + segments.count)
    // Per run: its next unvisited child and the segment its next item is in.
    var nextChild = Array(firstChild.dropFirst())
    var nextSegment = segmentStart
    var stack: [Task] = []
    if firstChild[0] < firstChild[1] { stack.append(.children(firstChild[0]..<firstChild[1])) }
    filling.runs.reserveCapacity(RGA.maxRunsPerLeaf / 2)
    defer { finishLeaf() }
    while let task = stack.popLast() {
      switch task {
      case .children(let range):
        let attachment = attachments[range.lowerBound]
        if range.count > 1 { stack.append(.children(range.lowerBound + 1..<range.upperBound)) }
        if attachment.parent > 0 {
          let parent = headers[attachment.parent - 1]
          guard parent.lamport + UInt64(attachment.offset) < attachment.lamport else {
            throw ConvergeDecodingError.invalidValue(
              offset: start, reason: "text run the sequence cannot hold")
          }
        }
        visited[attachment.child] = true
        stack.append(.run(header: attachment.child, from: 0))
      case .run(let index, let from):
        let header = headers[index]
        let first = nextChild[index]
        let end = firstChild[index + 2]
        guard first < end else {
          emit(index, from: from, to: header.length, segment: &nextSegment[index])
          continue
        }
        // The next item with children ends this piece; its children sorting before the
        // item after it come first, then the rest of the run, then the other children.
        let offset = attachments[first].offset
        var last = first
        while last < end, attachments[last].offset == offset { last += 1 }
        nextChild[index] = last
        emit(index, from: from, to: offset + 1, segment: &nextSegment[index])
        guard offset + 1 < header.length else {
          stack.append(.children(first..<last))
          continue
        }
        let next = Attachment(
          parent: index + 1, offset: offset, child: index,
          lamport: header.lamport + UInt64(offset) + 1,
          id: Dot(replica: header.id.replica, counter: header.id.counter + UInt64(offset) + 1))
        var split = first
        while split < last, attachments[split].sortsBefore(next) { split += 1 }
        if split < last { stack.append(.children(split..<last)) }
        stack.append(.run(header: index, from: offset + 1))
        if first < split { stack.append(.children(first..<split)) }
      }
    }
  }

  /// Places items `from..<to` of run `index`, one run per segment, `segment` being the
  /// first segment not wholly placed yet.
  mutating func emit(_ index: Int, from: Int, to: Int, segment: inout Int) {
    let header = headers[index]
    var cursor = from
    while cursor < to {
      let piece = segments[segment]
      let pieceEnd = piece.offset + piece.length
      let upper = Swift.min(to, pieceEnd)
      let length = upper - cursor
      let counter = header.id.counter + UInt64(cursor)
      let deleted = piece.byteStart < 0
      var run = RGA.Run(
        replica: header.id.replica, counter: counter, lamport: header.lamport + UInt64(cursor),
        origin: cursor == 0
          ? header.origin : Dot(replica: header.id.replica, counter: counter - 1),
        rightOrigin: header.rightOrigin, hasContent: false, deleted: deleted, contentStart: 0,
        length: length, utf16: length, utf8: length)
      if !deleted {
        // The text's content is written in document order, as the runs are placed.
        run.hasContent = true
        run.contentStart = contentBytes
        var first = piece.byteStart + (cursor - piece.offset)
        if !isASCII {
          // The piece's bytes, walked to this run's scalars.
          let offset = cursor - piece.offset
          var from = (scalar: 0, byte: piece.byteStart)
          if walked.segment == segment, walked.scalar <= offset {
            from = (walked.scalar, walked.byte)
          }
          first = advance(from: from.byte, scalars: offset - from.scalar).end
          // A run of the whole content (a text typed in order) takes its counts as read.
          let (end, supplementary) =
            first == 0 && length == scalarCount
            ? (bytes.count, supplementaryCount) : advance(from: first, scalars: length)
          run.utf8 = end - first
          run.utf16 += supplementary
          walked = (segment, offset + length, end)
        }
        contentBytes += run.utf8
        if let last = contentRanges.last, last.upperBound == first {
          contentRanges[contentRanges.count - 1] = last.lowerBound..<first + run.utf8
        } else {
          contentRanges.append(first..<first + run.utf8)
        }
      }
      place(run, header: index)
      cursor = upper
      if upper == pieceEnd { segment += 1 }
    }
  }

  /// Appends `run` to the leaf being filled (starting a new one when it is half full),
  /// joined to the run before it when it continues it.
  mutating func place(_ run: RGA.Run, header: Int) {
    let upper = run.counter + UInt64(run.length)
    if lastHeader == header, let last = filling.runs.last, last.deleted == run.deleted,
      last.counter + UInt64(last.length) == run.counter,
      run.deleted || last.contentStart + last.utf8 == run.contentStart
    {
      filling.runs[filling.runs.count - 1].length += run.length
      filling.runs[filling.runs.count - 1].utf16 += run.utf16
      filling.runs[filling.runs.count - 1].utf8 += run.utf8
      fillingCounts.visible += run.visibleLength
      fillingCounts.utf16 += run.visibleUTF16
      placements[placements.count - 1].upper = upper
      return
    }
    if filling.runs.count >= RGA.maxRunsPerLeaf / 2 { finishLeaf() }
    filling.runs.append(run)
    fillingCounts.visible += run.visibleLength
    fillingCounts.utf16 += run.visibleUTF16
    placements.append(
      Placement(header: header, lower: run.counter, upper: upper, leaf: leaves.count))
    lastHeader = header
  }

  /// Moves the leaf being filled to `leaves`.
  mutating func finishLeaf() {
    guard !filling.runs.isEmpty else { return }
    leaves.append(filling)
    leafCounts.visible.append(fillingCounts.visible)
    leafCounts.utf16.append(fillingCounts.utf16)
    filling = RGA.Leaf()
    fillingCounts = (0, 0)
    filling.runs.reserveCapacity(RGA.maxRunsPerLeaf / 2)
    lastHeader = -1
  }

  /// Moves the walk's result into `text` (a fresh one): storage, index, buffered runs and
  /// deletes, counts.
  mutating func build(into text: inout RGA, deletes: [RGADelta.Delete]) {
    if !leaves.isEmpty {
      text.leaves = leaves
      text.leafOrder = LeafOrder(visible: leafCounts.visible, utf16: leafCounts.utf16)
    }
    text.content = contentInPlacementOrder()
    // A text of one leaf keeps no index (see `RGA+Storage.swift`).
    if text.leaves.count > 1 { buildIndex(into: &text) }
    for (index, header) in headers.enumerated() {
      text.maxLamport = Swift.max(text.maxLamport, header.lamport + UInt64(header.length - 1))
      if !visited[index] { buffer(index, into: &text) }
    }
    for (replica, list) in targets {
      bufferUnresolved(list, of: replica, into: &text)
    }
    // The delete runs come sorted by delete dot, without overlaps: each replica's run
    // of them is its log.
    var log = ReplicaMap<[RGADelta.Delete]>()
    var groupStart = 0
    for index in deletes.indices
    where index + 1 == deletes.count || deletes[index + 1].dot.replica != deletes[index].dot.replica
    {
      log.values[log.slotCreating(deletes[index].dot.replica, default: [])] = Array(
        deletes[groupStart...index])
      groupStart = index + 1
    }
    if !log.isEmpty { text.lookups.update(creating: RGA.Lookups.init) { $0.deleteLog = log } }
  }

  /// The placed runs' UTF-8, copied range by range from the input in one pass.
  func contentInPlacementOrder() -> [UInt8] {
    var content: [UInt8] = []
    content.reserveCapacity(contentBytes)
    for range in contentRanges {
      content.append(
        contentsOf: bytes[bytes.startIndex + range.lowerBound..<bytes.startIndex + range.upperBound]
      )
    }
    return content
  }

  /// ``UTF8Scalars/advance(_:from:scalars:)`` in the content (valid: it was checked).
  func advance(from start: Int, scalars: Int) -> (end: Int, supplementary: Int) {
    bytes.withUnsafeBufferPointer { UTF8Scalars.advance($0, from: start, scalars: scalars) }
  }

  /// The id index: placements sorted by run (a stable counting sort, as each run's items
  /// were placed in order), so each replica's entries come out sorted by counter.
  func buildIndex(into text: inout RGA) {
    var starts = [Int](repeating: 0, count: headers.count + 1)
    for placement in placements { starts[placement.header + 1] += 1 }
    for index in headers.indices { starts[index + 1] += starts[index] }
    var sorted = placements
    for placement in placements {
      sorted[starts[placement.header]] = placement
      starts[placement.header] += 1
    }
    var entries: [ReplicaIndex.Entry] = []
    entries.reserveCapacity(sorted.count)
    var index = ReplicaMap<ReplicaIndex>()
    var replica: ReplicaID?
    for placement in sorted {
      let owner = headers[placement.header].id.replica
      if owner != replica {
        if let replica {
          index.values[index.slotCreating(replica, default: ReplicaIndex())] = ReplicaIndex(
            entries: entries)
          entries.removeAll(keepingCapacity: true)
        }
        replica = owner
      }
      if let last = entries.last, last.upper == placement.lower, last.leaf == placement.leaf {
        entries[entries.count - 1].upper = placement.upper
      } else {
        entries.append(
          ReplicaIndex.Entry(lower: placement.lower, upper: placement.upper, leaf: placement.leaf))
      }
    }
    if let replica {
      index.values[index.slotCreating(replica, default: ReplicaIndex())] = ReplicaIndex(
        entries: entries)
    }
    if !index.isEmpty { text.lookups.update(creating: RGA.Lookups.init) { $0.index = index } }
  }

  /// Buffers run `index`, whose origin chain does not reach the head, segment by
  /// segment (tombstones without content), as apply buffers it.
  func buffer(_ index: Int, into text: inout RGA) {
    let header = headers[index]
    let run = RGADelta.Insert(
      id: header.id, lamport: header.lamport, origin: header.origin,
      rightOrigin: header.rightOrigin, droppedLength: header.length)
    for piece in segments[segmentStart[index]..<segmentStart[index + 1]] {
      let slice = run.slice(from: piece.offset, length: piece.length)
      // Not reaching the head, the run has an origin; it waits for it first.
      guard let origin = slice.origin else { continue }
      if piece.byteStart < 0 {
        text.pendingInserts.add(slice, waitingFor: origin)
      } else {
        // Decoded only here: most runs take their bytes as they are.
        let end = advance(from: piece.byteStart, scalars: piece.length).end
        let utf8 = bytes[bytes.startIndex + piece.byteStart..<bytes.startIndex + end]
        let scalars = utf8.withUnsafeBufferPointer { UTF8Scalars.decode(valid: $0).scalars }
        text.pendingInserts.add(
          RGADelta.Insert(
            id: slice.id, lamport: slice.lamport, origin: slice.origin,
            rightOrigin: slice.rightOrigin, content: scalars[...]),
          waitingFor: origin)
      }
    }
  }

  /// Buffers the deleted counters `list` of `replica` that no integrated run holds.
  func bufferUnresolved(_ list: [Range<UInt64>], of replica: ReplicaID, into text: inout RGA) {
    // Every deleted counter of the state comes here: one walk along the sorted targets
    // and the replica's sorted index entries (a text of one leaf: its runs, sorted).
    let entries =
      text.leaves.count > 1
      ? Array(text.index[replica]?.entries ?? ReplicaIndex().entries)
      : text.oneLeafEntries(of: replica)
    var position = 0
    for target in list {
      var cursor = target.lowerBound
      while position < entries.count, entries[position].upper <= cursor { position += 1 }
      while cursor < target.upperBound {
        guard position < entries.count, entries[position].lower < target.upperBound else {
          text.unresolvedDeletes.add(replica: replica, cursor..<target.upperBound)
          break
        }
        let entry = entries[position]
        if cursor < entry.lower {
          text.unresolvedDeletes.add(replica: replica, cursor..<entry.lower)
        }
        cursor = Swift.max(cursor, entry.upper)
        if entry.upper <= target.upperBound { position += 1 }
      }
    }
  }
}
