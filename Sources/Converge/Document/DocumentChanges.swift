/// What a transaction or a merge changed, so a UI can update without diffing.
///
/// Lists are sorted, so the same changes read the same on every device.
public struct DocumentChanges: Sendable, Equatable {
  /// The changes, one per entity, sorted by key.
  public internal(set) var entities: [EntityChange] = []

  /// No changes.
  public init() {}

  /// Whether nothing visible changed.
  public var isEmpty: Bool { entities.isEmpty }

  /// The entities that became visible.
  public var created: [EntityKey] { entities.filter { $0.kind == .created }.map(\.key) }
  /// The entities that were deleted.
  public var deleted: [EntityKey] { entities.filter { $0.kind == .deleted }.map(\.key) }
  /// The entities that stayed visible and had fields changed.
  public var updated: [EntityKey] { entities.filter { $0.kind == .updated }.map(\.key) }

  /// The change to one entity, if it changed.
  ///
  /// - Complexity: O(k) for k changed entities.
  public subscript(key: EntityKey) -> EntityChange? {
    entities.first { $0.key == key }
  }
}

/// How one entity changed.
public struct EntityChange: Sendable, Equatable {
  /// Whether the entity appeared, disappeared or changed while visible.
  public enum Kind: Sendable, Equatable {
    /// It became visible: created, or revived by an edit concurrent with its deletion.
    case created
    /// It was visible and is no longer.
    case deleted
    /// It stayed visible and some fields changed.
    case updated
  }

  /// The entity that changed.
  public var key: EntityKey
  /// How it changed.
  public var kind: Kind
  /// The fields whose visible value changed, sorted.
  public var fields: [String]
  /// For text fields, the edits in visible coordinates, in the order they apply.
  public var textChanges: [String: [TextChange]]
}

/// Collects visibility and field changes while a delta is applied.
struct ChangeRecorder {
  private var visibleBefore: [EntityKey: Bool] = [:]
  private var fields: [EntityKey: Set<String>] = [:]
  private var texts: [EntityKey: [String: [TextChange]]] = [:]

  mutating func noteBefore(_ key: EntityKey, in document: Document) {
    if visibleBefore[key] == nil { visibleBefore[key] = document.contains(key) }
  }

  mutating func noteField(_ name: String, of key: EntityKey, changed: Bool, text: [TextChange]) {
    guard changed else { return }
    fields[key, default: []].insert(name)
    if !text.isEmpty { texts[key, default: [:]][name, default: []].append(contentsOf: text) }
  }

  func finish(in document: Document) -> DocumentChanges {
    var changes = DocumentChanges()
    for (key, wasVisible) in visibleBefore {
      let isVisible = document.contains(key)
      let changedFields = (fields[key] ?? []).sorted(by: fieldNameOrder)
      let kind: EntityChange.Kind
      switch (wasVisible, isVisible) {
      case (false, true): kind = .created
      case (true, false): kind = .deleted
      case (true, true):
        guard !changedFields.isEmpty else { continue }
        kind = .updated
      case (false, false): continue
      }
      changes.entities.append(
        EntityChange(
          key: key, kind: kind, fields: changedFields, textChanges: texts[key] ?? [:]))
    }
    changes.entities.sort { $0.key < $1.key }
    return changes
  }
}
