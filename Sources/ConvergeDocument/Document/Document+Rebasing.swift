/// Re-applying a device's edits on top of another state, under a fresh replica id: how a
/// device that was retired (away longer than its space's horizon, so the others may have
/// forgotten what it never saw deleted) rejoins without losing an edit of its own.
///
/// The rule: the device keeps its document `local` (L), fetches the current state
/// `current` (S), takes a fresh id and re-applies on top of S, as new events under that
/// id, every edit of L whose event S does not know. An edit's effect is judged by the
/// usual rules as if it had arrived concurrently with everything S holds:
///
/// - a register write L made wins if its stamp is above S's (last writer wins);
/// - a set element L added is added (add wins); one L removed is removed only if L's
///   remove observed every add S holds of it (a concurrent add wins);
/// - text L typed is inserted after the nearest character before it that S holds;
///   characters L deleted that S still shows are deleted;
/// - a list item L inserted or moved is placed after the nearest item before it that S
///   shows, a move only if its stamp is above S's; one L removed is removed only if L's
///   remove observed every event S holds of it;
/// - an entity L deleted is deleted only if L's delete observed every event S holds of it
///   (a concurrent edit keeps it alive);
/// - an entity L edited that S deleted comes back with its fields (a concurrent edit keeps
///   a deleted entity alive, whole), and one S forgot altogether is created again whole
///   from L's view.
///
/// "Not known to S" is judged against S's context, not against what a relay acknowledged:
/// an edit that reached S another way (through a peer that synced it) is in S already, and
/// re-applying it under a new id would type its text twice. One exception: the events of
/// the `retired` ids (the device's old id) that S holds only waiting, or dropped
/// (``Document/dropPending(of:)``), are re-applied too: S received them ahead of an
/// earlier event of the old id that no replica holds, so no replica will ever integrate
/// them, and every replica drops them.
extension Replica {
  /// What ``rebasing(_:onto:stable:retired:as:wallClock:)`` made.
  public struct Rebase: Sendable {
    /// The replica under the fresh id, holding the current state with the re-applied
    /// edits.
    public var replica: Replica
    /// The re-applied edits, to send to the others.
    public var delta: DocumentDelta
  }

  /// The state `current` with every edit of `local` that `current` does not know
  /// re-applied on it as new events of the replica `id`, and those events as one delta.
  ///
  /// `current` is first made to forget the deletes within `stable` (the stable cut the
  /// others forget by: what the relay last announced). An entity it forgot that an edit
  /// of `local` keeps alive (an edit the delete did not see) is created again, whole,
  /// from `local`'s view; an entity it forgot that `local` did not edit stays gone, the
  /// delete winning as it would have if it had arrived. The result converges with every
  /// replica that forgets by `stable` before it applies the delta (a relay and its
  /// devices apply a stable cut before the deltas that follow it); a replica that
  /// applied the delta while still holding the deleted record would show its old fields
  /// too, for ever.
  ///
  /// The text and list items of `retired` (the device's old id) that `current` holds only
  /// waiting or dropped are re-applied as well, and `current`'s waiting items of those
  /// ids are dropped: `current` must hold every event of `retired` that any replica still
  /// holds (a relay's state does; peer to peer, a peer that heard every other member
  /// since the retirement and holds what each stated), or an item another replica holds
  /// integrated would show twice.
  ///
  /// The result's clock has seen every timestamp of both documents, so the re-applied
  /// writes follow everything either side had seen. `id` must be fresh: never used by any
  /// replica (the others may have forgotten events of the old id, and a copy of the
  /// device may carry on its counter).
  ///
  /// - Complexity: O(e log e + n + k²) for e entities, n text items and k items of a list
  ///   field L edited.
  public static func rebasing(
    _ local: Document, onto current: Document, stable: CausalContext,
    retired: Set<ReplicaID> = [], as id: ReplicaID = .random(), wallClock: WallClock = .system
  ) -> Rebase {
    var base = current
    base.forgetDeleted(stable: stable)
    base.dropPending(of: retired)
    var replica = Replica(document: base, id: id, wallClock: wallClock)
    let commit = replica.transact { transaction in
      if let latest = local.latestTimestamp { transaction.clock.observe(latest) }
      transaction.reapply(editsOf: local, unknownTo: base.context, retired: retired)
    }
    return Rebase(replica: replica, delta: commit.delta)
  }
}

