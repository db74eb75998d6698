/// One field of an entity: a last-writer-wins register, an add-wins set, or text held as
/// `Text`, which is what a document's state and a delta differ in (``FieldState``,
/// ``FieldDelta``).
///
/// A schema gives every field one kind. Should two app versions disagree (a field that
/// was a register became text), the kinds are ranked register < set < text and the
/// higher kind replaces the lower one on every replica, so merge stays a join.
enum FieldContent<Text: Sendable & Equatable>: Sendable, Equatable {
  case register(LWWRegister<FieldValue>)
  /// Every element ever added, with its add and remove versions (removed ones stay as
  /// tombstones so a late add cannot resurrect them).
  case set(SetElements)
  case text(Text)

  /// Leaves an empty register in the content's place, so that a copy of the content
  /// taken before holds its only reference and changes in place: a field table's slot is
  /// vacated and filled again instead of removed and inserted.
  mutating func vacate() {
    self = .register(LWWRegister())
  }

  var kind: FieldKind {
    switch self {
    case .register: .register
    case .set: .set
    case .text: .text
    }
  }

  /// The latest write timestamp among the registers of `fields` and `latest`.
  static func latestTimestamp(of fields: some Sequence<Self>, after latest: Timestamp?)
    -> Timestamp?
  {
    var latest = latest
    for case .register(let register) in fields {
      if let stamp = register.stamp {
        latest = Swift.max(latest ?? stamp.timestamp, stamp.timestamp)
      }
    }
    return latest
  }
}

/// The state of one field of an entity. Text is behind one reference: held inline, the
/// RGA's few hundred bytes made every slot of an entity's field table that large,
/// registers and sets included.
typealias FieldState = FieldContent<TextStorage>

extension FieldContent where Text == TextStorage {
  /// A text field holding `text`.
  static func text(holding text: RGA) -> FieldState { .text(TextStorage(text)) }
}

/// A text field's RGA, shared between copies of a document until one of them edits it
/// (see ``EntityRecord/takeText(at:)``, which copies a shared one first).
///
/// `@unchecked Sendable`: `text` is mutated only through a reference known to be unique,
/// so no two threads ever see one storage change.
final class TextStorage: @unchecked Sendable, Equatable {
  var text: RGA

  init(_ text: RGA) { self.text = text }

  static func == (lhs: TextStorage, rhs: TextStorage) -> Bool {
    lhs === rhs || lhs.text == rhs.text
  }
}

/// The kind of a field, ranked for the rare case of two kinds under one name.
public enum FieldKind: UInt8, Sendable, Comparable {
  /// A last-writer-wins register of one ``FieldValue``.
  case register = 0
  /// An add-wins set of ``FieldValue`` elements.
  case set = 1
  /// RGA text.
  case text = 2

  /// The rank used when two kinds meet under one name: register < set < text.
  public static func < (lhs: FieldKind, rhs: FieldKind) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What a delta carries for one field.
typealias FieldDelta = FieldContent<RGADelta>

extension FieldContent where Text == RGADelta {
  /// Joins two deltas for the same field (used when grouping deltas).
  func merged(with other: FieldDelta) -> FieldDelta {
    switch (self, other) {
    case (.register(let a), .register(let b)):
      return .register(a.merging(b))
    case (.set(let a), .set(let b)):
      return .set(a.merging(b))
    case (.text(let a), .text(let b)):
      return .text(a.merged(with: b))
    default:
      return other.kind > kind ? other : self
    }
  }
}

/// Add-wins presence of an entity or a set element, as two version vectors.
///
/// `added[r]` is the counter of replica r's latest add (for an entity: its latest event of
/// any kind); `removed[r]` is what the latest removes had observed of r. The thing is
/// present while some replica has an add its removers did not see:
/// `added[r] > removed[r]` for some r. This gives the observed-remove semantics:
/// - a remove removes the adds it observed, and only those;
/// - an add concurrent with a remove wins, since its counter exceeds what the remove saw;
/// - a remove that arrives before the add it observed still removes it;
/// - a late or duplicated old add changes nothing (its counter is not a new maximum).
///
/// Each remove has a dot of its own, recorded in `removed` under the remover's replica.
/// So every change, including a removal, is an event that ``Document/delta(since:)`` can
/// name exactly, instead of re-sending every removal ever made.
///
/// - Complexity: O(r) for r replicas that touched the element.
struct Presence: Sendable, Equatable {
  var added = VersionVector()
  var removed = VersionVector()

  var isPresent: Bool {
    // Entries are never zero, so without removes any add is present.
    if removed.isEmpty { return !added.isEmpty }
    return added.containsEntry { replica, counter in counter > removed[replica] }
  }

  mutating func merge(_ other: Presence) {
    added.merge(other.added)
    removed.merge(other.removed)
  }

  func merging(_ other: Presence) -> Presence {
    var result = self
    result.merge(other)
    return result
  }

  /// Joins the local add `dot`: the same as merging ``add(_:)`` of it, without building
  /// a one-entry vector.
  mutating func mergeAdd(_ dot: Dot) {
    added.advance(to: dot)
  }

  /// Whether a peer whose gap-free prefix of events is `prefix` may lack an event folded
  /// into this presence.
  ///
  /// Looking only at the events the entries name is not enough. A remove's effect is
  /// stored under the entries of the adds it observed, and its own dot can be dominated
  /// by a later event of its replica (a remove at y:1, then an add at y:2): a peer can
  /// know every entry's event and still miss the remove, and would keep the element for
  /// ever. Every event folded in has a dot at or below its replica's entry, so a peer
  /// whose prefix covers every entry has them all.
  func mayHaveEvents(unknownTo prefix: VersionVector) -> Bool {
    !prefix.dominates(added) || !prefix.dominates(removed)
  }

  /// The presence after a local add with `dot`.
  static func add(_ dot: Dot) -> Presence {
    Presence(added: VersionVector(replica: dot.replica, counter: dot.counter))
  }

  /// The presence after a local remove with `dot` that observed `observed`.
  static func remove(observing observed: Presence, dot: Dot) -> Presence {
    var removed = observed.added
    removed.advance(to: dot)
    return Presence(
      added: VersionVector(replica: dot.replica, counter: dot.counter), removed: removed)
  }
}
