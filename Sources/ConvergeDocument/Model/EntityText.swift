/// A handle on one text field of one entity: the note's body an editor types into.
///
/// Get one from an entity key and a field name, or from a model's key path, checked
/// against its schema. Then read through the document and edit inside a transaction,
/// each edit O(log n), the way a text view reports it:
///
/// ```swift
/// let body = try EntityText(\Note.body, of: id)
/// replica.transact { $0.insertText("milk, ", at: 0, in: body) }
/// let cursor = replica.document.anchor(at: 6, affinity: .preceding, in: body)
/// replica.transact { $0.replaceText(utf16Range: 0..<4, with: "oat milk", in: body) }
/// let offset = replica.document.utf16Offset(of: cursor, in: body)  // 10, after "oat milk,"
/// ```
///
/// The handle is an address, not a copy: it holds the key and the field name, never the
/// text, so one handle serves every replica and every version of the document, and an
/// edit through it is exactly ``DocumentTransaction/insertText(_:at:in:of:)`` and its
/// siblings (one write path; the handle adds no work per keystroke). Assigning the model's
/// `String` property in ``Replica/update(_:id:_:)`` records the same operations but reads
/// and compares the whole string: O(n) a keystroke, fine for a form, not for typing.
///
/// It is named for what it is, an entity's text, and not `Text`, `TextField`,
/// `TextEditor` or `TextSelection`, which SwiftUI declares and an app imports beside
/// Converge.
public struct EntityText: Hashable, Sendable {
  /// The entity whose field this is.
  public let key: EntityKey
  /// The name of the text field.
  public let field: String

  /// The handle of the text field `field` of `key`. Nothing is checked or created: the
  /// field comes into being with the first insert, and reads of a missing field see an
  /// empty text.
  public init(_ field: String, of key: EntityKey) {
    self.key = key
    self.field = field
  }

  /// The handle of the text field a model's `String` property is stored in.
  ///
  /// A property of another type does not compile; a `String` property the schema lists as
  /// a register, or does not list, throws ``NotATextField``.
  ///
  /// - Complexity: O(f) for the f fields of the model's schema.
  public init<Model: EntityModel>(_ keyPath: KeyPath<Model, String>, of id: String)
    throws(NotATextField)
  {
    let wanted: AnyKeyPath = keyPath
    guard let field = Model.schema.fields.first(where: { $0.keyPath as AnyKeyPath == wanted })
    else {
      throw NotATextField(entityType: Model.entityType, field: nil, kind: nil)
    }
    guard field.kind == .text else {
      throw NotATextField(entityType: Model.entityType, field: field.name, kind: field.kind)
    }
    self.init(field.name, of: EntityKey(type: Model.entityType, id: id))
  }

  /// The error of asking for the text handle of a property that is not stored as text.
  public struct NotATextField: Error, Equatable, Sendable, CustomStringConvertible {
    /// The model's entity type.
    public let entityType: String
    /// The field the property is stored in, or `nil` if the schema does not list it.
    public let field: String?
    /// How the field is stored instead, or `nil` if the schema does not list it.
    public let kind: FieldKind?

    public var description: String {
      guard let field, let kind else {
        return "the schema of \"\(entityType)\" does not list this property"
      }
      return "\"\(field)\" of \"\(entityType)\" is a \(kind) field, not text"
    }
  }
}

// MARK: - Reading

extension Document {
  /// The content of the text (empty if the field does not exist).
  ///
  /// - Complexity: O(n) for n visible scalars.
  public func string(of text: EntityText) -> String {
    self.text(of: text.field, in: text.key)
  }

  /// The text's length in Unicode scalars, the unit of its edit positions.
  ///
  /// - Complexity: O(1).
  public func count(of text: EntityText) -> Int {
    sequence(of: text.field, in: text.key)?.count ?? 0
  }

  /// The text's length in UTF-16 code units (an `NSString`'s length).
  ///
  /// - Complexity: O(1).
  public func utf16Count(of text: EntityText) -> Int {
    sequence(of: text.field, in: text.key)?.utf16Count ?? 0
  }

  /// The UTF-16 offset (as in `NSRange`) of scalar position `position` (clamped).
  ///
  /// - Complexity: O(log n + s), see ``RGA/utf16Offset(ofScalarOffset:)``.
  public func utf16Offset(ofScalarOffset position: Int, in text: EntityText) -> Int {
    sequence(of: text.field, in: text.key)?.utf16Offset(ofScalarOffset: position) ?? 0
  }

  /// The scalar position of a UTF-16 offset (clamped), rounded out of a surrogate pair as
  /// `rounding` says.
  ///
  /// - Complexity: O(log n + s), see ``RGA/scalarOffset(ofUTF16Offset:rounding:)``.
  public func scalarOffset(
    ofUTF16Offset offset: Int, rounding: SurrogateRounding = .down, in text: EntityText
  ) -> Int {
    sequence(of: text.field, in: text.key)?.scalarOffset(ofUTF16Offset: offset, rounding: rounding)
      ?? 0
  }

