import ConvergeCore

/// How a UTF-16 offset that falls inside a surrogate pair is resolved.
public enum SurrogateRounding: Sendable {
  /// To the start of the scalar.
  case down
  /// To the end of the scalar.
  case up
}

extension RGA {
  /// The UTF-16 offset of scalar position `position` (clamped to `0...count`).
  ///
  /// - Complexity: O(log n + s) for s scalars in the run holding the position.
  public func utf16Offset(ofScalarOffset position: Int) -> Int {
    let target = Swift.min(Swift.max(position, 0), count)
    guard target < count else { return utf16Count }
    let found = locateVisible(target)
    let run = leaves[found.leaf].runs[found.run]
    let start = visibleOffsets(leaf: found.leaf, run: found.run).utf16
    return start + utf16Count(of: run, scalars: found.offset)
  }

  /// The scalar position of UTF-16 offset `offset` (clamped to `0...utf16Count`); an
  /// offset inside a surrogate pair is rounded as `rounding` says, so no scalar splits.
  ///
  /// - Complexity: O(log n + s) for s scalars in the run holding the offset.
  public func scalarOffset(ofUTF16Offset offset: Int, rounding: SurrogateRounding = .down)
    -> Int
  {
    let target = Swift.min(Swift.max(offset, 0), utf16Count)
    guard target < utf16Count else { return count }
    let (leafID, remainder) = leafOrder.leaf(containingUTF16: target)
    var scalars = leafOrder.prefix(of: leafID).visible
    var rest = remainder
    for run in leaves[leafID].runs where !run.deleted {
      if rest >= run.utf16 {
        rest -= run.utf16
        scalars += run.length
        continue
      }
      if run.utf16 == run.length { return scalars + rest }
      return content.withUnsafeBufferPointer { content in
        var position = run.contentStart
        while rest > 0 {
          let next = UTF8Scalars.advance(content, from: position, scalars: 1)
          let width = 1 + next.supplementary
          if rest < width { return rounding == .down ? scalars : scalars + 1 }
          rest -= width
          position = next.end
          scalars += 1
        }
        return scalars
      }
    }
    return scalars
  }
}

extension SharedText {
  /// The UTF-16 offset (as in `NSRange`) of scalar position `position`.
  ///
  /// - Complexity: O(log n + s), see ``RGA/utf16Offset(ofScalarOffset:)``.
  public func utf16Offset(ofScalarOffset position: Int) -> Int {
    rga.utf16Offset(ofScalarOffset: position)
  }

  /// The scalar position of a UTF-16 offset, rounded out of surrogate pairs.
  ///
  /// - Complexity: O(log n + s), see ``RGA/scalarOffset(ofUTF16Offset:rounding:)``.
  public func scalarOffset(ofUTF16Offset offset: Int, rounding: SurrogateRounding = .down)
    -> Int
  {
    rga.scalarOffset(ofUTF16Offset: offset, rounding: rounding)
  }

  /// The scalar range covering a UTF-16 range (an `NSRange`'s `location..<location +
  /// length`): the lower bound rounds down and the upper bound up, so a selection never
  /// cuts a surrogate pair.
  public func scalarRange(ofUTF16Range range: Range<Int>) -> Range<Int> {
    let lower = scalarOffset(ofUTF16Offset: range.lowerBound, rounding: .down)
    let upper = scalarOffset(ofUTF16Offset: range.upperBound, rounding: .up)
    return lower..<Swift.max(lower, upper)
  }

  /// The UTF-16 range of a scalar range.
  public func utf16Range(ofScalarRange range: Range<Int>) -> Range<Int> {
    utf16Offset(ofScalarOffset: range.lowerBound)..<utf16Offset(ofScalarOffset: range.upperBound)
  }

  /// Replaces the UTF-16 range `range` (rounded out of surrogate pairs) with `string`.
  @discardableResult
  public mutating func replace(utf16Range range: Range<Int>, with string: String) -> RGADelta {
    replace(scalarRange(ofUTF16Range: range), with: string)
  }

  /// The index of scalar position `position` in `string`, which must be this text's
  /// ``string`` (or any string with the same scalars).
  ///
  /// - Complexity: O(log n + s) plus `String`'s UTF-16 indexing.
  public func stringIndex(ofScalarOffset position: Int, in string: String) -> String.Index {
    String.Index(utf16Offset: utf16Offset(ofScalarOffset: position), in: string)
  }

  /// The scalar position of `index` in `string`; an index inside a scalar rounds down.
  public func scalarOffset(of index: String.Index, in string: String) -> Int {
    var scalarIndex = Swift.min(Swift.max(index, string.startIndex), string.endIndex)
    while scalarIndex > string.startIndex,
      scalarIndex.samePosition(in: string.unicodeScalars) == nil
    {
      scalarIndex = string.utf8.index(before: scalarIndex)
    }
    return scalarOffset(ofUTF16Offset: scalarIndex.utf16Offset(in: string))
  }
}
