import ConvergeCore

/// A replicated growable array of Unicode scalars: the text sequence CRDT behind note
/// bodies.
///
/// ## Semantics
///
/// Every inserted scalar has an id, a ``Dot`` handed out by its replica, and names two
/// *origins*: the scalar it was typed after (its left origin, or the head of the text)
/// and the scalar that followed that one when it was typed (its right origin, or the end
/// of the text), both counted over the text including tombstones. Concurrent inserts are
/// ordered as FugueMax orders them (Weidner and Kleppmann, "The Art of the Fugue:
/// Minimizing Interleaving in Collaborative Text Editing", 2023), computed from the two
/// origins alone the way YjsMod does (the two orders are identical): an insert goes
/// between its origins, after the concurrent inserts there that hang further right, and
/// among those with the same two origins by ascending id. So passages typed concurrently
/// at one place, forward or backward, never interleave except where the paper proves
/// every algorithm must, and two elements never change their relative order.
///
/// A run typed forward shares one right origin, so it stays one run: inside a run, a
/// scalar's left origin is its predecessor and its right origin is the run's. Every
/// scalar also carries a Lamport number, one more than the largest the text had seen when
/// it was typed; a run not younger than its origins is malformed and ignored.
///
/// Deleting a scalar leaves a tombstone, so later inserts can still name it as an
/// origin. A tombstone's content does not count: `==` ignores it, the wire form does not
/// carry it, and a tombstone that arrived without it holds none. Every deleted scalar gets
/// its own delete dot, which makes ``delta(since:)`` exact: a peer receives the deletes it
/// lacks, never the whole delete history.
///
/// Remote deltas may arrive in any order, duplicated or split: ``apply(_:)`` integrates
/// what it can and buffers inserts whose origins and deletes whose target are not there
/// yet. The buffer is part of the state, so ``merge(_:)`` is a join (commutative,
/// associative, idempotent) and equal histories compare equal whatever the delivery
/// order.
///
/// ## Example
///
/// ```swift
/// let a = ReplicaID(rawValue: 1)
/// let b = ReplicaID(rawValue: 2)
/// var left = RGA()
/// let base = left.insert("ac".unicodeScalars, at: 0, firstDot: Dot(replica: a, counter: 1))
/// var right = RGA()
/// right.apply(base)
/// let x = left.insert("b".unicodeScalars, at: 1, firstDot: Dot(replica: a, counter: 3))
/// let y = right.insert("X".unicodeScalars, at: 1, firstDot: Dot(replica: b, counter: 1))
/// left.apply(y)
/// right.apply(x)
/// // Both read "abXc": "b" and "X" were both typed between "a" and "c", so they are
/// // ordered by id, and a's replica id is the smaller. Whole passages typed there
/// // concurrently would come out the same way, each in one piece.
/// ```
///
/// ## Positions
///
/// Positions count visible Unicode scalars. Out-of-range positions never trap: an
/// insert position is clamped to `0...count` and a delete range to `0..<count`.
///
/// ## Layout and complexity
///
/// Consecutive scalars typed by one replica live in one *run* (split on demand), so a
/// typed word costs one node. Runs sit in leaves of at most 32 runs; the leaves, in
/// document order, sit in blocks of at most 32 with their visible scalar and UTF-16
/// counts, and Fenwick trees over the blocks' totals (`LeafOrder`), so a position is
/// found in O(log n). A per-replica sorted index, in chunks of at most 128 entries
/// (`ReplicaIndex`), maps id ranges to leaves, so an id is found in O(log n) as well;
/// a text of one leaf has no index until that leaf splits, and scans its runs instead.
/// Content lives in one contiguous buffer of UTF-16 code units. Nothing recurses. With n scalars (visible or
/// not), L leaves and p buffered items:
///
/// - local insert and delete: O(log n) plus O(k) for k scalars; splitting a full leaf
///   (once every 16 run insertions at most) places the new leaf in its block and moves
///   the index entries of the runs it takes, O(32 log n), and splitting a full block
///   (once every 16 leaf splits at most) rebuilds the block sums in O(L / 32);
/// - remote insert: O(log n) plus O(log n) for each run of concurrent inserts between its
///   origins that it must scan past;
/// - buffered items: indexed by the origin or target they wait for, so an arriving run
///   integrates exactly what waited for it, and p buffered items drain in O(p log p);
/// - ``delta(since:)``, ``dots``, ``merge(_:)``, `==`: O(n);
/// - loading a saved state: O((h + d) log (h + d) + s) for h insert runs, d delete runs
///   and s scalars of content; the runs' tree is walked once and the storage filled
///   directly (`RGA+BulkLoad.swift`), nothing is integrated one run at a time.
///
/// Measured figures (replaying `Tests/Traces/automerge-paper.json.gz`, state size, load,
/// merge) are in `BENCHMARKS.md` ("Performance: editing traces"), with the commands that
/// produce them.
public struct RGA: Sendable {
  /// Runs per leaf before the leaf splits in two. Inserting a run moves the runs after it
  /// and finding an id scans the runs before it, so smaller leaves cost less there and
  /// more in splits: 32 made merging the offline halves of automerge-paper 5% cheaper
  /// than 64 or 24, and its local replay 7% cheaper than 64 (instructions, callgrind).
  package static let maxRunsPerLeaf = 32

