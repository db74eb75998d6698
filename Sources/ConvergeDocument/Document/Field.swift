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
/// (``DeferredText``, the codec's `DeferredTextStorage`): decoded on each read until an
/// edit takes a decoded copy.
///
/// `@unchecked Sendable`: `text` is mutated only through a reference known to be unique,
/// so no two threads ever see one storage change.
package final class TextStorage: @unchecked Sendable, Equatable {
  // Unchecked: an edit reaches the text only through a storage that `takeText(at:)`
  // took out of its document (no other access can overlap it), and the dynamic checks
  // cost two runtime calls, about 160 instructions, an edit.
  /// The text, unless `deferred` holds it.
  @exclusivity(unchecked) private var decoded: RGA
  /// A deferred text's bytes, until `text` is set.
  @exclusivity(unchecked) private var deferred: (any DeferredText)?

  package init(_ text: RGA) { decoded = text }

  /// A text decoded from `deferred` on each read, until `text` is set.
  package init(deferred: any DeferredText) {
    decoded = RGA()
    self.deferred = deferred
  }

  package var text: RGA {
    get { deferred?.text ?? decoded }
    set {
      decoded = newValue
      deferred = nil
    }
    // An edit in place: decoded once if deferred, then never copied.
    _modify {
      if let deferred {
        decoded = deferred.text
        self.deferred = nil
      }
      yield &decoded
    }
  }

  /// Whether the text waits for missing events (``RGA/hasPending``), known without
  /// decoding a deferred text (which never waits).
  var hasPending: Bool { deferred == nil && decoded.hasPending }

  /// Whether `text` is decoded anew on each read (a deferred text no one edited).
  package var isDeferred: Bool { deferred != nil }

  /// Whether the text may hold events above `prefix` (``RGA/mayHaveEvents(unknownTo:)``),
  /// known for most deferred texts without decoding them.
  func mayHaveEvents(unknownTo prefix: VersionVector) -> Bool {
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
/// Most presences are one add and nothing else (an entity or a tag one device made), so
/// that case is held inline: the replica and counter of the add. Any other presence keeps
/// both vectors behind one reference. Inline exactly when `removed` is empty and `added`
/// has at most one entry, so equal presences have equal forms. A tag cost two 64-byte
/// heap blocks for its vectors' arrays before, an entity one.
///
/// - Complexity: O(r) for r replicas that touched the element.
package struct Presence: Sendable, Equatable {
  /// Both vectors, when the presence is not a single add (``OutOfLine``).
  private var vectors = OutOfLine<Vectors>()
  /// Without `vectors`: the only add's replica and counter (counter 0, replica 0: none).
  private var onlyReplica = ReplicaID(rawValue: 0)
  private var onlyCounter: UInt64 = 0

  /// The two vectors of a general presence.
  private struct Vectors: Sendable {
    var added: VersionVector
    var removed: VersionVector
  }

  /// No add, no remove.
  package init() {}

  package init(added: VersionVector, removed: VersionVector = VersionVector()) {
    if removed.isEmpty, added.count <= 1 {
      if let (replica, counter) = added.onlyEntry {
        onlyReplica = replica
        onlyCounter = counter
      }
    } else {
      vectors = OutOfLine(Vectors(added: added, removed: removed))
    }
  }

  /// Each replica's latest add (for an entity: its latest event of any kind).
  package var added: VersionVector {
    get {
      vectors.read { $0.pointee.added }
        ?? VersionVector(replica: onlyReplica, counter: onlyCounter)
    }
    set { self = Presence(added: newValue, removed: removed) }
  }

  /// What the latest removes had observed of each replica.
  package var removed: VersionVector {
    get { vectors.read { $0.pointee.removed } ?? VersionVector() }
    set { self = Presence(added: added, removed: newValue) }
  }

  /// The counter of `replica`'s latest add (0 if none).
  package func addedCounter(of replica: ReplicaID) -> UInt64 {
    vectors.read { $0.pointee.added[replica] } ?? (replica == onlyReplica ? onlyCounter : 0)
  }

  /// What the latest removes had observed of `replica` (0 if none).
  func removedCounter(of replica: ReplicaID) -> UInt64 {
    vectors.read { $0.pointee.removed[replica] } ?? 0
  }

  /// The first entry of a replica not in `granted` that `local` does not account for
  /// already, if any: an add above `local`'s latest add of that replica, or a removal
  /// that observed more of it than `local` holds (its add and removal entries). Joining
  /// a presence without one into `local` changes nothing for those replicas.
  ///
  /// - Complexity: O(r) for r replicas in the presence.
  func firstEntry(beyond local: Presence, outside granted: Set<ReplicaID>) -> (
    dot: Dot, isRemoval: Bool
  )? {
    guard let mine = vectors.value else {
      guard onlyCounter > 0, !granted.contains(onlyReplica),
        onlyCounter > local.addedCounter(of: onlyReplica)
      else { return nil }
      return (Dot(replica: onlyReplica, counter: onlyCounter), false)
    }
    var found: (dot: Dot, isRemoval: Bool)?
    mine.added.forEachEntry { replica, counter in
      guard found == nil, !granted.contains(replica), counter > local.addedCounter(of: replica)
      else { return }
      found = (Dot(replica: replica, counter: counter), false)
    }
    mine.removed.forEachEntry { replica, counter in
      guard found == nil, !granted.contains(replica),
        counter > Swift.max(local.addedCounter(of: replica), local.removedCounter(of: replica))
      else { return }
      found = (Dot(replica: replica, counter: counter), true)
    }
    return found
  }

  /// Whether some replica added it (a set element that was never added is no element).
  package var hasAdds: Bool { vectors.read { !$0.pointee.added.isEmpty } ?? (onlyCounter > 0) }

  /// The add, when the presence is one add and no remove.
  package var onlyAdd: (replica: ReplicaID, counter: UInt64)? {
    vectors.isEmpty && onlyCounter > 0 ? (onlyReplica, onlyCounter) : nil
  }

  package var isPresent: Bool {
    vectors.read { vectors in
      // Entries are never zero, so without removes any add is present.
      if vectors.pointee.removed.isEmpty { return !vectors.pointee.added.isEmpty }
      return vectors.pointee.added.containsEntry { replica, counter in
        counter > vectors.pointee.removed[replica]
      }
    } ?? (onlyCounter > 0)
  }

  /// Changes the general form's vectors in place, made from the inline add first.
  private mutating func updateVectors(_ body: (inout Vectors) -> Void) {
    let (replica, counter) = (onlyReplica, onlyCounter)
    vectors.update(
      creating: {
        Vectors(added: VersionVector(replica: replica, counter: counter), removed: VersionVector())
      }, body)
    onlyReplica = ReplicaID(rawValue: 0)
    onlyCounter = 0
  }

  mutating func merge(_ other: Presence) {
    guard let theirs = other.vectors.value else {
      if other.onlyCounter > 0 {
        mergeAdd(Dot(replica: other.onlyReplica, counter: other.onlyCounter))
      }
      return
    }
    if vectors.isEmpty, onlyCounter == 0 {
      self = other
      return
    }
    updateVectors { mine in
      mine.added.merge(theirs.added)
      mine.removed.merge(theirs.removed)
    }
  }

  func merging(_ other: Presence) -> Presence {
    var result = self
    result.merge(other)
    return result
  }

  /// Joins the local add `dot`: the same as merging ``add(_:)`` of it, without building
  /// a one-entry vector.
  package mutating func mergeAdd(_ dot: Dot) {
    if vectors.isEmpty {
      if onlyCounter == 0 {
        onlyReplica = dot.replica
        onlyCounter = dot.counter
        return
      }
      if dot.replica == onlyReplica {
        onlyCounter = Swift.max(onlyCounter, dot.counter)
        return
      }
    }
    updateVectors { $0.added.advance(to: dot) }
  }

  /// Calls `body` with each replica of the presence and its entry: the larger of its
  /// `added` and `removed` counters.
  package func forEachLatest(_ body: (ReplicaID, UInt64) -> Void) {
    guard let vectors = vectors.value else {
      if onlyCounter > 0 { body(onlyReplica, onlyCounter) }
      return
    }
    vectors.added.forEachEntry { replica, counter in
      body(replica, Swift.max(counter, vectors.removed[replica]))
    }
    vectors.removed.forEachEntry { replica, counter in
      if vectors.added[replica] == 0 { body(replica, counter) }
    }
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
    vectors.read { !prefix.dominates($0.pointee.added) || !prefix.dominates($0.pointee.removed) }
      ?? (prefix[onlyReplica] < onlyCounter)
  }

  /// The presence after a local add with `dot`.
  package static func add(_ dot: Dot) -> Presence {
    var presence = Presence()
    presence.mergeAdd(dot)
    return presence
  }

  /// The presence after a local remove with `dot` that observed `observed`.
  static func remove(observing observed: Presence, dot: Dot) -> Presence {
    var removed = observed.added
    removed.advance(to: dot)
    return Presence(
      added: VersionVector(replica: dot.replica, counter: dot.counter), removed: removed)
  }

  package static func == (lhs: Presence, rhs: Presence) -> Bool {
    switch (lhs.vectors.value, rhs.vectors.value) {
    case (nil, nil): lhs.onlyReplica == rhs.onlyReplica && lhs.onlyCounter == rhs.onlyCounter
    case (let a?, let b?): a.added == b.added && a.removed == b.removed
    default: false
    }
  }
}
