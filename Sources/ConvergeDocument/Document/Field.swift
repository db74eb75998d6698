/// One field of an entity: a last-writer-wins register, an add-wins set, text held as
/// `Text` or a movable list held as `List`, which is what a document's state and a delta
/// differ in (``FieldState``, ``FieldDelta``).
///
/// A schema gives every field one kind. Should two app versions disagree (a field that
/// was a register became text), the kinds are ranked register < set < text < list <
/// parent and the higher kind replaces the lower one on every replica, so merge stays a
/// join.
/// A parent field (``FieldKind/parent``) is a register of its own kind: its value is a
/// ``ParentMove``, and the forest is read from all of them at once (``DocumentForest``).
package enum FieldContent<Text: Sendable & Equatable, List: ListItemStamps>: Sendable, Equatable {
  case register(LWWRegister<FieldValue>)
  /// Every element ever added, with its add and remove versions (removed ones stay as
  /// tombstones so a late add cannot resurrect them).
  case set(SetElements)
  case text(Text)
  /// A movable list (``MovableList``, ``MovableListDelta``).
  case list(List)
  /// A tree node's parent: a register whose value is a ``ParentMove`` as a field value
  /// (``ParentMove/fieldValue``), resolved into a forest by ``DocumentForest``.
  case parent(LWWRegister<FieldValue>)

  /// Leaves an empty register in the content's place, so that a copy of the content
  /// taken before holds its only reference and changes in place: a field table's slot is
  /// vacated and filled again instead of removed and inserted.
  mutating func vacate() {
    self = .register(LWWRegister())
  }

  /// The register of a register or parent field.
  var registerContent: LWWRegister<FieldValue>? {
    switch self {
    case .register(let register), .parent(let register): register
    default: nil
    }
  }

  var kind: FieldKind {
    switch self {
    case .register: .register
    case .set: .set
    case .text: .text
    case .list: .list
    case .parent: .parent
    }
  }

  /// The latest write timestamp among the registers of `fields` and `latest`.
  static func latestTimestamp(of fields: some Sequence<Self>, after latest: Timestamp?)
    -> Timestamp?
  {
    var latest = latest
    for field in fields {
      switch field {
      case .register(let register), .parent(let register):
        if let stamp = register.stamp {
          latest = Swift.max(latest ?? stamp.timestamp, stamp.timestamp)
        }
      case .list(let list):
        // A list's moves are register writes too: a move made after seeing one wins.
        latest = list.latestTimestamp(after: latest)
      case .set, .text:
        continue
      }
    }
    return latest
  }
}

/// The state of one field of an entity. Text is behind one reference: held inline, the
/// RGA's few hundred bytes made every slot of an entity's field table that large,
/// registers and sets included.
package typealias FieldState = FieldContent<TextStorage, MovableList>

extension FieldContent where Text == TextStorage, List == MovableList {
  /// A text field holding `text`.
  static func text(holding text: RGA) -> FieldState { .text(TextStorage(text)) }
}

