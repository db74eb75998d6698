/// Who may have made the events of a delta: the check a relay runs on every push, and a
/// device on a peer whose replicas it knows.
///
/// A delta names events by their dots everywhere: its context, register stamps, the
/// versions of entities and set elements (adds and removals), text runs and deletes.
/// Decoding checks that these agree with each other, not who made them, so a device
/// holding a token for replica A could otherwise send a write stamped `B:1`, text runs
/// with B's ids, or a removal claiming it observed `B: 2^40` (which hides every later
/// edit B makes to that entity). The receiver checks every id of a replica that the
/// sender may not author against what it holds already:
///
/// - events (the context, register stamps, adds, text runs and delete dots) of such a
///   replica must be ones the receiver holds, and holds there: re-applying them must
///   change nothing (a register's stamp is at or below the receiver's, a presence's add
///   at or below the receiver's add, a text run's ids are in the receiver's text, a
///   delete's targets are deleted there already). A device may re-send what it
///   received, as `delta(since:)` does when its answer includes events the relay sent it
///   a moment earlier; it cannot author new events for another replica, nor re-stamp an
///   old event of another replica as a write somewhere else;
/// - observations (what a removal of an entity or a set element observed, the targets
///   of a text delete) of such a replica may claim only events the receiver holds: a
///   removal can hide B's events that exist, not B's future ones.
///
/// Events and observations of the granted replicas are not checked: only the sender's
/// own replicas can suffer from them, and a relay could not tell a claimed future event
/// of the sender from one of its pushes still in flight. Text origins are not checked
/// either: an origin places the sender's own run, and one naming an event that does not
/// exist leaves that run waiting.
///
/// A device that applies deltas from a peer whose replicas it knows (a peer
/// authenticated as one replica that must not forward others' events) runs the same
/// check and refuses the delta with its ``AuthorshipViolation`` before applying anything,
/// as the relay closes the socket with one. A device that syncs only with a relay which
/// checks authorship needs no check of its own: what the relay forwards was checked.
///
/// - Complexity: O(d) for d ids in the delta, each looked up in O(log) in the receiver;
///   nothing of the delta is decoded, and text is looked up only for runs and deletes of
///   replicas outside the grant.
public struct AuthorshipViolation: Error, Sendable, Equatable, CustomStringConvertible {
  /// Where in the delta the id was found.
  public enum Kind: Sendable, Equatable, CaseIterable {
    /// The delta's context names events of the replica the receiver does not hold.
    case context
    /// A register write stamped with the replica's dot that the receiver does not hold
    /// as that register's write (or a later one).
    case registerWrite
    /// An entity version (an edit or creation) of the replica the receiver lacks.
    case entityVersion
    /// A removal of an entity that claims to have observed more of the replica than the
    /// receiver holds of that entity.
    case entityRemoval
    /// A set add by the replica the receiver lacks.
    case setAdd
    /// A set removal that claims to have observed more of the replica than the receiver
    /// holds of that element.
    case setRemoval
    /// Text run ids of the replica that are not in the receiver's text.
    case textInsert
    /// Text deletes made with the replica's dots that the receiver has not applied.
    case textDelete
    /// Text deletes of the replica's characters the receiver does not hold.
    case textDeleteTarget
  }

  /// Where the id was found.
  public var kind: Kind
  /// The id: a dot of a replica the sender may not author.
  public var dot: Dot
  /// The entity it was found in, if not the context.
  public var entity: EntityKey?
  /// The field it was found in, if any.
  public var field: String?

  public init(kind: Kind, dot: Dot, entity: EntityKey? = nil, field: String? = nil) {
    self.kind = kind
    self.dot = dot
    self.entity = entity
    self.field = field
  }

  /// Whether the delta claimed to have observed events the receiver does not hold (a
  /// removal or a delete's target), rather than carried an event of another replica.
  public var isObservation: Bool {
    switch kind {
    case .entityRemoval, .setRemoval, .textDeleteTarget: true
    case .context, .registerWrite, .entityVersion, .setAdd, .textInsert, .textDelete: false
    }
  }

  public var description: String {
    var text = "\(kind) \(dot)"
    if let entity { text += " in \(entity)" }
    if let field { text += ".\(field)" }
    return text
  }
}

