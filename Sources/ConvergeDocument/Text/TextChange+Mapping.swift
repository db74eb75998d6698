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
