/// Moving a selection through change events, for a text view that holds offsets rather
/// than anchors: the same result as resolving a ``SelectionAnchors`` again, without one.
///
/// Text inserted at a selection's start lands before it and text inserted at its end
/// lands after it, so a selection does not grow at its edges; an empty selection (a
/// cursor) moves past text inserted at its place. Deleted text pulls both ends to where it
/// was.
extension TextChange {
  /// Where `range`, in the text before `changes`, lies after them, in the coordinates the
  /// changes use for `units` (scalars or UTF-16 code units).
  ///
  /// - Complexity: O(c) for c changes.
  public static func map(
    _ range: Range<Int>, through changes: [TextChange], in units: Units = .utf16
  ) -> Range<Int> {
    var lower = range.lowerBound
    var upper = range.upperBound
    for change in changes {
      let changed = units == .utf16 ? change.utf16Range : change.scalarRange
      switch change.kind {
      case .insert:
        let isCursor = lower == upper
        if changed.lowerBound <= lower { lower += changed.count }
        if isCursor {
          upper = lower
        } else if changed.lowerBound < upper {
          upper += changed.count
        }
      case .delete:
        lower = Self.pulled(lower, by: changed)
        upper = Self.pulled(upper, by: changed)
      }
    }
    return lower..<Swift.max(lower, upper)
  }

  /// Which offsets ``map(_:through:in:)`` moves.
  public enum Units: Sendable {
    /// Unicode scalars (``scalarRange``).
    case scalars
    /// UTF-16 code units, as in `NSRange` (``utf16Range``).
    case utf16
  }

  /// An offset after `removed` is deleted: shifted left past it, or to its start if it
  /// was inside.
  private static func pulled(_ offset: Int, by removed: Range<Int>) -> Int {
    if offset >= removed.upperBound { return offset - removed.count }
    return Swift.min(offset, removed.lowerBound)
  }
}

extension TextChange {
  /// The one change that does what this change and then `next` do, when `next` continues
  /// it: an insert inside or at either end of the text this one inserted (typing on), or
  /// a delete whose range reaches the place this one deleted (backspacing, or deleting
  /// forward); `nil` otherwise. The same in both units, so ``map(_:through:in:)`` moves
  /// every offset through the joined change as through the two.
  ///
  /// What a transaction's observers get: consecutive edits of one text are joined as they
  /// are recorded, so typing a paragraph is one change, not one a keystroke.
  @inline(__always)
  func joined(with next: TextChange) -> TextChange? {
    guard kind == next.kind else { return nil }
    let scalars: (Int, Int)
    let utf16: (Int, Int)
    switch kind {
    case .insert:
      // `next` starts within the inserted text: together they insert one range.
      guard scalarRange.reaches(next.scalarRange.lowerBound),
        utf16Range.reaches(next.utf16Range.lowerBound)
      else { return nil }
      scalars = (scalarRange.lowerBound, scalarRange.upperBound + next.scalarRange.count)
      utf16 = (utf16Range.lowerBound, utf16Range.upperBound + next.utf16Range.count)
    case .delete:
      // `next` (in the text after this delete) covers or touches the place it deleted:
      // together they delete from `next`'s start to this one's end plus what `next`
      // removed after that place.
      guard next.scalarRange.reaches(scalarRange.lowerBound),
        next.utf16Range.reaches(utf16Range.lowerBound)
      else { return nil }
      scalars = (
        next.scalarRange.lowerBound,
        scalarRange.upperBound + (next.scalarRange.upperBound - scalarRange.lowerBound)
      )
      utf16 = (
        next.utf16Range.lowerBound,
        utf16Range.upperBound + (next.utf16Range.upperBound - utf16Range.lowerBound)
      )
    }
    // Ordered by construction: each upper bound is at least its lower one.
    return TextChange(
      kind: kind, scalarRange: Range(uncheckedBounds: scalars),
      utf16Range: Range(uncheckedBounds: utf16))
  }
}

extension Array where Element == TextChange {
  /// Appends `change`, joined with the last change when it continues it
  /// (``TextChange/joined(with:)``).
  mutating func append(joining change: TextChange) {
    if let last = self.last, let joined = last.joined(with: change) {
      self[endIndex - 1] = joined
    } else {
      append(change)
    }
  }

  /// Appends `changes` in order, each joined with the one before when it continues it.
  mutating func append(joining changes: [TextChange]) {
    for change in changes { append(joining: change) }
  }
}

extension Range<Int> {
  /// Whether `offset` lies in this range or at its end.
  fileprivate func reaches(_ offset: Int) -> Bool {
    lowerBound <= offset && offset <= upperBound
  }
}

extension DocumentChanges {
  /// Where `range` of the text field `field` of `key`, as it was before these changes,
  /// lies after them (unchanged if they did not touch that text); see
  /// ``TextChange/map(_:through:in:)``.
  public func map(
    _ range: Range<Int>, inText field: String, of key: EntityKey,
    in units: TextChange.Units = .utf16
  ) -> Range<Int> {
    guard let changes = self[key]?.textChanges[field] else { return range }
    return TextChange.map(range, through: changes, in: units)
  }
}