  /// Lamport numbers at or above this bound are rejected as malformed, so that local
  /// inserts can always add to the largest one seen without overflowing.
  package static let lamportLimit: UInt64 = 1 << 62

  /// Consecutive items of one replica: ids `counter..<counter+length`, Lamport numbers
  /// `lamport..<lamport+length`; item `i > 0` has item `i - 1` as its origin, and every
  /// item has the run's right origin.
  package struct Run: Sendable, Equatable {
    // Stored in this order, the origins without Optional's tag (counter 0 is never an
    // id) and the two flags in the Lamport number's top bits (Lamport numbers stay below
    // `lamportLimit`, 2^62), so that a run takes 88 bytes: leaves move their runs on
    // every insert, and a one-run text's array of runs fits a 128-byte allocation.
    package var replica: ReplicaID
    package var counter: UInt64
    private var lamportAndFlags: UInt64
    private var originStorage: Dot
    private var rightOriginStorage: Dot
    /// Where the run's UTF-8 starts in `content`, if it has content (it runs for ``utf8``
    /// bytes).
    package var contentStart: Int
    package var length: Int
    /// UTF-16 code units of the run's scalars.
    package var utf16: Int
    /// UTF-8 bytes of the run's scalars; `length` for a run without content, which reads
    /// as ASCII wherever offsets are counted.
    package var utf8: Int

    /// Stands for `nil` in the origins' storage.
    private static let none = Dot(replica: ReplicaID(rawValue: 0), counter: 0)
    /// The bits of `lamportAndFlags` that hold the flags.
    private static let deletedBit: UInt64 = 1 << 63
    private static let hasContentBit: UInt64 = 1 << 62
    private static let lamportMask: UInt64 = lamportLimit - 1

    package init(
      replica: ReplicaID, counter: UInt64, lamport: UInt64, origin: Dot?, rightOrigin: Dot?,
      hasContent: Bool = true, deleted: Bool, contentStart: Int, length: Int, utf16: Int,
      utf8: Int
    ) {
      assert(lamport < RGA.lamportLimit, "a Lamport number at or above the limit")
      self.replica = replica
      self.counter = counter
      lamportAndFlags =
        lamport & Self.lamportMask | (hasContent ? Self.hasContentBit : 0)
        | (deleted ? Self.deletedBit : 0)
      self.originStorage = origin ?? Self.none
      self.rightOriginStorage = rightOrigin ?? Self.none
      self.contentStart = contentStart
      self.length = length
      self.utf16 = utf16
      self.utf8 = utf8
    }

    /// The Lamport number of the first item (below ``RGA/lamportLimit``).
    package var lamport: UInt64 {
      get { lamportAndFlags & Self.lamportMask }
      set { lamportAndFlags = lamportAndFlags & ~Self.lamportMask | newValue & Self.lamportMask }
    }

    /// Whether the run has content (a tombstone that arrived without its content,
    /// dropped by the sender, has none).
    package var hasContent: Bool {
      get { lamportAndFlags & Self.hasContentBit != 0 }
      set {
        lamportAndFlags =
          lamportAndFlags & ~Self.hasContentBit | (newValue ? Self.hasContentBit : 0)
      }
    }

    package var deleted: Bool {
      get { lamportAndFlags & Self.deletedBit != 0 }
      set {
        lamportAndFlags = lamportAndFlags & ~Self.deletedBit | (newValue ? Self.deletedBit : 0)
      }
    }

    /// The origin of the first item; `nil` is the head of the text.
    package var origin: Dot? {
      get { originStorage.counter == 0 ? nil : originStorage }
      set { originStorage = newValue ?? Self.none }
    }

    /// The item that followed the insertion point when the run was typed, tombstones
    /// included; `nil` is the end of the text.
    package var rightOrigin: Dot? {
      get { rightOriginStorage.counter == 0 ? nil : rightOriginStorage }
      set { rightOriginStorage = newValue ?? Self.none }
    }

    package var visibleLength: Int { deleted ? 0 : length }
    package var visibleUTF16: Int { deleted ? 0 : utf16 }
    package var firstID: Dot { Dot(replica: replica, counter: counter) }
    package var lastID: Dot { Dot(replica: replica, counter: counter + UInt64(length - 1)) }

    package func contains(_ dot: Dot) -> Bool {
      dot.replica == replica && dot.counter >= counter && dot.counter - counter < UInt64(length)
    }
  }

