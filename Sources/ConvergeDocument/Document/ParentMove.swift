/// One write of a tree node's parent field: the parent the node moved under (`nil`: it
/// became a root) and the parent it had when the move was made, which the forest falls
/// back to when the move would close a cycle (``DocumentForest``).
///
/// Stored as the value of the field's last-writer-wins register, as a field value
/// (``fieldValue``): `{"from": key or null, "to": key or null}`, each key a one-entry
/// record `{type: id}`.
public struct ParentMove: Hashable, Sendable {
  /// The parent the node moved under; `nil` for a root.
  public var parent: EntityKey?
  /// The node's parent as the writer's document showed it when it moved the node.
  public var previous: EntityKey?

  /// A move of a node under `parent` from `previous`.
  public init(parent: EntityKey?, previous: EntityKey?) {
    self.parent = parent
    self.previous = previous
  }

  /// The move as the register stores it.
  public var fieldValue: FieldValue {
    .record(["from": Self.value(of: previous), "to": Self.value(of: parent)])
  }

  /// The move a register holds, or `nil` if the value is not one.
  public init?(fieldValue: FieldValue) {
    guard case .record(let fields) = fieldValue, fields.count == 2,
      let to = fields["to"], let from = fields["from"],
      case .some(let parent) = Self.key(of: to), case .some(let previous) = Self.key(of: from)
    else { return nil }
    self.init(parent: parent, previous: previous)
  }

  private static func value(of key: EntityKey?) -> FieldValue { key?.fieldValue ?? .null }

  /// The key a value names: `.some(nil)` for null, `nil` for a malformed value.
  private static func key(of value: FieldValue) -> EntityKey?? {
    if case .null = value { return .some(nil) }
    return EntityKey(fieldValue: value).map { .some($0) }
  }
}