extension DocumentDelta {
  /// Whether every id the delta carries is of a replica in `replicas`: then no receiver
  /// refuses it under that grant (see ``AuthorshipViolation``), and a relay need not read
  /// its own state to check it.
  ///
  /// - Complexity: O(d) for d ids in the delta.
  public func isAuthored(onlyBy replicas: Set<ReplicaID>) -> Bool {
    let check = AuthorshipCheck(granted: replicas, known: nil)
    do {
      try check.run(on: self)
      return true
    } catch {
      return false
    }
  }
}

extension Document {
  /// Why this document refuses `delta` from a sender that may author only the events of
  /// `replicas`, or `nil` if it accepts it (see ``AuthorshipViolation``).
  ///
  /// Call it before applying a delta from a sender whose replicas are known: a relay on
  /// every push, with the replicas a token grants. The check reads the document and
  /// changes nothing.
  ///
  /// - Complexity: O(d log n) for d ids in the delta; texts are read only for runs and
  ///   deletes of replicas outside `replicas`.
  public func authorshipViolation(in delta: DocumentDelta, grantedTo replicas: Set<ReplicaID>)
    -> AuthorshipViolation?
  {
    let check = AuthorshipCheck(granted: replicas, known: self)
    do {
      try check.run(on: delta)
      return nil
    } catch .violation(let violation) {
      return violation
    } catch {
      // Unreachable: with a document, the check never asks for one.
      return AuthorshipViolation(
        kind: .context, dot: Dot(replica: ReplicaID(rawValue: 0), counter: 0))
    }
  }
}

/// One run of the authorship check over a delta. Without a document (`known` `nil`) it
/// stops at the first id outside the grant.
private struct AuthorshipCheck {
  enum Failure: Error {
    /// An id outside the grant, and no document to look it up in.
    case needsDocument
    case violation(AuthorshipViolation)
  }

  let granted: Set<ReplicaID>
  let known: Document?

  func run(on delta: DocumentDelta) throws(Failure) {
    if let edit = delta.storedTextEdit {
      if !granted.contains(edit.replica) {
        try checkContext(edit.replica, CounterRanges(edit.counters))
      }
      let record = known?.entities[edit.key]
      try checkPresence(.add(edit.last), local: record?.presence, key: edit.key, field: nil)
      try checkText(edit.runs, local: record?.fields[edit.field], key: edit.key, field: edit.field)
      return
    }
    for (replica, counters) in delta.context.entries where !granted.contains(replica) {
      try checkContext(replica, counters)
    }
    for (key, entity) in delta.entities {
      let record = known?.entities[key]
      try checkPresence(entity.presence, local: record?.presence, key: key, field: nil)
      for (name, field) in entity.fields {
        let local = record?.fields[name]
        switch field {
        case .register(let register), .parent(let register):
          try checkRegister(register, local: local, key: key, field: name)
        case .set(let elements):
          var localElements: SetElements?
          if case .set(let held)? = local { localElements = held }
          for (element, presence) in elements {
            try checkPresence(presence, local: localElements?[element], key: key, field: name)
          }
        case .text(let runs):
          try checkText(runs, local: local, key: key, field: name)
        case .list(let list):
          try checkList(list, local: local, key: key, field: name)
        }
      }
    }
  }

  private func fail(
    _ kind: AuthorshipViolation.Kind, _ dot: Dot, _ key: EntityKey?, _ field: String?
  )
    -> Failure
  {
    known == nil
      ? .needsDocument
      : .violation(AuthorshipViolation(kind: kind, dot: dot, entity: key, field: field))
  }

  private func holds(_ replica: ReplicaID, _ range: ClosedRange<UInt64>) -> Bool {
    known?.context.counters(of: replica).contains(range) ?? false
  }

  private func checkContext(_ replica: ReplicaID, _ counters: CounterRanges) throws(Failure) {
    guard let known else { throw .needsDocument }
    let missing = counters.subtracting(known.context.counters(of: replica))
    guard missing.isEmpty else {
      throw fail(.context, Dot(replica: replica, counter: missing.maximum), nil, nil)
    }
  }

