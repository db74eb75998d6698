import Converge

extension DocumentStore {
  /// Rejoins after the relay retired this device: replaces the replica by
  /// ``Replica/rebasing(_:onto:stable:retired:as:wallClock:)`` of its document onto
  /// `current` (the state the relay holds now, fetched with an empty context) under a
  /// fresh id, the retired id's items `current` holds only waiting re-applied too, and
  /// writes it as one snapshot of a new generation. Returns the rebase.
  ///
  /// The fresh id is `id` (one from ``takeFreshID()``, for a caller that needed it before,
  /// to ask for a token granting it), or else one from ``Configuration/freshID``.
  ///
  /// **One durable write.** Before the snapshot, the identity record names the fresh id
  /// together with the retired one and the new generation (see ``StoreIdentity``): an open
  /// that recovers that generation's snapshot continues the fresh id, one that does not
  /// (a crash before the snapshot was renamed into place) continues the retired id with
  /// the old state, which the relay retires again. A crash at any point therefore
  /// reopens the old state under the old id or the new state under the fresh id.
  ///
  /// **After.** Every peer's acknowledged context is reset (no peer acknowledged an event
  /// of the fresh id, and the old contexts describe a state that is gone); `peer`, if
  /// given, is recorded as holding `current`'s context, so its outbox is exactly the
  /// re-applied edits. The entities those edits touch are pending until a peer
  /// acknowledges them. ``identityChanges`` gains ``IdentityChange/retired``. The store
  /// keeps no undo history; ``DeviceReplica/rejoin(onto:stable:heldBy:as:)`` clears its own.
  ///
  /// If the snapshot cannot be written, the error is thrown and the store keeps the new
  /// state in memory: its next sync writes it as a snapshot of that generation or a later
  /// one, which the identity record already names (an open before that reopens the old
  /// state under the old id).
  ///
  /// - Throws: ``StoreError/closed``, or a ``StoreError`` from the flush of buffered
  ///   commits (nothing is changed then), the identity record, the snapshot, or the
  ///   acknowledged contexts' file.
  /// - Complexity: that of the rebase, plus writing a snapshot of the whole document.
  @discardableResult
  public func rejoin(
    onto current: Document, stable: CausalContext, heldBy peer: String? = nil,
    as id: ReplicaID? = nil
  ) throws(StoreError) -> Replica.Rebase {
    guard !isClosed else { throw .closed }
    checkOutsideTransaction()
    // Every commit of the old id durable, no sync running, the run's files readied: the
    // only writes left are this method's own.
    try flushCommits()
    finishBackgroundSync()
    try prepareForWriting()
    let retired = storedReplica.id
    let retiredCounter = max(
      storedReplica.context.counters(of: retired).maximum, identityOnDisk?.provenCounter ?? 0)
    let rebase = Replica.rebasing(
      storedReplica.document, onto: current, stable: stable, retired: [retired],
      as: id ?? configuration.freshID(), wallClock: configuration.wallClock)
    let fresh = rebase.replica
    let rejoin = StoreIdentity.Rejoin(
      retired: retired, retiredCounter: retiredCounter, generation: generation + 1)
    identityOnDisk = try Self.attempt {
      try Self.writeIdentity(
        replica: fresh.id, counter: fresh.context.counters(of: fresh.id).maximum,
        cleanShutdown: false, in: directory, fileSystem, rejoin: rejoin, retired: retiredIDs)
    }
    storedReplica = fresh
    // Late events of the old id wait for ever, as those the rebase dropped; on disk the
    // id is retired once the plain record below (or an open that recovers the snapshot)
    // names it.
    retiredIDs.insert(retired)
    identityChanges.append(.retired)
    acknowledged = [:]
    acknowledgedUnion = CausalContext()
    if let peer { noteHeld(current.context, by: peer) }
    rebuildPending()
    if let error = startSync(snapshot: true, background: false) {
      needsFreshGeneration = true
      throw error
    }
    // The snapshot is durable: a plain record of the fresh id replaces the rejoin's.
    try writeIdentity(cleanShutdown: false)
    try saveAcknowledgements()
    return rebase
  }

  /// Drops the text and list items that wait for events of the retired replicas
  /// `replicas` and returns how many (see ``Document/dropPending(of:)``, and when it may
  /// be called): the next sync writes a snapshot without them, so that an open does not
  /// bring them back from the log.
  ///
  /// - Complexity: O(w + p log p) for w waiting fields and p waiting items.
  @discardableResult
  public func dropPending(of replicas: Set<ReplicaID>) -> Int {
    guard storedReplica.document.hasPendingChanges(of: replicas) else { return 0 }
    checkOutsideTransaction()
    // As for forgetting: a compaction still writing the document as it was would settle
    // after this call and clear the need for a fresh snapshot.
    finishBackgroundSync()
    let dropped = storedReplica.dropPending(of: replicas)
    if dropped > 0 { needsFreshGeneration = true }
    return dropped
  }

  /// Records `replicas` as retired (``retiredIDs``) in the identity record, durably, so
  /// that a reopened store knows them: ``DeviceReplica`` drops what arrives waiting for
  /// their events (``DeviceReplica/dropPending(of:)``). Ids already retired and this
  /// store's own id are left out; nothing is written when none is left.
  ///
  /// - Throws: ``StoreError/closed``, or a ``StoreError`` from the flush of buffered
  ///   commits or the identity record (the ids are retired in memory all the same, and
  ///   written with the next identity record).
  public func retire(_ replicas: Set<ReplicaID>) throws(StoreError) {
    guard !isClosed else { throw .closed }
    let added = replicas.subtracting(retiredIDs).subtracting([storedReplica.id])
    guard !added.isEmpty else { return }
    checkOutsideTransaction()
    retiredIDs.formUnion(added)
    // The record names a counter the files hold, and no sync writes it meanwhile.
    try flushCommits()
    finishBackgroundSync()
    try prepareForWriting()
    try writeIdentity(cleanShutdown: false)
  }

  /// A fresh replica id from ``Configuration/freshID``, for a ``rejoin(onto:stable:heldBy:as:)``
  /// to come (a relay client asks for a token granting it first).
  package func takeFreshID() -> ReplicaID { configuration.freshID() }
}
