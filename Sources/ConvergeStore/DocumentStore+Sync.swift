import Converge

/// Sync status without a queue: the store keeps what each peer (or relay) acknowledged,
/// and everything else follows from the document.
///
/// The outbox for a peer is the delta since its acknowledged context; an entity is pending
/// while it holds local dots that no acknowledged context includes. Nothing is queued, so
/// nothing can be dropped from a queue or sent twice by one: a delta is idempotent.
extension DocumentStore {
  static let acknowledgementsName = "acknowledged"

  /// What `peer` has acknowledged (empty if it never did).
  public func acknowledgedContext(of peer: String) -> CausalContext {
    acknowledged[peer] ?? CausalContext()
  }

  /// The durable delta `peer` lacks: flushes buffered commits first, so the outbox never
  /// holds an edit the device could lose.
  ///
  /// - Complexity: the sync's cost plus O(e + d) for e entities and d dots in the result.
  public func outbox(for peer: String) throws(StoreError) -> DocumentDelta {
    try flushCommits()
    return storedReplica.delta(since: acknowledgedContext(of: peer))
  }

  /// Records that `peer` holds every event of `context` (for example
  /// ``SyncSession``'s peer context after a handshake, or a relay's acknowledgement), and
  /// persists it.
  ///
  /// The acknowledgement counts at once: ``acknowledgedContext(of:)``, the outbox and the
  /// pending entities follow it before this returns. With
  /// ``Configuration/syncInBackground``, its file (written, synced, renamed, the
  /// directory synced) is saved on the sync queue, after the sync running there if any,
  /// never on the caller's thread; acknowledgements recorded while a save waits are saved
  /// by the same write. ``flush()`` and ``close()`` wait for it; a failed save is reported
  /// in ``lastError`` on a later call, and retried by ``flush()`` (which throws if it
  /// fails again) and at ``close()``. Saving late is safe: an acknowledgement lost to a
  /// crash only makes the reopened store count more entities as pending and send the
  /// peer deltas it holds again, which are idempotent (and a lost log is seen at open
  /// whatever the file says, see ``StoreRecovery/losses``). Without background syncs the
  /// file is saved before this returns.
  ///
  /// If `context` holds dots of this store's replica id beyond what the store holds (a
  /// restored backup that kept its inode numbers, or another copy of this directory), the
  /// store takes a fresh replica id at once, so no dot is issued twice. That rare case
  /// stays on the caller's thread: every buffered commit is flushed first, and the
  /// identity record of the fresh id is durable before this returns, so no edit under
  /// the fresh id can be made durable (let alone sent) before its id is.
  ///
  /// - Throws: a ``StoreError`` if the fresh id's flush or identity record fails, or,
  ///   without background syncs, if the acknowledgement cannot be saved.
  /// - Complexity: O(r + g) for r replicas and g gaps, plus O(p) for p pending entities.
  public func recordAcknowledgement(_ context: CausalContext, from peer: String)
    throws(StoreError)
  {
    try recordAcknowledgement(context, from: peer, saving: true)
  }

  /// Whether `context` holds dots of this store's replica id beyond what the store holds:
  /// recording it makes the store take a fresh id.
  package func holdsLaterDots(_ context: CausalContext) -> Bool {
    context.counters(of: storedReplica.id).maximum
      > storedReplica.context.counters(of: storedReplica.id).maximum
  }

  /// ``recordAcknowledgement(_:from:)``, saving the file only when `saving` (or when the
  /// context makes the store take a fresh id); otherwise the acknowledgement is noted in
  /// memory and saved with the next one that saves, or at ``close()``: for a transport
  /// that hears an acknowledgement after each push, where a save each would cost two
  /// `fsync`s per group commit of typing.
  package func recordAcknowledgement(
    _ context: CausalContext, from peer: String, saving: Bool
  ) throws(StoreError) {
    guard !isClosed else { throw .closed }
    checkOutsideTransaction()
    let freshID = holdsLaterDots(context)
    if freshID {
      try flushCommits()
      storedReplica = storedReplica.forked(as: configuration.freshID())
      try writeIdentity(cleanShutdown: false)
      identityChanges.append(.peerHoldsLaterDots)
    }
    guard noteHeld(context, by: peer) || acknowledgementsUnsaved else { return }
    guard saving || freshID else {
      acknowledgementsUnsaved = true
      return
    }
    guard configuration.syncInBackground else { return try saveAcknowledgements() }
    // Takes in an earlier save's outcome first, so that a failure it reports is not
    // taken for this save's.
    collectBackgroundSync()
    backgroundSync.saveAcknowledgements(acknowledged, in: directory, fileSystem)
    savingAcknowledgements = true
    acknowledgementsUnsaved = false
  }