  /// A node of the document: up to ``maxRunsPerLeaf`` runs in order. Its counts are
  /// the leaf order's (`LeafOrder`), kept there only.
  package struct Leaf: Sendable {
    package var runs: [Run] = []

    package init(runs: [Run] = []) { self.runs = runs }

    /// The visible scalars and UTF-16 code units of the runs, counted.
    var counts: (visible: Int, utf16: Int) {
      runs.reduce(into: (0, 0)) { counts, run in
        counts.visible += run.visibleLength
        counts.utf16 += run.visibleUTF16
      }
    }
  }

  /// Leaves by stable id (ids never change; a split appends a new leaf).
  package var leaves: [Leaf] = [Leaf()]
  /// Leaf ids in document order, with their visible scalar and UTF-16 counts.
  package var leafOrder = LeafOrder()
  /// Every scalar inserted with content, as UTF-8, append-only (tombstones that arrived
  /// without content take no room). A byte a scalar for ASCII, where scalars took four
  /// (and UTF-16 two): at 50,000 notes, a body's 405 scalars were 1,620 of a note's 3,533
  /// bytes. A run finds a scalar's bytes directly when it is ASCII, by counting otherwise
  /// (see `RGA+Storage.swift`); the visible text copies out as a string's own UTF-8.
  package var content: [UInt8] = []
  /// The id index, the delete log and what waits for missing events, held out of line
  /// together: a short text has none of them, and pays one word for all.
  package var lookups = OutOfLine<Lookups>()
  /// The largest Lamport number seen.
  package var maxLamport: UInt64 = 0
  #if CONVERGE_INTERNAL_CHECKS
    /// Mutations since the last sampled invariant check (not part of the state).
    var mutationsSinceCheck = 0
  #endif

  /// What a text keeps beside its runs to find ids and deletes.
  package struct Lookups: Sendable {
    /// Per replica: which leaf holds each integrated id range; empty while the text is
    /// one leaf (see `RGA+Storage.swift`).
    package var index = ReplicaMap<ReplicaIndex>()
    /// Per deleting replica: every delete known, sorted by delete dot.
    package var deleteLog = ReplicaMap<[RGADelta.Delete]>()
    /// Delete targets not integrated yet, per target replica.
    package var unresolvedDeletes = UnresolvedDeletes()
    /// Inserts waiting for their origin, without overlaps, indexed by id and by origin.
    package var pendingInserts = PendingBuffer()

    package init() {}
  }

  /// Delete targets not integrated yet, per target replica (in ``lookups``).
  package var unresolvedDeletes: UnresolvedDeletes {
    get { self[lookup: \.unresolvedDeletes] }
    _modify { yield &self[lookup: \.unresolvedDeletes] }
  }

  /// Inserts waiting for their origin, without overlaps, indexed by id and by origin (in
  /// ``lookups``).
  package var pendingInserts: PendingBuffer {
    get { self[lookup: \.pendingInserts] }
    _modify { yield &self[lookup: \.pendingInserts] }
  }

