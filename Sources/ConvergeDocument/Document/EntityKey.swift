/// Identifies an entity in a ``Document``: its type name and its id within that type.
///
/// Apps usually pick a UUID string as the id. Keying by type as well lets an app list
/// "all notes" without scanning other types, and keeps ids of different types apart.
public struct EntityKey: Hashable, Comparable, Sendable {
  /// The entity's type name, e.g. `"note"`.
  public var type: String {
    didSet { hashCode = Self.hashCode(type, id) }
  }
  /// The entity's id within its type.
  public var id: String {
    didSet { hashCode = Self.hashCode(type, id) }
  }
  /// The type and id hashed once: creating a note looks its key up about fifteen times,
  /// and hashing two strings each time was 5% of building a library of notes. Four
  /// bytes, so that the document's ``EntityTable`` keeps it beside each id cheaply.
  private(set) var hashCode: UInt32

  /// The key of the entity `id` of type `type`.
  public init(type: String, id: String) {
    self.type = type
    self.id = id
    self.hashCode = Self.hashCode(type, id)
  }

  /// The key of `type` and `id` whose hash, `hashCode`, a table kept.
  init(type: String, id: String, hashCode: UInt32) {
    self.type = type
    self.id = id
    self.hashCode = hashCode
  }

  private static func hashCode(_ type: String, _ id: String) -> UInt32 {
    var hasher = Hasher()
    hasher.combine(type)
    hasher.combine(id)
    return UInt32(truncatingIfNeeded: hasher.finalize())
  }

  public static func == (lhs: EntityKey, rhs: EntityKey) -> Bool {
    lhs.hashCode == rhs.hashCode && lhs.type == rhs.type && lhs.id == rhs.id
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(hashCode)
  }

  /// Orders by type, then id, comparing Unicode scalars, so every device lists entities
  /// in the same order whatever its locale.
  @inlinable public static func < (lhs: EntityKey, rhs: EntityKey) -> Bool {
    // UTF-8 orders bytes as their scalars, and reads several times faster.
    if lhs.type != rhs.type { return utf8Precedes(lhs.type, rhs.type) }
    return utf8Precedes(lhs.id, rhs.id)
  }
}

extension EntityKey: CustomStringConvertible {
  /// `type/id`, e.g. `note/1F2E…`.
  public var description: String { "\(type)/\(id)" }
}

/// Orders field names by their Unicode scalars, the same on every device.
@inlinable package func fieldNameOrder(_ lhs: String, _ rhs: String) -> Bool {
  utf8Precedes(lhs, rhs)
}