  /// The scalar range covering a UTF-16 range (an `NSRange`): the lower bound rounds down
  /// and the upper bound up, so no surrogate pair is cut.
  ///
  /// - Complexity: O(log n + s).
  public func scalarRange(ofUTF16Range range: Range<Int>, in text: EntityText) -> Range<Int> {
    guard let rga = sequence(of: text.field, in: text.key) else { return 0..<0 }
    return rga.scalarRange(ofUTF16Range: range)
  }

  /// The UTF-16 range (an `NSRange`'s bounds) of a scalar range.
  ///
  /// - Complexity: O(log n + s).
  public func utf16Range(ofScalarRange range: Range<Int>, in text: EntityText) -> Range<Int> {
    guard let rga = sequence(of: text.field, in: text.key) else { return 0..<0 }
    return rga.utf16Offset(
      ofScalarOffset: range.lowerBound)..<rga.utf16Offset(
        ofScalarOffset: range.upperBound)
  }

  /// An anchor at scalar position `position` that stays on its character while the text
  /// changes anywhere (see ``TextAnchor``); in a text that does not exist yet, its start
  /// or end.
  ///
  /// - Complexity: O(log n + r), see ``RGA/anchor(at:affinity:)``.
  public func anchor(
    at position: Int, affinity: TextAnchor.Affinity = .following, in text: EntityText
  ) -> TextAnchor {
    anchor(at: position, affinity: affinity, inText: text.field, of: text.key)
  }

  /// The scalar position of `anchor`, or `nil` if its character has not arrived.
  ///
  /// - Complexity: O(log n).
  public func position(of anchor: TextAnchor, in text: EntityText) -> Int? {
    position(of: anchor, inText: text.field, of: text.key)
  }

  /// The UTF-16 offset of `anchor`, or `nil` if its character has not arrived.
  ///
  /// - Complexity: O(log n).
  public func utf16Offset(of anchor: TextAnchor, in text: EntityText) -> Int? {
    utf16Offset(of: anchor, inText: text.field, of: text.key)
  }

  /// A selection of the scalar range `range` (clamped) that keeps to its characters; see
  /// ``SelectionAnchors``.
  ///
  /// - Complexity: O(log n + r).
  public func selection(_ range: Range<Int>, in text: EntityText) -> SelectionAnchors {
    (sequence(of: text.field, in: text.key) ?? RGA()).selection(range)
  }

  /// The scalar range a selection covers now, or `nil` if a character has not arrived.
  ///
  /// - Complexity: O(log n).
  public func range(of selection: SelectionAnchors, in text: EntityText) -> Range<Int>? {
    (sequence(of: text.field, in: text.key) ?? RGA()).range(of: selection)
  }

  /// The UTF-16 range a selection covers now (for an `NSRange`), or `nil` if a character
  /// has not arrived.
  ///
  /// - Complexity: O(log n).
  public func utf16Range(of selection: SelectionAnchors, in text: EntityText) -> Range<Int>? {
    (sequence(of: text.field, in: text.key) ?? RGA()).utf16Range(of: selection)
  }
}

extension RGA {
  /// The scalar range covering a UTF-16 range: lower bound rounded down, upper bound up.
  func scalarRange(ofUTF16Range range: Range<Int>) -> Range<Int> {
    let lower = scalarOffset(ofUTF16Offset: range.lowerBound, rounding: .down)
    let upper = scalarOffset(ofUTF16Offset: range.upperBound, rounding: .up)
    return lower..<Swift.max(lower, upper)
  }
}

// MARK: - Editing

extension DocumentTransaction {
  /// Inserts `string` at scalar position `position` (clamped to the text's length).
  ///
  /// The same edit as ``insertText(_:at:in:of:)``.
  ///
  /// - Complexity: O(log n + m) for m inserted scalars.
  public mutating func insertText(_ string: String, at position: Int, in text: EntityText) {
    insertText(string, at: position, in: text.field, of: text.key)
  }

  /// Deletes the scalars in `range` (clamped to the text).
  ///
  /// The same edit as ``deleteText(_:in:of:)``.
  ///
  /// - Complexity: O(log n + k) for k deleted scalars.
  public mutating func deleteText(_ range: Range<Int>, in text: EntityText) {
    deleteText(range, in: text.field, of: text.key)
  }

  /// Replaces the scalars in `range` with `string`: a delete, then an insert.
  ///
  /// The same edit as ``replaceText(_:with:in:of:)``.
  ///
  /// - Complexity: O(log n + k + m) for k deleted and m inserted scalars.
  public mutating func replaceText(_ range: Range<Int>, with string: String, in text: EntityText) {
    replaceText(range, with: string, in: text.field, of: text.key)
  }

  /// Replaces the UTF-16 range `range` (an `NSRange`'s bounds, as a text view's delegate
  /// reports an edit) with `string`; a range cutting a surrogate pair widens to cover it.
  /// An empty range inserts, an empty string deletes.
  ///
  /// - Complexity: O(log n + s + k + m), the conversion and then the scalar edit.
  public mutating func replaceText(
    utf16Range range: Range<Int>, with string: String, in text: EntityText
  ) {
    let scalars = document.scalarRange(ofUTF16Range: range, in: text)
    replaceText(scalars, with: string, in: text.field, of: text.key)
  }
}