  /// The part of ``lookups`` at `path`, empty while there are none. A change takes the
  /// part out, so that it is edited in place and held alone, then puts it back, making
  /// the lookups' box only if the part is not empty.
  @inline(__always)
  private subscript<Part: LookupsPart>(lookup path: WritableKeyPath<Lookups, Part>) -> Part {
    get { lookups.read { $0.pointee[keyPath: path] } ?? Part() }
    _modify {
      var part = lookups.take(path, empty: Part())
      defer {
        if !part.isEmpty || !lookups.isEmpty {
          lookups.update(creating: Lookups.init) { $0[keyPath: path] = part }
        }
      }
      yield &part
    }
  }

  /// A copy of the id index (empty while there is none), for walks; lookups read it in
  /// place.
  package var index: ReplicaMap<ReplicaIndex> { lookups.read { $0.pointee.index } ?? ReplicaMap() }

  /// A copy of the delete log (empty while there is none).
  package var deleteLog: ReplicaMap<[RGADelta.Delete]> {
    lookups.read { $0.pointee.deleteLog } ?? ReplicaMap()
  }

  /// The number of visible scalars.
  ///
  /// - Complexity: O(1).
  public var count: Int { leafOrder.totalVisible }

  /// The number of UTF-16 code units of the visible text.
  ///
  /// - Complexity: O(1).
  public var utf16Count: Int { leafOrder.totalUTF16 }

  /// The empty text.
  public init() {}

  /// The visible text.
  ///
  /// - Complexity: O(n).
  public var string: String { prefix(count) }

  /// The visible scalars in order.
  ///
  /// - Complexity: O(n).
  public var scalars: [Unicode.Scalar] {
    // Written in place: appending scalar by scalar checked the array's uniqueness at each.
    [Unicode.Scalar](unsafeUninitializedCapacity: count) { scalars, written in
      forEachVisibleScalar(upTo: count) { scalar in
        guard written < scalars.count else { return }
        scalars.initializeElement(at: written, to: scalar)
        written += 1
      }
    }
  }

