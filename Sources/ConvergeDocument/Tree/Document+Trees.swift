extension Document {
  /// The forest the parent fields named `field` form, resolved without cycles
  /// (``DocumentForest``): the same on every replica that holds the same events.
  ///
  /// The forest is kept (shared by copies of the document until one changes) and brought
  /// up to date after a change by judging again only the writes the change can affect
  /// (`ForestResolution`): a local move is judged on top of the forest, a remote move
  /// older than others undoes and redoes the judgements after it.
  ///
  /// - Complexity: O(r) for r replicas in the causal context while the document is
  ///   unchanged. After a change: O(h + log n + c) for a local move in a forest h deep
  ///   with n writes (c the siblings it leaves and joins); O(k log n + m h) for k
  ///   changed entities and m writes from the earliest one they affect to the last, plus
  ///   O(n) if a change deletes or revives an entity some write names. The first read,
  ///   or one after a change touching more than an eighth of the entities or after a
  ///   copy of the document diverged, resolves every write: O(n log n + n h).
  public func forest(of field: String) -> DocumentForest {
    guard let forests else { return DocumentForest(field: field, in: self) }
    return forests.forest(of: field, in: self)
  }

  /// The keys of the entities with events `context` lacks (maybe others too), or `nil`
  /// when they are more than an eighth of the entities (resolving again is then as
  /// cheap).
  func keysTouched(since context: CausalContext) -> [EntityKey]? {
    guard
      let positions = events.entities(
        withEventsAbove: context.versionVector, limit: Swift.max(64, entities.count / 8))
    else { return nil }
    return positions.map { entities.key(at: $0) }
  }

  /// The last move written to a parent field, as written (its parent may be refused by
  /// the forest: read ``forest(of:)`` for where the node is); `nil` if never written.
  ///
  /// - Complexity: O(1).
  public func parentMove(of field: String, in key: EntityKey) -> ParentMove? {
    guard case .parent(let register)? = entities[key]?.fields[field], let value = register.value
    else { return nil }
    return ParentMove(fieldValue: value)
  }

  /// The resolved children of `parent` in the forest of `parentField`, in the order of
  /// the parent's list field `listField`: the list's items that are keys
  /// (``EntityKey/fieldValue``) of nodes whose resolved parent is `parent`, in list order,
  /// then the resolved children the list lacks, sorted by key. So a child moved here by a
  /// device whose list insert lost, or that fell back here from a refused move, still
  /// shows, and one whose move elsewhere won is not shown twice.
  ///
  /// - Complexity: O(s + k + c) for the list's s slots and k items and c children, once
  ///   the forest is resolved (``forest(of:)``).
  public func children(
    of parent: EntityKey, in parentField: String, orderedBy listField: String
  ) -> [EntityKey] {
    let forest = forest(of: parentField)
    let children = forest.children(of: parent)
    guard !children.isEmpty else { return [] }
    var ordered: [EntityKey] = []
    ordered.reserveCapacity(children.count)
    var placed = Set<EntityKey>()
    for item in list(of: listField, in: parent) {
      guard let child = EntityKey(fieldValue: item), forest.parent(of: child) == parent,
        placed.insert(child).inserted
      else { continue }
      ordered.append(child)
    }
    for child in children where !placed.contains(child) { ordered.append(child) }
    return ordered
  }

  /// The visible entities of `type` with no resolved parent in the forest of `field`,
  /// sorted by key: the roots of that type, including those that never had the field.
  ///
  /// - Complexity: O(e) for e entities of the type, once the forest is resolved.
  public func roots(ofType type: String, in field: String) -> [EntityKey] {
    let forest = forest(of: field)
    return keys(ofType: type).filter { forest.parent(of: $0) == nil }
  }
}