/// A text field's RGA, shared between copies of a document until one of them edits it
/// (see ``EntityRecord/takeText(at:)``, which copies a shared one first).
///
/// A snapshot loaded by ``Document/init(decoding:tag:key:)`` holds its texts deferred
/// (``deferred(_:)``, holding the codec's `DeferredTextStorage`): decoded on each read
/// until an edit takes a decoded copy.
///
/// A storage holds the text alone, 72 bytes with the object's header: a deferred text's
/// bytes are held by a subclass (``Deferred``) rather than an optional here, whose 16
/// bytes took every text field's storage to the allocator's next size, 96 bytes.
///
/// `@unchecked Sendable`: `text` is mutated only through a reference known to be unique,
/// so no two threads ever see one storage change.
package class TextStorage: @unchecked Sendable, Equatable {
  // Unchecked: an edit reaches the text only through a storage that `takeText(at:)`
  // took out of its document (no other access can overlap it), and the dynamic checks
  // cost two runtime calls, about 160 instructions, an edit.
  /// The text, unless the storage is a ``Deferred`` one that holds it. A transaction's
  /// text edit edits it directly, through a storage ``EntityRecord/takeText(at:)``
  /// handed out, which is never deferred: `text`'s `_modify` is a coroutine, and its
  /// calls, retains and releases were 2.4% of every edit of a run.
  @exclusivity(unchecked) final var decoded: RGA

  package init(_ text: RGA) { decoded = text }

  /// A storage whose text is decoded from `deferred` on each read, until `text` is set.
  package static func deferred(_ deferred: any DeferredText) -> TextStorage {
    Deferred(deferred)
  }

  /// A deferred text's storage: its bytes, until `text` is set. `@unchecked Sendable` as
  /// its superclass: `source` is dropped only through a reference known to be unique.
  private final class Deferred: TextStorage, @unchecked Sendable {
    @exclusivity(unchecked) var source: (any DeferredText)?

    init(_ source: any DeferredText) {
      self.source = source
      super.init(TextStorage.unset)
    }
  }

  /// What `decoded` holds while the text is deferred: one empty text shared by every
  /// deferred storage and never edited (`text` replaces it first). An `RGA()` of its own
  /// was two allocations for each deferred text (0.7 M instructions of the three loads
  /// of `bench --library 1000`). Not an optional: an edit's `_modify` yields the stored
  /// text in place (taking it out of an optional and back cost 2% of the per-keystroke
  /// path, in retains and releases).
  private static let unset = RGA()

  /// The deferred text's bytes, until `text` is set. A cast to a final class, which
  /// compares the object's class: as cheap as the optional's test was.
  private final var deferred: (any DeferredText)? { (self as? Deferred)?.source }

  package final var text: RGA {
    get { deferred?.text ?? decoded }
    set {
      decoded = newValue
      (self as? Deferred)?.source = nil
    }
    // An edit in place: decoded once if deferred, then never copied.
    _modify {
      if let storage = self as? Deferred, let source = storage.source {
        decoded = source.text
        storage.source = nil
      }
      yield &decoded
    }
  }

  /// Whether the text waits for missing events (``RGA/hasPending``), known without
  /// decoding a deferred text (which never waits).
  final var hasPending: Bool { deferred == nil && decoded.hasPending }

  /// Whether `text` is decoded anew on each read (a deferred text no one edited).
  package final var isDeferred: Bool { deferred != nil }

  /// Whether the text may hold events above `prefix` (``RGA/mayHaveEvents(unknownTo:)``),
  /// known for most deferred texts without decoding them.
  final func mayHaveEvents(unknownTo prefix: VersionVector) -> Bool {
    deferred?.mayHaveEvents(unknownTo: prefix) ?? decoded.mayHaveEvents(unknownTo: prefix)
  }

  package static func == (lhs: TextStorage, rhs: TextStorage) -> Bool {
    lhs === rhs || lhs.text == rhs.text
  }
}

/// A text field's bytes, left coded by a load and decoded on each read (the codec's
/// `DeferredTextStorage`, held by a ``TextStorage``).
package protocol DeferredText: AnyObject, Sendable {
  /// The text, decoded anew.
  var text: RGA { get }
  /// Whether the text may hold events above `prefix` (``RGA/mayHaveEvents(unknownTo:)``).
  func mayHaveEvents(unknownTo prefix: VersionVector) -> Bool
}

/// The kind of a field, ranked for the rare case of two kinds under one name.
public enum FieldKind: UInt8, Sendable, Comparable {
  /// A last-writer-wins register of one ``FieldValue``.
  case register = 0
  /// An add-wins set of ``FieldValue`` elements.
  case set = 1
  /// RGA text.
  case text = 2
  /// A movable list of ``FieldValue`` items (``MovableList``).
  case list = 3
  /// A tree node's parent (``ParentMove``), resolved without cycles (``DocumentForest``).
  case parent = 4

  /// The rank used when two kinds meet under one name: register < set < text < list <
  /// parent.
  public static func < (lhs: FieldKind, rhs: FieldKind) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What a delta carries for one field.
package typealias FieldDelta = FieldContent<RGADelta, MovableListDelta>

extension FieldContent where Text == RGADelta, List == MovableListDelta {
  /// Joins two deltas for the same field (used when grouping deltas).
  func merged(with other: FieldDelta) -> FieldDelta {
    switch (self, other) {
    case (.register(let a), .register(let b)):
      return .register(a.merging(b))
    case (.set(let a), .set(let b)):
      return .set(a.merging(b))
    case (.text(let a), .text(let b)):
      return .text(a.merged(with: b))
    case (.list(let a), .list(let b)):
      return .list(a.merged(with: b))
    case (.parent(let a), .parent(let b)):
      return .parent(a.merging(b))
    default:
      return other.kind > kind ? other : self
    }
  }
}
