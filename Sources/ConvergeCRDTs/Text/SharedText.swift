import ConvergeCore

/// One replicated note body: an ``RGA`` together with the replica that edits it and the
/// dot counter it allocates from.
///
/// `SharedText` is the standalone convenience for an app that syncs a single text; inside a
/// document the document layer owns the causal context and uses ``RGA`` directly.
///
/// ```swift
/// var phone = SharedText(replica: ReplicaID(rawValue: 1))
/// let hello = phone.insert("Hello", at: 0)
/// var laptop = SharedText(replica: ReplicaID(rawValue: 2))
/// laptop.apply(hello)
/// let bang = laptop.insert("!", at: 5)
/// let world = phone.insert(" world", at: 5)
/// phone.apply(bang)
/// laptop.apply(world)
/// // phone.string == laptop.string: "Hello world!" or "Hello! world"
/// ```
///
/// Positions count Unicode scalars and are clamped to the text; `SharedText+UTF16.swift` converts
/// from and to UTF-16 offsets (`NSRange`) and `String.Index`.
public struct SharedText: Sendable {
  /// The replicated sequence.
  public private(set) var rga: RGA
  /// The replica whose dots local edits use.
  public let replica: ReplicaID
  /// The next counter of `replica`: one past every counter of `replica` known, as
  /// ``CausalContext/nextDot(for:)`` would answer, kept as one integer so an edit
  /// costs no dictionary access.
  private var nextCounter: UInt64

  /// An empty text edited by `replica`.
  public init(replica: ReplicaID = .random()) {
    self.rga = RGA()
    self.replica = replica
    self.nextCounter = 1
  }

  /// A text that continues `rga` as `replica`; counters resume after the largest one of
  /// `replica` that `rga` holds.
  public init(_ rga: RGA, replica: ReplicaID) {
    self.rga = rga
    self.replica = replica
    self.nextCounter = rga.dots.counters(of: replica).maximum &+ 1
  }

  /// The visible text. - Complexity: O(n).
  public var string: String { rga.string }
  /// Visible Unicode scalars. - Complexity: O(1).
  public var count: Int { rga.count }
  /// Visible UTF-16 code units. - Complexity: O(1).
  public var utf16Count: Int { rga.utf16Count }
  /// Every insert id and delete dot held. - Complexity: O(n).
  public var dots: CausalContext { rga.dots }
  /// Buffered scalars not integrated yet. - Complexity: O(p).
  public var pendingCount: Int { rga.pendingCount }

  /// Inserts `string` at scalar position `position` (clamped to `0...count`).
  ///
  /// - Complexity: O(log n + k) for k inserted scalars.
  @discardableResult
  public mutating func insert(_ string: String, at position: Int) -> RGADelta {
    insert(string.unicodeScalars, at: position)
  }

  /// Inserts `scalars` at scalar position `position` (clamped to `0...count`).
  ///
  /// - Complexity: O(log n + k) for k inserted scalars.
  @discardableResult
  public mutating func insert<S: Collection>(_ scalars: S, at position: Int) -> RGADelta
  where S.Element == Unicode.Scalar {
    guard let dots = allocate(scalars.count) else { return RGADelta() }
    return rga.insert(scalars, at: position, firstDot: dots)
  }

  /// Deletes the scalars in `range` (clamped to the text).
  ///
  /// - Complexity: O(log n + r) for r runs touched.
  @discardableResult
  public mutating func delete(_ range: Range<Int>) -> RGADelta {
    let lower = Swift.min(Swift.max(range.lowerBound, 0), count)
    let upper = Swift.min(Swift.max(range.upperBound, lower), count)
    guard let dots = allocate(upper - lower) else { return RGADelta() }
    return rga.delete(lower..<upper, firstDot: dots)
  }

  /// Replaces the scalars in `range` (clamped to the text) with `string`.
  ///
  /// - Complexity: O(log n + r + k).
  @discardableResult
  public mutating func replace(_ range: Range<Int>, with string: String) -> RGADelta {
    var delta = delete(range)
    let lower = Swift.min(Swift.max(range.lowerBound, 0), count)
    delta.merge(insert(string, at: lower))
    return delta
  }

  /// Replaces `deleting` scalars at `position` with `inserting`, returning no delta: the
  /// fastest local edit, for replaying traces and for editors that sync by
  /// ``delta(since:)`` rather than per edit.
  ///
  /// - Complexity: O(log n + r + k).
  public mutating func edit(
    at position: Int, deleting: Int, inserting scalars: some Collection<Unicode.Scalar>
  ) {
    edit(at: position, deleting: deleting, inserting: ArraySlice(scalars))
  }

  /// Replaces `deleting` scalars at `position` with `inserting`; see
  /// ``edit(at:deleting:inserting:)-(_,_,Collection<Unicode.Scalar>)``.
  ///
  /// - Complexity: O(log n + r + k).
  public mutating func edit(
    at position: Int, deleting: Int, inserting scalars: ArraySlice<Unicode.Scalar>
  ) {
    if deleting > 0 {
      let lower = Swift.min(Swift.max(position, 0), count)
      let upper = Swift.min(lower + Swift.min(deleting, count), count)
      if let dots = allocate(upper - lower) {
        rga.deleteLocally(lower..<upper, firstDot: dots) { _ in }
      }
    }
    let length = scalars.count
    guard length > 0, let lamport = rga.nextLamport(for: length), let dots = allocate(length)
    else { return }
    let (start, utf16, utf8) = rga.appendContent(scalars)
    _ = rga.insertLocally(
      firstDot: dots, lamport: lamport, contentStart: start, length: length, utf16: utf16,
      utf8: utf8, at: position)
  }

  /// Integrates a remote delta; see ``RGA/apply(_:)``.
  @discardableResult
  public mutating func apply(_ delta: RGADelta) -> [TextChange] {
    for insert in delta.inserts where insert.id.replica == replica {
      advance(past: insert.id.counter, by: UInt64(insert.length))
    }
    for delete in delta.deletes where delete.dot.replica == replica {
      advance(past: delete.dot.counter, by: delete.count)
    }
    return rga.apply(delta)
  }

  /// Joins `other` into this text.
  ///
  /// - Complexity: O(n + m).
  public mutating func merge(_ other: SharedText) {
    merge(other.rga)
  }

  /// Joins `other` into this text.
  ///
  /// - Complexity: O(n + m).
  public mutating func merge(_ other: RGA) {
    rga.merge(other)
    nextCounter = Swift.max(nextCounter, rga.dots.counters(of: replica).maximum &+ 1)
  }

  /// Exactly what a replica knowing `context` lacks.
  ///
  /// - Complexity: see ``RGA/delta(since:)``.
  public func delta(since context: CausalContext) -> RGADelta {
    rga.delta(since: context)
  }

  /// The first of `length` fresh dots, or `nil` when there are none to take.
  private mutating func allocate(_ length: Int) -> Dot? {
    guard length > 0 else { return nil }
    let (end, overflow) = nextCounter.addingReportingOverflow(UInt64(length))
    guard !overflow, nextCounter > 0 else { return nil }
    defer { nextCounter = end }
    return Dot(replica: replica, counter: nextCounter)
  }

  private mutating func advance(past counter: UInt64, by length: UInt64) {
    let (end, overflow) = counter.addingReportingOverflow(length)
    nextCounter = Swift.max(nextCounter, overflow ? .max : end)
  }
}

extension SharedText: Equatable {
  /// Texts are equal when their replicated content is; the editing replica is not part
  /// of the content.
  public static func == (lhs: SharedText, rhs: SharedText) -> Bool { lhs.rga == rhs.rga }
}
