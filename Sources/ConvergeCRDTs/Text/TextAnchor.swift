import ConvergeCore

/// A position in a text that stays where the user left it while the text changes on any
/// replica: a cursor, one end of a selection, a comment's place.
///
/// An anchor is bound to one character, by the id of the event that inserted it, and to
/// one side of it (its ``Affinity``); it does not store an offset. Every replica that holds
/// that character resolves the anchor to the same place in the same converged text, after
/// any inserts and deletes from anywhere. When its character is deleted, the anchor sticks
/// to the gap the character left: between the nearest surviving characters on either side.
///
/// ```swift
/// var text = SharedText(replica: ReplicaID(rawValue: 1))
/// _ = text.insert("Hello world", at: 0)
/// let cursor = text.anchor(at: 6)           // before "w"
/// _ = text.insert("big ", at: 6)            // typed at the cursor by another device, say
/// let offset = text.position(of: cursor)    // 10: still before "w"
/// ```
public struct TextAnchor: Hashable, Sendable {
  /// Which character a position binds to.
  public enum Affinity: UInt8, Hashable, Sendable {
    /// Bound to the character after the position: text inserted at the position lands
    /// before the anchor, which moves right past it (a cursor after a remote insert at
    /// the same place, as in Yjs's default). At the end of the text it binds to the end.
    case following = 0
    /// Bound to the character before the position: text inserted at the position lands
    /// after the anchor. At the start of the text it binds to the start.
    case preceding = 1
  }

  /// The character the anchor is bound to, or `nil` for the start (``Affinity/preceding``)
  /// or the end (``Affinity/following``) of the text.
  public let character: Dot?
  /// The side of ``character`` the anchor keeps to.
  public let affinity: Affinity

  /// An anchor bound to `character` (or to the text's start or end when `nil`).
  public init(character: Dot?, affinity: Affinity) {
    self.character = character
    self.affinity = affinity
  }
}

/// A selection (or any range) that survives remote edits: a pair of anchors.
///
/// Its start is bound to the first selected character and its end to the last, so text
/// inserted just outside the selection stays outside it; an empty selection is a cursor,
/// both ends one anchor.
public struct SelectionAnchors: Hashable, Sendable {
  /// The anchor of the first selected character (or the cursor).
  public let start: TextAnchor
  /// The anchor after the last selected character.
  public let end: TextAnchor

  /// A selection between two anchors.
  public init(start: TextAnchor, end: TextAnchor) {
    self.start = start
    self.end = end
  }
}

extension RGA {
  /// An anchor at visible scalar position `position` (clamped to `0...count`).
  ///
  /// - Complexity: O(log n + r) for r runs in a leaf.
  public func anchor(at position: Int, affinity: TextAnchor.Affinity = .following) -> TextAnchor {
    let target = Swift.min(Swift.max(position, 0), count)
    let characterPosition = affinity == .following ? target : target - 1
    guard characterPosition >= 0, characterPosition < count else {
      return TextAnchor(character: nil, affinity: affinity)
    }
    let found = locateVisible(characterPosition)
    let run = leaves[found.leaf].runs[found.run]
    return TextAnchor(
      character: Dot(replica: run.replica, counter: run.counter + UInt64(found.offset)),
      affinity: affinity)
  }

  /// The visible scalar position of `anchor`, or `nil` if its character has not reached
  /// this replica yet.
  ///
  /// - Complexity: O(log n + r) for r runs in a leaf.
  public func position(of anchor: TextAnchor) -> Int? {
    resolve(anchor)?.scalars
  }

  /// The UTF-16 offset (as in `NSRange`) of `anchor`, or `nil` if its character has not
  /// reached this replica yet.
  ///
  /// - Complexity: O(log n + r + s) for r runs in a leaf and s scalars in a run.
  public func utf16Offset(of anchor: TextAnchor) -> Int? {
    resolve(anchor)?.utf16
  }

