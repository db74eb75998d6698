/// The visible elements of set fields as typed walks (``Document/models(_:)``, `all`)
/// last built them, kept beside a document's entities so that reading the same tags
/// again is a lookup and a retain, not an allocation and a hash of every element.
///
/// Nothing is added to a set: a set's entries stay the plain array they are, and a
/// document that no model walk reads keeps nothing here (the raw path pays one cache
/// an entity type, allocated with the type, inside the entity table's list of types). A kept value is valid by the identity of the entries it was built
/// from, which it retains: while the cache holds that array, no one can change it in
/// place (copy-on-write copies it first) nor free it and reuse its address, so a set
/// whose entries are that very array (same buffer, same count) holds exactly those
/// elements. Any write or merge of the field gives it another array, and the next walk
/// builds again and replaces the entry. The price: the first write to a set after a
/// walk read it copies its few entries once, and an entry keeps an old array alive
/// until its field is read again (one entry a field, so bounded by the fields read).
///
/// Copies of a document share its caches (references in ``EntityTable``'s types). That
/// is safe because validity is identity, not a key: two copies edited apart have other
/// arrays for the fields they changed, and each reads its own; they only rebuild in
/// turn when both are walked alternately. (The forest cache is keyed by causal context,
/// which copies edited apart can share with other states; this one is not.)
///
/// `@unchecked Sendable`: `primary` and `others` are read and written only under
/// `lock`; what they hold is immutable (`Sendable` objects and arrays never changed
/// in place while held here).
final class SetReadCache: @unchecked Sendable {
  /// A set field's visible elements as one reader type built them, and the entries
  /// they were built from.
  private struct Kept {
    var field: Int
    var entries: [SetElements.Entry]
    var object: AnyObject & Sendable
  }

  /// A position and a field's slot in the entity's table.
  private struct FieldAt: Hashable {
    var position: Int
    var field: Int
  }

  /// By entity position: the first set field read there (most entities have one).
  private var primary: [Kept?] = []
  /// The other set fields of entities that have several.
  private var others: [FieldAt: Kept] = [:]
  private let lock = CacheLock()

  /// The object `build` makes of `elements`, the set field in slot `field` of the
  /// entity at `position`: the kept one if it was built from these very entries by a
  /// reader of the same type, else built now and kept.
  ///
  /// - Complexity: O(1) when kept (a lock, an identity test, a cast); else `build`'s
  ///   cost, plus amortized O(1) to keep it.
  func object<Object: AnyObject & Sendable>(
    of elements: SetElements, at position: Int, field: Int, as type: Object.Type,
    build: () -> Object
  ) -> Object {
    let entries = elements.entries
    let kept = lock.withLock {
      position < primary.count && primary[position]?.field == field
        ? primary[position] : others[FieldAt(position: position, field: field)]
    }
    if let kept, Self.same(kept.entries, entries), let object = kept.object as? Object {
      return object
    }
    // Built outside the lock: readers on other threads are not held up by it.
    let object = build()
    let entry = Kept(field: field, entries: entries, object: object)
    lock.withLock {
      if position >= primary.count {
        primary.append(contentsOf: repeatElement(nil, count: position + 1 - primary.count))
      }
      if let owner = primary[position]?.field, owner != field {
        others[FieldAt(position: position, field: field)] = entry
      } else {
        primary[position] = entry
      }
    }
    return object
  }

  /// Whether `lhs` and `rhs` are one array (one buffer, one count), not merely equal.
  private static func same(_ lhs: [SetElements.Entry], _ rhs: [SetElements.Entry]) -> Bool {
    guard lhs.count == rhs.count, !lhs.isEmpty else { return false }
    let left = lhs.withUnsafeBufferPointer { $0.baseAddress }
    return rhs.withUnsafeBufferPointer { $0.baseAddress == left }
  }
}

/// A set field's visible elements as a model of `Element`s reads them, kept in a
/// ``SetReadCache``.
@usableFromInline
final class VisibleElements<Element: Hashable & Sendable>: Sendable {
  @usableFromInline let elements: Set<Element>

  @usableFromInline init(_ elements: Set<Element>) { self.elements = elements }
}