extension DocumentTransaction {
  /// Re-applies every edit of `local` whose event is not in `known`, and the text and
  /// list items of `retired` the document does not hold integrated (see
  /// ``Replica/rebasing(_:onto:stable:retired:as:wallClock:)``).
  mutating func reapply(
    editsOf local: Document, unknownTo known: CausalContext, retired: Set<ReplicaID> = []
  ) {
    // In key order, not the table's: entities enter it in the order deltas carried them,
    // which is their hash order, so the same rebase issued its dots in another order in
    // another process.
    let positions = local.entities.values.indices.sorted {
      local.entities.key(at: $0) < local.entities.key(at: $1)
    }
    for position in positions {
      let key = local.entities.key(at: position)
      let mine = local.entities.values[position]
      guard
        Self.hasEvent(of: mine.presence, unknownTo: known)
          || Self.hasEvent(of: mine.presence, of: retired)
      else { continue }
      guard let theirs = document.entities[key] else {
        // Forgotten (or never sent): alive only through events the document lacks, its
        // delete having observed every event it knew.
        if Self.hasLiveEvent(in: mine.presence, unknownTo: known) { recreate(key, from: mine) }
        continue
      }
      // Visible after the ordinary merge of the two: the re-applied edits must agree.
      let merged = theirs.presence.merging(mine.presence).isPresent
      if merged, !theirs.isVisible { create(key) }
      for slot in mine.fields.values.indices {
        reapply(
          mine.fields.values[slot], field: mine.fields.keys[slot], of: key, known: known,
          retired: retired)
      }
      if !merged, document.contains(key) { delete(key) }
    }
  }

  /// Whether `presence` names an event (each replica's latest on the entity or element)
  /// that `known` lacks. A replica's events arrive in order, so its latest known means
  /// all of them are.
  private static func hasEvent(of presence: Presence, unknownTo known: CausalContext) -> Bool {
    var found = false
    presence.forEachLatest { replica, counter in
      if !found, !known.contains(Dot(replica: replica, counter: counter)) { found = true }
    }
    return found
  }

  /// Whether `presence` names an event of one of `retired`.
  private static func hasEvent(of presence: Presence, of retired: Set<ReplicaID>) -> Bool {
    guard !retired.isEmpty else { return false }
    var found = false
    presence.forEachLatest { replica, _ in
      if !found, retired.contains(replica) { found = true }
    }
    return found
  }

  /// Whether some replica's latest add in `presence` is above what its removes observed
  /// (so it keeps the entity or element alive) and is an event `known` lacks.
  private static func hasLiveEvent(in presence: Presence, unknownTo known: CausalContext) -> Bool {
    var found = false
    presence.added.forEachEntry { replica, counter in
      if !found, counter > presence.removed[replica],
        !known.contains(Dot(replica: replica, counter: counter))
      {
        found = true
      }
    }
    return found
  }

  /// Creates `key` with every field `record` shows: registers' values, sets' present
  /// elements, texts' content and lists' items.
  private mutating func recreate(_ key: EntityKey, from record: EntityRecord) {
    create(key)
    for slot in record.fields.values.indices {
      let name = record.fields.keys[slot]
      switch record.fields.values[slot] {
      case .register(let register):
        if let value = register.value { setValue(value, for: name, of: key) }
      case .set(let elements):
        // In the wire's order, not the hash order they are kept in: the same rebase
        // must issue the same dots in every process.
        for entry in elements.inWireOrder where entry.presence.isPresent {
          insert(entry.element, into: name, of: key)
        }
      case .text(let storage):
        let string = storage.text.string
        if !string.isEmpty { insertText(string, at: 0, in: name, of: key) }
      case .list(let list):
        for (index, value) in list.values.enumerated() {
          insert(value, at: index, intoList: name, of: key)
        }
      case .parent(let register):
        if let move = register.value { writeParentMove(move, for: name, of: key) }
      }
    }
  }

  /// Writes a parent field's move value as it is, under a new event: the move keeps the
  /// parent it recorded, and the forest resolves any cycle it closes on every replica
  /// alike (``DocumentForest``), so no check against the current forest is needed.
  private mutating func writeParentMove(_ move: FieldValue, for name: String, of key: EntityKey) {
    let dot = nextDot()
    var register = LWWRegister<FieldValue>()
    register.set(move, stamp: LWWRegister<FieldValue>.Stamp(timestamp: clock.tick(), dot: dot))
    commit(event: dot, on: key, field: name, .parent(register))
  }

