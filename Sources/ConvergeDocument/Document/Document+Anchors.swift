/// Anchors in a document's text fields (see ``TextAnchor``): a note body's cursor or
/// selection that stays on its characters while edits from other devices arrive.
///
/// ```swift
/// let cursor = document.anchor(at: 7, affinity: .preceding, inText: "body", of: note)
/// document.apply(fromLaptop)  // another device typed before the cursor
/// let offset = document.utf16Offset(of: cursor, inText: "body", of: note)
/// ```
extension Document {
  /// An anchor at scalar position `position` of the text field `field` of `key`; in a
  /// text that does not exist yet, the anchor of its start or end.
  ///
  /// - Complexity: O(log n + r), see ``RGA/anchor(at:affinity:)``.
  public func anchor(
    at position: Int, affinity: TextAnchor.Affinity = .following, inText field: String,
    of key: EntityKey
  ) -> TextAnchor {
    text(field, of: key).anchor(at: position, affinity: affinity)
  }

  /// The scalar position of `anchor` in the text field `field` of `key`, or `nil` if its
  /// character has not arrived.
  public func position(of anchor: TextAnchor, inText field: String, of key: EntityKey) -> Int? {
    text(field, of: key).position(of: anchor)
  }

  /// The UTF-16 offset (as in `NSRange`) of `anchor` in the text field `field` of `key`,
  /// or `nil` if its character has not arrived.
  public func utf16Offset(of anchor: TextAnchor, inText field: String, of key: EntityKey)
    -> Int?
  {
    text(field, of: key).utf16Offset(of: anchor)
  }

  /// The text field, or an empty text where there is none: its anchors are the start
  /// and the end, and one bound to a character resolves to `nil`.
  private func text(_ field: String, of key: EntityKey) -> RGA {
    sequence(of: field, in: key) ?? RGA()
  }
}
