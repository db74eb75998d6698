/// Edits stranded by a retirement: the part of a retired device's history that waits on
/// every replica for an earlier event of its own that none holds.
///
/// A device's events reach its peers in any order, and text and list slots wait
/// (``hasPendingChanges``) until the events they follow arrive. Peer to peer, a push the
/// network lost can leave a device's later characters delivered and an earlier one
/// they follow missing everywhere but on the device. While the device is a member, its
/// next sync sends the missing one. Once it is retired it sends nothing under its old id
/// again: its rebase (``Replica/rebasing(_:onto:stable:retired:as:wallClock:)``)
/// re-applies under a fresh id every edit the current state does not hold integrated,
/// the stranded ones included, and every replica drops the old id's waiting items with
/// ``dropPending(of:)``, so that each stranded edit ends applied once, under the fresh id.
extension Document {
  /// Drops the text and list items that wait for events of the retired replicas
  /// `replicas` (their own events, items waiting for one, and items waiting for a
  /// dropped item), and the delete targets of those ids still waited for; returns how
  /// many scalars, slots and delete targets were dropped.
  ///
  /// The context keeps the dropped events: they happened, and a delta that carries them
  /// again changes nothing but brings them back waiting (call this again after applying
  /// it). Integrated items, registers, sets and presence are untouched, so the visible
  /// document does not change.
  ///
  /// Call it only once this document holds every event of `replicas` that any replica
  /// still holds (with a relay, that is always true: it holds a device's pushes in order,
  /// so no one holds a retired device's event ahead of an earlier one; peer to peer,
  /// after hearing every member since the retirement and holding what each stated). An
  /// item dropped earlier that another replica holds integrated would be missing here
  /// for ever: no peer sends an event this context already holds.
  ///
  /// - Complexity: O(w + p log p) for w waiting fields and p waiting items.
  @discardableResult
  public mutating func dropPending(of replicas: Set<ReplicaID>) -> Int {
    // Each waiting field is read before it is touched (below), so no whole pass of
    // `hasPendingChanges(of:)` first.
    guard !replicas.isEmpty, !waitingTexts.isEmpty else { return 0 }
    var dropped = 0
    for waiting in waitingTexts {
      guard let entity = entities.index(forKey: waiting.entity),
        let slot = entities.values[entity].fields.index(forKey: waiting.field)
      else { continue }
      switch entities.values[entity].fields.values[slot] {
      case .text(let storage) where !storage.text.hasPending(of: replicas):
        // Read first: taking the text out would copy one a copy of the document shares.
        continue
      case .text:
        guard let storage = entities.values[entity].takeText(at: slot) else { continue }
        dropped &+= storage.text.dropPending(of: replicas)
        waitingTexts.note(storage.text, field: waiting.field, of: waiting.entity)
        entities.values[entity].fields.values[slot] = .text(storage)
      case .list(let list) where !list.slots.hasPending(of: replicas):
        continue
      case .list(var list):
        // Taken out first, so that the list's slots are edited in place.
        entities.values[entity].fields.values[slot] = .register(LWWRegister())
        dropped &+= list.slots.dropPending(of: replicas)
        // The deletes given up stay out of the state, or a decoded copy waits for them.
        list.dropGivenUpDeletes()
        waitingTexts.note(list.slots, field: waiting.field, of: waiting.entity)
        entities.values[entity].fields.values[slot] = .list(list)
      case .register, .set, .parent:
        continue
      }
    }
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return dropped
  }

  /// Whether a text or list item waits that ``dropPending(of:)`` would drop: an event of
  /// `replicas`, or one waiting for an event of theirs, or a delete of one of theirs.
  ///
  /// - Complexity: O(w + p) for w waiting fields and p waiting items.
  public func hasPendingChanges(of replicas: Set<ReplicaID>) -> Bool {
    guard !waitingTexts.isEmpty, !replicas.isEmpty else { return false }
    for waiting in waitingTexts {
      switch entities[waiting.entity]?.fields[waiting.field] {
      case .text(let storage)?: if storage.text.hasPending(of: replicas) { return true }
      case .list(let list)?: if list.slots.hasPending(of: replicas) { return true }
      default: continue
      }
    }
    return false
  }
}