  /// Re-applies the edits of one field of `local` that `known` lacks.
  private mutating func reapply(
    _ field: FieldState, field name: String, of key: EntityKey, known: CausalContext,
    retired: Set<ReplicaID>
  ) {
    let theirs = document.entities[key]?.fields[name]
    switch field {
    case .register(let register):
      var current: LWWRegister<FieldValue>?
      if case .register(let existing)? = theirs { current = existing }
      if let value = Self.write(register, over: current, unknownTo: known) {
        setValue(value, for: name, of: key)
      }
    case .set(let elements):
      var current = SetElements()
      if case .set(let existing)? = theirs { current = existing }
      for entry in elements.inWireOrder where Self.hasEvent(of: entry.presence, unknownTo: known) {
        let (element, presence) = (entry.element, entry.presence)
        let theirPresence = current[element] ?? Presence()
        let merged = theirPresence.merging(presence).isPresent
        if merged, !theirPresence.isPresent {
          insert(element, into: name, of: key)
        } else if !merged, theirPresence.isPresent {
          remove(element, from: name, of: key)
        }
      }
    case .text(let storage):
      reapplyText(storage.text, field: name, of: key, known: known, retired: retired)
    case .list(let list):
      reapplyList(list, field: name, of: key, known: known, retired: retired)
    case .parent(let register):
      // A last-writer-wins move, judged as a register write is.
      var current: LWWRegister<FieldValue>?
      if case .parent(let existing)? = theirs { current = existing }
      if let move = Self.write(register, over: current, unknownTo: known) {
        writeParentMove(move, for: name, of: key)
      }
    }
  }

  /// The value of `mine`'s write if `known` lacks its event and it wins over `theirs`
  /// (last writer wins), else `nil`.
  private static func write(
    _ mine: LWWRegister<FieldValue>, over theirs: LWWRegister<FieldValue>?,
    unknownTo known: CausalContext
  ) -> FieldValue? {
    guard let value = mine.value, let stamp = mine.stamp, !known.contains(stamp.dot) else {
      return nil
    }
    if let theirStamp = theirs?.stamp, theirStamp > stamp { return nil }
    return value
  }

  /// Deletes the characters `mine` deleted that the document still shows, then inserts
  /// the characters `mine` shows that the document lacks (and `known` lacks: a character
  /// it knows but lacks was deleted and forgotten, unless it is one of `retired`'s, held
  /// only waiting or dropped), each run after the nearest character before it that the
  /// document holds.
  private mutating func reapplyText(
    _ mine: RGA, field name: String, of key: EntityKey, known: CausalContext,
    retired: Set<ReplicaID>
  ) {
    let items = mine.itemOrigins
    if case .text(let storage)? = document.entities[key]?.fields[name] {
      let theirs = storage.text
      let positions = items.lazy.filter(\.isDeleted).compactMap {
        theirs.visiblePosition(of: $0.id)
      }
      for range in Self.ranges(of: positions.sorted()).reversed() {
        deleteText(range, in: name, of: key)
      }
    }
    var theirs = RGA()
    if case .text(let storage)? = document.entities[key]?.fields[name] { theirs = storage.text }
    // Runs to insert, in `mine`'s order, each with the item it follows there.
    var runs: [(anchor: Dot?, text: String.UnicodeScalarView)] = []
    var anchor: Dot?
    var scalars = mine.string.unicodeScalars.makeIterator()
    var extending = false
    for item in items {
      let scalar = item.isDeleted ? nil : scalars.next()
      if theirs.contains(item.id) {
        anchor = item.id
        extending = false
      } else if let scalar, !known.contains(item.id) || retired.contains(item.id.replica) {
        if extending {
          runs[runs.count - 1].text.append(scalar)
        } else {
          runs.append((anchor, String.UnicodeScalarView([scalar])))
          extending = true
        }
      } else {
        extending = false
      }
    }
    // Last first: each run's anchor is unaffected by the runs after it, and a run sharing
    // an anchor with a later one goes in front of it.
    for run in runs.reversed() {
      var position = 0
      if let anchor = run.anchor, case .text(let storage)? = document.entities[key]?.fields[name] {
        position = storage.text.visibleCount(through: anchor) ?? 0
      }
      insertText(String(run.text), at: position, in: name, of: key)
    }
  }