  /// The first `maxLength` visible scalars (all of them if fewer): a list row's preview of
  /// a long body, without building the whole text.
  ///
  /// - Complexity: O(k + l) for k scalars returned and l leaves before the last of them.
  public func prefix(_ maxLength: Int) -> String {
    let length = Swift.max(0, Swift.min(maxLength, count))
    var utf8Count = 0
    var pieces = 0
    var only = 0..<0
    forEachVisibleRange(upTo: length) { range in
      utf8Count &+= range.count
      pieces &+= 1
      only = range
    }
    if #available(macOS 26, iOS 26, watchOS 26, tvOS 26, visionOS 26, *) {
      return unchecked(utf8Count: utf8Count, scalars: length, pieces: pieces, only: only)
    }
    // The runs' UTF-8 copied straight into the string's storage, which checks it again.
    return content.withUnsafeBufferPointer { content in
      String(unsafeUninitializedCapacity: utf8Count) { buffer in
        copyVisibleContent(upTo: length, from: content, into: buffer)
      }
    }
  }

  /// The first `scalars` visible scalars, `utf8Count` bytes in `pieces` runs (`only`, if
  /// one), as a string whose bytes are not checked again.
  ///
  /// The content is valid UTF-8 (scalars encoded on insert, bytes checked strictly by the
  /// decoder) and a visible range starts and ends on scalar boundaries, so the string's
  /// own check would only find it valid: at 405 scalars of prose with accents and emoji
  /// it took about two thirds of building the string (BENCHMARKS.md, typed reads, fourth
  /// pass).
  @available(macOS 26, iOS 26, watchOS 26, tvOS 26, visionOS 26, *)
  private func unchecked(utf8Count: Int, scalars: Int, pieces: Int, only: Range<Int>) -> String {
    // One byte a scalar: every scalar is ASCII.
    let ascii = utf8Count == scalars
    return content.withUnsafeBufferPointer { content in
      // Most bodies are one run of content: copied once, straight from it.
      if pieces == 1 {
        let bytes = UnsafeBufferPointer(rebasing: content[only])
        return String(copying: UTF8Span(unchecked: bytes.span, isKnownASCII: ascii))
      }
      return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: utf8Count) { buffer in
        let written = copyVisibleContent(upTo: scalars, from: content, into: buffer)
        let bytes = UnsafeBufferPointer(rebasing: buffer[..<written])
        return String(copying: UTF8Span(unchecked: bytes.span, isKnownASCII: ascii))
      }
    }
  }

  /// Copies the UTF-8 of the first `length` visible scalars (`content`'s bytes, run by
  /// run) to the start of `buffer`, as much as fits; returns how many bytes it wrote.
  private func copyVisibleContent(
    upTo length: Int, from content: UnsafeBufferPointer<UInt8>,
    into buffer: UnsafeMutableBufferPointer<UInt8>
  ) -> Int {
    var written = 0
    forEachVisibleRange(upTo: length) { range in
      guard range.count <= buffer.count - written else { return }
      let target = UnsafeMutableBufferPointer(rebasing: buffer[written..<written + range.count])
      written += target.initialize(fromContentsOf: UnsafeBufferPointer(rebasing: content[range]))
    }
    return written
  }

  /// Calls `body` with the visible scalars in order, the first `length` of them; `length`
  /// must not exceed `count`.
  private func forEachVisibleScalar(upTo length: Int, _ body: (Unicode.Scalar) -> Void) {
    forEachVisibleRange(upTo: length) { forEachScalar(inContent: $0, body) }
  }

  /// Calls `body` with the range of `content` of each visible run in order, up to the
  /// first `length` visible scalars.
  private func forEachVisibleRange(upTo length: Int, _ body: (Range<Int>) -> Void) {
    var remaining = length
    for leafID in leafOrder.documentOrder {
      guard remaining > 0 else { return }
      for run in leaves[leafID].runs where !run.deleted {
        guard remaining > 0 else { return }
        let taken = Swift.min(run.length, remaining)
        let bytes = taken == run.length ? run.utf8 : prefixCounts(of: run, scalars: taken).utf8
        body(run.contentStart..<run.contentStart + bytes)
        remaining -= taken
      }
    }
  }

  /// Whether inserts or deletes wait for missing events (``pendingCount`` is not zero).
  package var hasPending: Bool { !pendingInserts.isEmpty || !unresolvedDeletes.isEmpty }

  /// The number of buffered inserts and deletes (in scalars) not integrated yet.
  ///
  /// - Complexity: O(p).
  public var pendingCount: Int {
    var total = 0
    // Saturating: runs without content may be up to 2^62 long each.
    for insert in pendingInserts {
      let (sum, overflow) = total.addingReportingOverflow(insert.length)
      total = overflow ? .max : sum
    }
    let (sum, overflow) = total.addingReportingOverflow(unresolvedDeletes.total)
    return overflow ? .max : sum
  }
}

/// A part of `RGA.Lookups` that reads as empty while a text has no lookups: what the
/// text's `lookup` subscript takes out for a change and puts back.
private protocol LookupsPart {
  init()
  var isEmpty: Bool { get }
}

extension PendingBuffer: LookupsPart {}
extension UnresolvedDeletes: LookupsPart {}

/// A (replica, counters) range of items, `lower..<upper`; ordered by replica, then
/// lower bound.
package struct TargetRange: Sendable, Comparable {
  package var replica: ReplicaID
  package var lower: UInt64
  package var upper: UInt64

  package static func < (lhs: TargetRange, rhs: TargetRange) -> Bool {
    (lhs.replica, lhs.lower) < (rhs.replica, rhs.lower)
  }
}

/// A change of the visible text, in the coordinates of the text right before it, so a
/// user interface can replay the changes ``RGA/apply(_:)`` returns in order.
public struct TextChange: Sendable, Equatable {
  public enum Kind: Sendable, Equatable {
    case insert
    case delete
  }

  public var kind: Kind
  /// The scalars inserted (in the text after the change) or removed (before it).
  public var scalarRange: Range<Int>
  /// The same range in UTF-16 code units.
  public var utf16Range: Range<Int>

  public init(kind: Kind, scalarRange: Range<Int>, utf16Range: Range<Int>) {
    self.kind = kind
    self.scalarRange = scalarRange
    self.utf16Range = utf16Range
  }
}
