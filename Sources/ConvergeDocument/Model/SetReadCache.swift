/// The visible elements of set fields as typed walks (``Document/models(_:)``, `all`)
/// last built them, kept beside a document's entities so that reading the same tags
/// again is a lookup and a retain, not an allocation and a hash of every element. A read
/// of one model (`get`, the read an update starts from) looks its sets up here too,
/// under the lock, and keeps nothing it builds: an update after a list view starts from
/// the kept tags.
///
/// Nothing is added to a set: a set's entries stay the plain array they are, and a
/// document that no model walk reads keeps nothing here (the raw path pays one cache
/// an entity type, allocated with the type, inside the entity table's list of types). A
/// kept value is valid by the identity of the entries it was built from, which it
/// retains: while the cache holds that array, no one can change it in
/// place (copy-on-write copies it first) nor free it and reuse its address, so a set
/// whose entries are that very array (the same storage, whose count is the storage's)
/// holds exactly those elements. Any write or merge of the field gives it another array, and the next walk
/// builds again and replaces the entry. Equal sets built in one walk share one kept
/// value, so rows with the same tags hold one `Set`'s storage. The price: the first write to a set after a
/// walk read it copies its few entries once, and an entry keeps an old array alive
/// until its field is read again (one entry a field, so bounded by the fields read).
///
/// Copies of a document share its caches (references in ``EntityTable``'s types). That
/// is safe because validity is identity, not a key: two copies edited apart have other
/// arrays for the fields they changed, and each reads its own; they only rebuild in
/// turn when both are walked alternately. (The forest cache is keyed by causal context,
/// which copies edited apart can share with other states; this one is not.)
///
/// A walk reads without the lock: it takes the kept values once (``walk()``, a copy of
/// the cache's arrays, two retains), looks each set field up in that copy, and keeps what
/// it built in a list of its own, stored in one pass when it ends (``finish(_:)``). A lock
/// and an unchecked-exclusivity lookup a field cost about 580 instructions of a list
/// row's 2,653 (BENCHMARKS.md, typed reads, third pass); the copy makes a hit a bounds
/// check, two comparisons and a retain. Walks on several threads each read their own
/// copy; the one that stores last while another still holds a copy copies the cache's
/// array first (copy-on-write), once.
///
/// `@unchecked Sendable`: `primary` and `others` are read and written only under
/// `lock`; what they hold is immutable (`Sendable` objects and arrays never changed
/// in place while held here).
final class SetReadCache: @unchecked Sendable {
  /// By entity position: the first set field read there (most entities have one).
  private var primary: [SetReadWalk.Kept?] = []
  /// The other set fields of entities that have several.
  private var others: [SetReadWalk.FieldAt: SetReadWalk.Kept] = [:]
  private let lock = CacheLock()

  /// What a walk reads: the values kept now.
  func walk() -> SetReadWalk {
    lock.withLock { SetReadWalk(primary: primary, others: others) }
  }

  /// Keeps what `walk` built, after it let go of its copy of the kept values.
  func finish(_ walk: consuming SetReadWalk) {
    let built = walk.built
    _ = consume walk
    guard let last = built.lazy.map(\.0.position).max() else { return }
    lock.withLock {
      // Taken out and put back: each access to a class's array checked exclusivity.
      var primary: [SetReadWalk.Kept?] = []
      swap(&primary, &self.primary)
      defer { swap(&primary, &self.primary) }
      if last >= primary.count {
        primary.append(contentsOf: repeatElement(nil, count: last + 1 - primary.count))
      }
      for (place, entry) in built {
        if let owner = primary[place.position]?.field, owner != place.field {
          others[place] = entry
        } else {
          primary[place.position] = entry
        }
      }
    }
  }

  /// The object `build` makes of `elements`, the set field in slot `field` of the
  /// entity at `position`: the kept one if it was built from these very entries by a
  /// reader of the same type, else built now and kept. A walk of one field.
  ///
  /// - Complexity: O(1) when kept (a lock, an identity test, a cast); else `build`'s
  ///   cost, plus amortized O(1) to keep it.
  func object<Object: AnyObject & Sendable>(
    of elements: SetElements, at position: Int, field: Int, as type: Object.Type,
    build: () -> Object
  ) -> Object {
    var walk = walk()
    if let kept = walk.kept(address: elements.entriesAddress, at: position, field: field)
      as? Object
    {
      return kept
    }
    let object = build()
    walk.keep(object, of: elements, at: position, field: field)
    finish(walk)
    return object
  }
}

/// The set fields' kept values as a walk reads them (a copy of the ``SetReadCache``'s),
/// and what it built.
struct SetReadWalk {
  /// A set field's visible elements as one reader type built them, and the entries
  /// they were built from.
  struct Kept {
    var field: Int
    /// The entries' storage, compared without touching the array (a copy of it retained
    /// and released it, its count read a line of it); valid while `entries` holds that
    /// array.
    var address: UnsafeRawPointer?
    var entries: [SetElements.Entry]
    var object: AnyObject & Sendable
    /// `object` without a reference of its own, read without a retain while the entry
    /// holds `object` (``keptElements(_:in:address:count:at:field:)``).
    var unretained: Unmanaged<AnyObject>

    init(
      field: Int, address: UnsafeRawPointer?, entries: [SetElements.Entry],
      object: AnyObject & Sendable
    ) {
      self.field = field
      self.address = address
      self.entries = entries
      self.object = object
      unretained = .passUnretained(object)
    }
  }

  /// A position and a field's slot in the entity's table.
  struct FieldAt: Hashable {
    var position: Int
    var field: Int
  }