  /// Re-applies a list field's edits. An item is shown after the ordinary merge when its
  /// joined presence is present and the slot its winning position names is visible (not
  /// deleted on either side); the document is brought there: items it shows that the
  /// merge would not are removed, then, in `mine`'s order, items the merge would show
  /// that it does not are inserted, and items whose position `mine` wins are moved, each
  /// after the nearest item before it that the document shows.
  private mutating func reapplyList(
    _ mine: MovableList, field name: String, of key: EntityKey, known: CausalContext,
    retired: Set<ReplicaID>
  ) {
    func theirs() -> MovableList {
      guard case .list(let list)? = document.entities[key]?.fields[name] else {
        return MovableList()
      }
      return list
    }
    let base = theirs()
    /// Whether `known` lacks an event of the item, whether the merge shows it, and
    /// whether `mine`'s position wins.
    func outcome(of item: MovableListItem, _ value: FieldValue) -> (
      edited: Bool, shown: Bool, minePosition: Bool
    ) {
      let theirItem = base.items[value] ?? MovableListItem()
      // Shown here at a slot of `retired` that the document does not hold (it held it
      // waiting, or dropped it), by a position the document holds too or loses to: put
      // back, as a new insert.
      if let slot = item.position.value, let stamp = item.position.stamp,
        retired.contains(slot.replica), !base.slots.contains(slot),
        mine.slots.visiblePosition(of: slot) != nil,
        theirItem.presence.merging(item.presence).isPresent,
        theirItem.position.stamp.map({ $0 <= stamp }) ?? true
      {
        return (true, true, true)
      }
      let mineStamp = item.position.stamp.flatMap { known.contains($0.dot) ? nil : $0 }
      let edited = mineStamp != nil || Self.hasEvent(of: item.presence, unknownTo: known)
      let minePosition =
        mineStamp.map { stamp in theirItem.position.stamp.map { $0 < stamp } ?? true }
        ?? false
      let slotVisible: Bool
      if minePosition, let slot = item.position.value {
        slotVisible = mine.slots.visiblePosition(of: slot) != nil
      } else if let slot = theirItem.position.value {
        let deletedHere = mine.slots.contains(slot) && mine.slots.visiblePosition(of: slot) == nil
        slotVisible = base.slots.visiblePosition(of: slot) != nil && !deletedHere
      } else {
        slotVisible = false
      }
      let present = theirItem.presence.merging(item.presence).isPresent
      return (edited, present && slotVisible, minePosition)
    }
    for (value, item) in mine.items.sorted(by: { $0.key < $1.key }) {
      let result = outcome(of: item, value)
      guard result.edited, !result.shown, let index = theirs().index(of: value) else { continue }
      remove(at: index, fromList: name, of: key)
    }
    var previous: FieldValue?
    for value in mine.values {
      defer { previous = value }
      guard let item = mine.items[value] else { continue }
      let result = outcome(of: item, value)
      guard result.edited, result.shown else { continue }
      let list = theirs()
      let target = previous.flatMap { list.index(of: $0) }.map { $0 + 1 } ?? 0
      if let index = list.index(of: value) {
        guard result.minePosition else { continue }
        move(from: index, to: index < target ? target - 1 : target, inList: name, of: key)
      } else {
        insert(value, at: target, intoList: name, of: key)
      }
    }
  }

  /// Sorted positions joined into ranges of consecutive ones.
  private static func ranges(of sorted: [Int]) -> [Range<Int>] {
    var ranges: [Range<Int>] = []
    for position in sorted {
      if let last = ranges.last, last.upperBound == position {
        ranges[ranges.count - 1] = last.lowerBound..<(position + 1)
      } else {
        ranges.append(position..<(position + 1))
      }
    }
    return ranges
  }
}

extension RGA {
  /// The number of visible items up to and including the item `id` (whether it is
  /// visible or not): the position just after it. `nil` if `id` is not here.
  ///
  /// - Complexity: O(log n + r) for r runs in a leaf.
  func visibleCount(through id: Dot) -> Int? {
    guard let found = locate(id) else { return nil }
    let before = leafOrder.prefix(of: found.leaf).visible &+ found.scalarsBefore
    return leaves[found.leaf].runs[found.run].deleted ? before : before &+ found.offset &+ 1
  }
}