  private func checkPresence(_ presence: Presence, local: Presence?, key: EntityKey, field: String?)
    throws(Failure)
  {
    guard let (dot, isRemoval) = presence.firstEntry(beyond: local ?? Presence(), outside: granted)
    else { return }
    let kind: AuthorshipViolation.Kind =
      field == nil
      ? (isRemoval ? .entityRemoval : .entityVersion) : (isRemoval ? .setRemoval : .setAdd)
    throw fail(kind, dot, key, field)
  }

  private func checkRegister(
    _ register: LWWRegister<FieldValue>, local: FieldState?, key: EntityKey, field: String
  ) throws(Failure) {
    guard let stamp = register.stamp, !granted.contains(stamp.dot.replica) else { return }
    // Re-applying must change nothing: the receiver holds this write, or a later one.
    if holds(stamp.dot.replica, stamp.dot.counter...stamp.dot.counter),
      let held = local?.registerContent, let heldStamp = held.stamp,
      stamp < heldStamp || (stamp == heldStamp && register.value == held.value)
    {
      return
    }
    throw fail(.registerWrite, stamp.dot, key, field)
  }

  private func checkText(_ runs: RGADelta, local: FieldState?, key: EntityKey, field: String)
    throws(Failure)
  {
    // Read (and for a deferred text, decoded) only for an id outside the grant.
    var text: RGA?
    func localText() -> RGA? {
      if text == nil {
        switch local {
        case .text(let storage)?: text = storage.text
        case .list(let list)?: text = list.slots
        default: break
        }
      }
      return text
    }
    for insert in runs.inserts where !granted.contains(insert.id.replica) {
      let count = UInt64(insert.length)
      let (end, overflow) = insert.id.counter.addingReportingOverflow(count)
      guard !overflow, count > 0, holds(insert.id.replica, insert.id.counter...(end - 1)),
        localText()?.holdsItems(from: insert.id, count: count, deleted: false) == true
      else { throw fail(.textInsert, insert.id, key, field) }
    }
    // A delete that is not well formed is ignored by every receiver's apply.
    for delete in runs.deletes where delete.isWellFormed {
      let targets = delete.targetRange
      if !granted.contains(delete.dot.replica) {
        // Someone else's deletes: re-sent only, so their targets are deleted here already.
        let (end, overflow) = delete.dot.counter.addingReportingOverflow(delete.count)
        guard !overflow, delete.count > 0,
          holds(delete.dot.replica, delete.dot.counter...(end - 1)),
          localText()?.holdsItems(
            from: Dot(replica: targets.replica, counter: targets.lower), count: delete.count,
            deleted: true) == true
        else { throw fail(.textDelete, delete.dot, key, field) }
      } else if !granted.contains(targets.replica) {
        // The sender's deletes of someone else's characters: only of characters that exist.
        guard targets.upper > targets.lower,
          holds(targets.replica, targets.lower...(targets.upper - 1))
        else {
          throw fail(
            .textDeleteTarget, Dot(replica: targets.replica, counter: targets.lower), key, field)
        }
      }
    }
  }

  /// A list's slots are checked as text is; each item's presence as a set element's, and
  /// its move as a register write.
  private func checkList(
    _ list: MovableListDelta, local: FieldState?, key: EntityKey, field: String
  ) throws(Failure) {
    // Slots and deletes the receiver's context names are left out by its apply (it may
    // have collected them: `Document+Collecting.swift`), so only the others are checked.
    let fresh = known.map { MovableList.runs(list.slots, unknownTo: $0.context) } ?? list.slots
    try checkText(fresh, local: local, key: key, field: field)
    var localItems: [FieldValue: MovableListItem] = [:]
    if case .list(let held)? = local { localItems = held.items }
    for (value, item) in list.items {
      let held = localItems[value]
      try checkPresence(item.presence, local: held?.presence, key: key, field: field)
      guard let stamp = item.position.stamp, !granted.contains(stamp.dot.replica) else {
        continue
      }
      // Re-sent only: the receiver holds this move, or a later one.
      guard holds(stamp.dot.replica, stamp.dot.counter...stamp.dot.counter),
        let heldStamp = held?.position.stamp, stamp <= heldStamp
      else { throw fail(.registerWrite, stamp.dot, key, field) }
    }
  }
}
