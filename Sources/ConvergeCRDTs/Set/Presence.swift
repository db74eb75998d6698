import ConvergeCore

/// Add-wins presence of an entity, a list item or an element of an add-wins set
/// (``ORSetStore``, which ``ORSet`` and a document's set fields hold), as two version
/// vectors.
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
/// Inlinable, with its storage `@usableFromInline`: the document, in the module above,
/// asks an entity's presence at every edit and every merge.
///
/// - Complexity: O(r) for r replicas that touched the element.
@usableFromInline
package struct Presence: Sendable, Equatable {
  /// Both vectors, when the presence is not a single add (``OutOfLine``).
  @usableFromInline var vectors = OutOfLine<Vectors>()
  /// Without `vectors`: the only add's replica and counter (counter 0, replica 0: none).
  @usableFromInline var onlyReplica = ReplicaID(rawValue: 0)
  @usableFromInline var onlyCounter: UInt64 = 0

  /// The two vectors of a general presence.
  @usableFromInline struct Vectors: Sendable {
    @usableFromInline var added: VersionVector
    @usableFromInline var removed: VersionVector

    @inlinable init(added: VersionVector, removed: VersionVector) {
      self.added = added
      self.removed = removed
    }
  }

  /// No add, no remove.
  @inlinable package init() {}

  @inlinable package init(added: VersionVector, removed: VersionVector = VersionVector()) {
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
  @inlinable package var added: VersionVector {
    get {
      vectors.read { $0.pointee.added }
        ?? VersionVector(replica: onlyReplica, counter: onlyCounter)
    }
    set { self = Presence(added: newValue, removed: removed) }
  }

  /// What the latest removes had observed of each replica.
  @inlinable package var removed: VersionVector {
    get { vectors.read { $0.pointee.removed } ?? VersionVector() }
    set { self = Presence(added: added, removed: newValue) }
  }

  /// The counter of `replica`'s latest add (0 if none).
  @inlinable package func addedCounter(of replica: ReplicaID) -> UInt64 {
    vectors.read { $0.pointee.added[replica] } ?? (replica == onlyReplica ? onlyCounter : 0)
  }

  /// What the latest removes had observed of `replica` (0 if none).
  @inlinable package func removedCounter(of replica: ReplicaID) -> UInt64 {
    vectors.read { $0.pointee.removed[replica] } ?? 0
  }

  /// The first entry of a replica not in `granted` that `local` does not account for
  /// already, if any: an add above `local`'s latest add of that replica, or a removal
  /// that observed more of it than `local` holds (its add and removal entries). Joining
  /// a presence without one into `local` changes nothing for those replicas.
  ///
  /// - Complexity: O(r) for r replicas in the presence.
  package func firstEntry(beyond local: Presence, outside granted: Set<ReplicaID>) -> (
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
  @inlinable package var hasAdds: Bool {
    vectors.read { !$0.pointee.added.isEmpty } ?? (onlyCounter > 0)
  }

  /// The add, when the presence is one add and no remove.
  @inlinable package var onlyAdd: (replica: ReplicaID, counter: UInt64)? {
    vectors.isEmpty && onlyCounter > 0 ? (onlyReplica, onlyCounter) : nil
  }

  @inlinable package var isPresent: Bool {
    // The inline form (most entities, most tags) without a call into the out-of-line
    // read, which a walk over the entities paid at every row (BENCHMARKS.md, typed reads,
    // sixth pass).
    guard !vectors.isEmpty else { return onlyCounter > 0 }
    return vectors.read { vectors in
      // Entries are never zero, so without removes any add is present.
      if vectors.pointee.removed.isEmpty { return !vectors.pointee.added.isEmpty }
      return vectors.pointee.added.containsEntry { replica, counter in
        counter > vectors.pointee.removed[replica]
      }
    } ?? false
  }

  /// Changes the general form's vectors in place, made from the inline add first.
  @inlinable mutating func updateVectors(_ body: (inout Vectors) -> Void) {
    let (replica, counter) = (onlyReplica, onlyCounter)
    vectors.update(
      creating: {
        Vectors(added: VersionVector(replica: replica, counter: counter), removed: VersionVector())
      }, body)
    onlyReplica = ReplicaID(rawValue: 0)
    onlyCounter = 0
  }

  @inlinable package mutating func merge(_ other: Presence) {
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

  @inlinable package func merging(_ other: Presence) -> Presence {
    var result = self
    result.merge(other)
    return result
  }

  /// Joins the local add `dot`: the same as merging ``add(_:)`` of it, without building
  /// a one-entry vector.
  @inlinable package mutating func mergeAdd(_ dot: Dot) {
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
  @inlinable package func forEachLatest(_ body: (ReplicaID, UInt64) -> Void) {
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
  @inlinable package func mayHaveEvents(unknownTo prefix: VersionVector) -> Bool {
    vectors.read { !prefix.dominates($0.pointee.added) || !prefix.dominates($0.pointee.removed) }
      ?? (prefix[onlyReplica] < onlyCounter)
  }

  /// The presence after a local add with `dot`.
  @inlinable package static func add(_ dot: Dot) -> Presence {
    var presence = Presence()
    presence.mergeAdd(dot)
    return presence
  }

  /// The presence after a local remove with `dot` that observed `observed`.
  @inlinable package static func remove(observing observed: Presence, dot: Dot) -> Presence {
    var removed = observed.added
    removed.advance(to: dot)
    return Presence(
      added: VersionVector(replica: dot.replica, counter: dot.counter), removed: removed)
  }

  @inlinable package static func == (lhs: Presence, rhs: Presence) -> Bool {
    switch (lhs.vectors.value, rhs.vectors.value) {
    case (nil, nil): lhs.onlyReplica == rhs.onlyReplica && lhs.onlyCounter == rhs.onlyCounter
    case (let a?, let b?): a.added == b.added && a.removed == b.removed
    default: false
    }
  }
}
