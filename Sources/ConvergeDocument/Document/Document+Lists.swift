extension Document {
  /// The items of a list field in order (empty if it has none or is of another kind).
  ///
  /// - Complexity: O(s) for s slots (tombstones included).
  public func list(of field: String, in key: EntityKey) -> [FieldValue] {
    guard case .list(let list)? = entities[key]?.fields[field] else { return [] }
    return list.values
  }

  /// The list field itself, for index lookups and fine-grained reads.
  public func movableList(of field: String, in key: EntityKey) -> MovableList? {
    guard case .list(let list)? = entities[key]?.fields[field] else { return nil }
    return list
  }
}