  /// An anchor pair for `range` (clamped to the text): see ``SelectionAnchors``.
  public func selection(_ range: Range<Int>) -> SelectionAnchors {
    let start = anchor(at: range.lowerBound, affinity: .following)
    guard range.upperBound > range.lowerBound else {
      return SelectionAnchors(start: start, end: start)
    }
    return SelectionAnchors(start: start, end: anchor(at: range.upperBound, affinity: .preceding))
  }

  /// The scalar range `selection` covers now (empty where its characters were, if all of
  /// them were deleted), or `nil` if one of its characters has not reached this replica.
  public func range(of selection: SelectionAnchors) -> Range<Int>? {
    guard let lower = position(of: selection.start), let upper = position(of: selection.end)
    else { return nil }
    return lower..<Swift.max(lower, upper)
  }

  /// The UTF-16 range `selection` covers now (an `NSRange`'s `location..<location +
  /// length`), or `nil` as for ``range(of:)``.
  public func utf16Range(of selection: SelectionAnchors) -> Range<Int>? {
    guard let lower = utf16Offset(of: selection.start), let upper = utf16Offset(of: selection.end)
    else { return nil }
    return lower..<Swift.max(lower, upper)
  }

  /// The visible scalars and UTF-16 units before the anchor's place.
  private func resolve(_ anchor: TextAnchor) -> (scalars: Int, utf16: Int)? {
    guard let character = anchor.character else {
      return anchor.affinity == .following ? (count, utf16Count) : (0, 0)
    }
    guard let found = locate(character) else { return nil }
    let run = leaves[found.leaf].runs[found.run]
    var (scalars, utf16) = leafOrder.prefix(of: found.leaf)
    scalars &+= found.scalarsBefore
    utf16 &+= found.utf16Before
    guard !run.deleted else { return (scalars, utf16) }
    // A visible character: count the run's characters before it, and itself when the
    // anchor keeps to its far side.
    let through = found.offset + (anchor.affinity == .preceding ? 1 : 0)
    scalars &+= through
    utf16 &+= utf16Count(of: run, scalars: through)
    return (scalars, utf16)
  }
}

extension SharedText {
  /// An anchor at scalar position `position`; see ``RGA/anchor(at:affinity:)``.
  public func anchor(at position: Int, affinity: TextAnchor.Affinity = .following) -> TextAnchor {
    rga.anchor(at: position, affinity: affinity)
  }

  /// The scalar position of `anchor` in this text, or `nil` if its character has not
  /// arrived.
  public func position(of anchor: TextAnchor) -> Int? { rga.position(of: anchor) }

  /// The UTF-16 offset of `anchor` in this text, or `nil` if its character has not
  /// arrived.
  public func utf16Offset(of anchor: TextAnchor) -> Int? { rga.utf16Offset(of: anchor) }

  /// The index of `anchor` in ``string`` (equal to `string`, as `String` values compare),
  /// or `nil` if its character has not arrived.
  ///
  /// - Complexity: that of ``utf16Offset(of:)`` plus `String`'s UTF-16 index conversion.
  public func index(of anchor: TextAnchor, in string: String) -> String.Index? {
    guard let offset = utf16Offset(of: anchor) else { return nil }
    return string.utf16.index(string.utf16.startIndex, offsetBy: offset, limitedBy: string.endIndex)
  }

  /// An anchor pair for a scalar range; see ``SelectionAnchors``.
  public func selection(_ range: Range<Int>) -> SelectionAnchors { rga.selection(range) }

  /// The scalar range a selection covers now, or `nil` if a character has not arrived.
  public func range(of selection: SelectionAnchors) -> Range<Int>? { rga.range(of: selection) }

  /// The UTF-16 range a selection covers now, or `nil` if a character has not arrived.
  public func utf16Range(of selection: SelectionAnchors) -> Range<Int>? {
    rga.utf16Range(of: selection)
  }
}