  private let primary: [Kept?]
  /// `primary`'s storage, read in place: an entry read through the array's subscript was
  /// copied out, retaining and releasing its array and object. Valid while `primary`
  /// holds the array, which no one changes (the cache replaces its own, copy-on-write).
  private let primaryEntries: UnsafeBufferPointer<Kept?>
  private let others: [FieldAt: Kept]
  /// What the walk built, kept by ``SetReadCache/finish(_:)``.
  fileprivate(set) var built: [(FieldAt, Kept)] = []
  /// The objects the walk built, by their elements' hash value: equal sets share one
  /// (``sharing(_:)``).
  private var shared: [Int: [AnyObject]] = [:]

  fileprivate init(primary: [Kept?], others: [FieldAt: Kept]) {
    self.primary = primary
    primaryEntries = primary.withUnsafeBufferPointer { $0 }
    self.others = others
  }

  /// The kept object for the set field in slot `field` at `position` whose entries'
  /// storage is `address` (``SetElements/entriesAddress``), if it was built from these
  /// very entries; the reader checks its type.
  func kept(address: UnsafeRawPointer?, at position: Int, field: Int) -> (AnyObject & Sendable)? {
    withUnsafePointer(to: self) {
      Self.kept(in: $0, address: address, at: position, field: field)
    }
  }

  /// ``kept(address:at:field:)`` of the walk at `walk`, read through the pointer: a
  /// method called on `walk.pointee` copied the walk, retaining and releasing its arrays,
  /// at every set field of a row.
  static func kept(
    in walk: UnsafePointer<SetReadWalk>, address: UnsafeRawPointer?, at position: Int, field: Int
  ) -> (AnyObject & Sendable)? {
    // An empty set's storage is the one every empty array shares, never a kept one
    // (``keep(_:of:at:field:)`` keeps none): it finds nothing.
    guard address != nil else { return nil }
    let primary = walk.pointee.primaryEntries
    if position < primary.count, let entries = primary.baseAddress,
      entries[position]?.field == field
    {
      guard entries[position]?.address == address else { return nil }
      return entries[position]?.object
    }
    guard !walk.pointee.others.isEmpty else { return nil }
    let place = FieldAt(position: position, field: field)
    guard let kept = walk.pointee.others[place], kept.address == address else { return nil }
    return kept.object
  }

  /// The elements of the ``VisibleElements`` of `Element` kept for the set field in
  /// slot `field` at `position` whose entries' storage is `address`, if it was built
  /// from these very entries by a reader of `Element`s. The kept object of the
  /// field of an entity's first set is read in place without a retain (the walk's copy
  /// of the cache holds it): a retain and a release of it cost about 45 instructions a
  /// row of a projection (BENCHMARKS.md, typed reads, sixth pass).
  static func keptElements<Element: Hashable & Sendable>(
    _: Element.Type, in walk: UnsafePointer<SetReadWalk>, address: UnsafeRawPointer?,
    at position: Int, field: Int
  ) -> Set<Element>? {
    guard address != nil else { return nil }
    let primary = walk.pointee.primaryEntries
    guard position < primary.count, let entries = primary.baseAddress,
      entries[position]?.field == field
    else {
      let kept = kept(in: walk, address: address, at: position, field: field)
      guard let kept,
        ObjectIdentifier(type(of: kept)) == ObjectIdentifier(VisibleElements<Element>.self)
      else { return nil }
      return unsafeDowncast(kept, to: VisibleElements<Element>.self).elements
    }
    guard entries[position]?.address == address, let object = entries[position]?.unretained
    else { return nil }
    return object._withUnsafeGuaranteedRef { object in
      guard ObjectIdentifier(type(of: object)) == ObjectIdentifier(VisibleElements<Element>.self)
      else { return nil }
      return unsafeDowncast(object, to: VisibleElements<Element>.self).elements
    }
  }

  /// Keeps `object`, built from `elements` in slot `field` at `position`.
  mutating func keep(
    _ object: AnyObject & Sendable, of elements: SetElements, at position: Int, field: Int
  ) {
    let entries = elements.entries
    guard !entries.isEmpty else { return }
    built.append(
      (
        FieldAt(position: position, field: field),
        Kept(field: field, address: elements.entriesAddress, entries: entries, object: object)
      ))
  }

  /// The object holding `elements` for the walk to keep: the one it built earlier for an
  /// equal set of the same type, else a new one. Rows with the same tags then hold one
  /// `Set`'s storage, and a list view's walk retains the same few objects again instead
  /// of one of its own a row (about two simulated D1 misses a row; BENCHMARKS.md, typed
  /// reads, seventh pass).
  ///
  /// - Complexity: O(k) expected for k elements (their hash, and a comparison when an
  ///   equal set was built).
  mutating func sharing<Element: Hashable & Sendable>(_ elements: Set<Element>)
    -> VisibleElements<Element>
  {
    let hash = elements.hashValue
    for candidate in shared[hash, default: []]
    where ObjectIdentifier(type(of: candidate)) == ObjectIdentifier(VisibleElements<Element>.self) {
      let object = unsafeDowncast(candidate, to: VisibleElements<Element>.self)
      if object.elements == elements { return object }
    }
    let object = VisibleElements(elements)
    shared[hash, default: []].append(object)
    return object
  }
}

/// A set field's visible elements as a model of `Element`s reads them, kept in a
/// ``SetReadCache``.
@usableFromInline
final class VisibleElements<Element: Hashable & Sendable>: Sendable {
  @usableFromInline let elements: Set<Element>

  @usableFromInline init(_ elements: Set<Element>) { self.elements = elements }
}