  /// Takes in the outcome of the acknowledgements' background saves once they are done:
  /// a failure is reported in ``lastError`` and the contexts wait for the next save.
  func collectAcknowledgementSave() {
    guard let outcome = backgroundSync.takeAcknowledgementOutcome() else { return }
    savingAcknowledgements = false
    switch outcome {
    case .success:
      if let failed = failedAcknowledgementSave, lastError == failed { lastError = nil }
      failedAcknowledgementSave = nil
    case .failure(let error):
      acknowledgementsUnsaved = true
      failedAcknowledgementSave = error
      lastError = error
    }
  }

  /// Notes in memory that `peer` holds `context`, and settles the pending entities it
  /// acknowledges; `false` if the peer's acknowledged context already held it.
  @discardableResult
  func noteHeld(_ context: CausalContext, by peer: String) -> Bool {
    var merged = acknowledged[peer] ?? CausalContext()
    merged.formUnion(context)
    guard merged != acknowledged[peer] else { return false }
    acknowledged[peer] = merged
    acknowledgedUnion.formUnion(context)
    pendingDots = pendingDots.filter { !isAcknowledged($0.value) }
    return true
  }

  /// Writes every acknowledged context (a temporary file, synced, renamed into place, the
  /// directory synced).
  ///
  /// Called with no background save of them outstanding (after
  /// ``finishBackgroundSync()``): the two would share the temporary file. A background
  /// compaction ``flush()`` started may run meanwhile: it touches other files.
  func saveAcknowledgements() throws(StoreError) {
    try Self.attempt { try Self.writeAcknowledgements(acknowledged, in: directory, fileSystem) }
    acknowledgementsUnsaved = false
    if let failed = failedAcknowledgementSave, lastError == failed { lastError = nil }
    failedAcknowledgementSave = nil
  }

  /// Writes `acknowledged` as the `acknowledged` file of `directory`: on the owner's
  /// thread or on the sync queue.
  static func writeAcknowledgements(
    _ acknowledged: [String: CausalContext], in directory: String,
    _ fileSystem: any StoreFileSystem
  ) throws {
    let path = directory + "/" + acknowledgementsName
    try fileSystem.write(encodeAcknowledgements(acknowledged), to: path + ".tmp")
    try fileSystem.sync(path + ".tmp")
    try fileSystem.rename(path + ".tmp", to: path)
    try fileSystem.syncDirectory(directory)
  }

  /// The next message of a sync session with `peer`'s device, made only from durable
  /// edits: buffered commits are flushed first (write-ahead).
  ///
  /// - Complexity: the sync's cost plus ``SyncSession/makeMessage(for:)``'s.
  public func makeMessage(for session: inout SyncSession) throws(StoreError) -> SyncMessage? {
    try flushCommits()
    return session.makeMessage(for: storedReplica)
  }

  /// Integrates a sync message from `peer`, logs its delta like an edit and records the
  /// context the peer states as acknowledged, so an app never calls
  /// ``recordAcknowledgement(_:from:)`` by hand for a session. The events the message
  /// carries are the peer's, so they count as acknowledged too (saved with the next
  /// stated context, or at ``close()``).
  ///
  /// Only a stated context counts: a live push (no context) proves nothing about what the
  /// peer holds of ours, and the session's optimistic guess is never recorded.
  ///
  /// The stated context is recorded as ``recordAcknowledgement(_:from:)`` records it: at
  /// once in memory, its file saved on the sync queue with background syncs.
  ///
  /// - Throws: a ``StoreError`` as ``recordAcknowledgement(_:from:)`` throws one; the delta
  ///   is integrated and logged all the same.
  @discardableResult
  public func receive(_ message: SyncMessage, through session: inout SyncSession, from peer: String)
    throws(StoreError) -> DocumentChanges
  {
    try receive(message, through: &session, from: peer, withholding: CausalContext())
  }

