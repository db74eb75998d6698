/// Forgetting deleted entities once their delete is stable.
///
/// A delete keeps the entity's fields so that an edit made concurrently on another
/// device brings it back whole. Once no such edit can still arrive, that reason is gone:
/// ``forgetDeleted(stable:)`` drops the entity's record (its key, presence, fields and
/// text) and keeps only the document's ``CausalContext``, which already holds every dot
/// the entity had. A later delta that carries the forgotten entity again (from a replica
/// that has not forgotten yet, or a whole state merged in) names only events the context
/// already holds, and ``apply(_:)`` drops it instead of resurrecting it.
extension Document {
  /// Drops every deleted entity whose events all lie in `stable`, and returns how many.
  ///
  /// An entity is forgotten when it is deleted (no event its deleters did not see),
  /// every event of it (each entry of its presence, so every field write, set change,
  /// character and delete folded in) lies in the gap-free prefix of `stable` met with
  /// this document's own context, and none of its texts waits for missing events. What
  /// is dropped: its key, presence, register values, set elements and text. What is
  /// kept: the context, so the entity's dots stay known and no delta can bring it back.
  ///
  /// `stable` must be a stable cut: every device that may still send an edit has seen
  /// it, and every event this document lacks was made by a device that had already seen
  /// it (``CausalContext/stableCut(of:seenBy:)`` computes one from the devices' reports).
  /// An edit concurrent with a delete is then either in this document, where it keeps its
  /// entity visible (and so not forgotten), or does not exist. Passing a context larger
  /// than that is the one way to lose a concurrent edit; passing a smaller one only
  /// forgets less.
  ///
  /// A forgotten key created again starts with no fields on this replica. Apps create
  /// entities under fresh ids; a key should not be re-created once its delete is stable
  /// (see the Merge Semantics article, "When deleted data disappears").
  ///
  /// - Complexity: O(e + f) for e entities and f fields, plus rebuilding the event index.
  @discardableResult
  public mutating func forgetDeleted(stable: CausalContext) -> Int {
    // Only what this document holds can be stable here.
    let prefix = stable.intersection(context).versionVector
    guard !prefix.isEmpty else { return 0 }
    // Forgetting changes the state at an unchanged context: resolved again from scratch.
    if forests != nil { forests = ForestCache() }
    var kept = EntityTable()
    var forgotten = 0
    for position in entities.values.indices {
      let record = entities.values[position]
      if Self.isForgettable(record, stablePrefix: prefix) {
        forgotten += 1
      } else {
        kept.append(entities.key(at: position), record)
      }
    }
    guard forgotten > 0 else { return 0 }
    entities = kept
    events = EventIndex(entities)
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return forgotten
  }

  /// Whether `record` is deleted, its every event is within `prefix`, and none of its
  /// texts or lists waits for events (an item waiting for its origin names an event the
  /// document lacks, which would bring the entity back when it arrives).
  private static func isForgettable(_ record: EntityRecord, stablePrefix prefix: VersionVector)
    -> Bool
  {
    guard !record.isVisible, record.presence != Presence(),
      !record.presence.mayHaveEvents(unknownTo: prefix)
    else { return false }
    return !record.fields.values.contains {
      switch $0 {
      case .text(let storage): storage.hasPending
      case .list(let list): list.hasPending
      case .register, .set, .parent: false
      }
    }
  }

  /// Whether a delta's entity that this document has no record of was forgotten here:
  /// its presence names events, all of them in `prefix` (this document's gap-free
  /// prefix). A document holds a record of every entity whose events it integrated, so
  /// such an entity was dropped by ``forgetDeleted(stable:)`` and brings nothing new.
  static func wasForgotten(_ entityDelta: EntityDelta, knownPrefix prefix: VersionVector) -> Bool {
    entityDelta.presence != Presence() && !entityDelta.presence.mayHaveEvents(unknownTo: prefix)
  }
}