  /// ``receive(_:through:from:)`` for a session whose messages withhold `withheld` (the
  /// edits a ``DeviceReplica`` has not made durable yet).
  package func receive(
    _ message: SyncMessage, through session: inout SyncSession, from peer: String,
    withholding withheld: CausalContext
  ) throws(StoreError) -> DocumentChanges {
    guard !isClosed else { throw .closed }
    checkOutsideTransaction()
    // The session's receive, checked once: a delta computed from an overstated view of
    // this replica (see `SyncSession.canApply(_:to:)`) is neither applied nor logged
    // (replayed at the next open, it would do what the check refused).
    let applies = SyncSession.canApply(message, to: storedReplica.context)
    var changes = DocumentChanges()
    if applies, let delta = message.delta { changes = storedReplica.apply(delta) }
    session.noteReceived(message, appliedTo: storedReplica, withholding: withheld)
    if let delta = message.delta, !delta.isEmpty {
      if applies { append(delta, local: false) }
      // The peer holds what it sent: noted now, saved with the next acknowledgement or at
      // close (a file write per live push would cost a sync per keystroke received), so
      // a reopened store does not count the peer's own edits as pending here.
      if noteHeld(delta.context, by: peer) { acknowledgementsUnsaved = true }
    }
    if let stated = message.context { try recordAcknowledgement(stated, from: peer) }
    return changes
  }

  /// The number of entities with edits no peer has acknowledged: a badge.
  ///
  /// - Complexity: O(1).
  public var pendingCount: Int { pendingDots.count }

  /// Whether `key` has edits no peer has acknowledged.
  ///
  /// - Complexity: O(1) on average.
  public func isPending(_ key: EntityKey) -> Bool { pendingDots[key] != nil }

  /// The entities with unacknowledged edits, sorted.
  public var pendingEntities: [EntityKey] { pendingDots.keys.sorted() }

  /// Whether some acknowledged context holds every counter up to `latest` of each id: a
  /// conservative test (a peer with a gap keeps the entity pending a little longer).
  func isAcknowledged(_ latest: [ReplicaID: UInt64]) -> Bool {
    latest.allSatisfy { replica, counter in
      acknowledgedUnion.counters(of: replica).contiguousPrefix >= counter
    }
  }

  /// Records the entities of a local commit as pending.
  ///
  /// - Complexity: O(k) for the k entities the commit touched; no context is copied.
  func markPending(_ delta: DocumentDelta) {
    let id = storedReplica.id
    let latest = delta.latestCounter(of: id)
    guard latest > 0 else { return }
    delta.forEachKey { key in
      if let recent = recentPending, recent.replica == id, recent.key == key {
        recentPending?.counter = latest
      } else {
        settlePending()
        recentPending = (key, id, latest)
      }
    }
  }

  /// Moves the entity held aside by ``markPending(_:)`` into `settledPending`.
  func settlePending() {
    guard let recent = recentPending else { return }
    recentPending = nil
    settledPending[recent.key, default: [:]][recent.replica] = recent.counter
  }

  /// Pending entities at open: those the document's delta since every acknowledgement
  /// holds, each with the latest unacknowledged counter of each id in that delta.
  /// Neither the delta nor any text is built (``Document/keys(withEventsUnknownTo:)``).
  func rebuildPending() {
    let unacknowledged = storedReplica.context.subtracting(acknowledgedUnion)
    var latest: [ReplicaID: UInt64] = [:]
    for (replica, counters) in unacknowledged.entries { latest[replica] = counters.maximum }
    // Built apart and assigned once: `pendingDots[key] = …` on the computed property
    // copied the whole table for each key (a 50,000-note library took 27 s to open).
    var pending: [EntityKey: [ReplicaID: UInt64]] = [:]
    let keys = storedReplica.document.keys(withEventsUnknownTo: acknowledgedUnion)
    pending.reserveCapacity(keys.count)
    for key in keys { pending[key] = latest }
    pendingDots = pending
  }

  static func encodeAcknowledgements(_ acknowledged: [String: CausalContext]) -> [UInt8] {
    var bytes: [UInt8] = []
    for (peer, context) in acknowledged.sorted(by: { $0.key < $1.key }) {
      RecordFrame.append(Array(peer.utf8), to: &bytes)
      RecordFrame.append(context.encoded(), to: &bytes)
    }
    return bytes
  }

  /// The acknowledged contexts in `bytes`, or `nil` if any part is damaged.
  ///
  /// - Throws: ``StoreError/unsupportedFormatVersion(file:found:supported:)`` for a
  ///   context of another format version.
  static func decodeAcknowledgements(_ bytes: [UInt8], file: String) throws(StoreError)
    -> [String: CausalContext]?
  {
    let (records, validLength) = RecordFrame.records(in: bytes)
    guard validLength == bytes.count, records.count % 2 == 0 else { return nil }
    var acknowledged: [String: CausalContext] = [:]
    var index = 0
    while index < records.count {
      let record = records[index + 1]
      guard
        let context = try decodeRefusingOtherVersions(file, { try CausalContext(decoding: record) })
      else { return nil }
      acknowledged[String(decoding: records[index], as: UTF8.self)] = context
      index += 2
    }
    return acknowledged
  }
}
