import Converge

/// Transports attach here: they take durable events and hand over what arrives, and the
/// acknowledgements they learn are recorded once, in the store, per peer.
extension DeviceReplica {
  /// What `peer` has acknowledged (empty if it never did).
  public func acknowledgedContext(of peer: String) -> CausalContext {
    store.acknowledgedContext(of: peer)
  }

  /// Records that `peer` holds every event of `context` (a relay's acknowledgement, what
  /// a shared folder now holds) and saves it; the pending badge follows at once.
  ///
  /// With background syncs the save (a file written and synced) runs on the store's sync
  /// queue, never on the caller's thread; ``flush()`` and ``close()`` wait for it, and a
  /// failure is reported in ``lastError`` on a later call. Saving late is safe: an
  /// acknowledgement a crash loses only counts as pending again, and the deltas sent
  /// again are idempotent (see ``DocumentStore/recordAcknowledgement(_:from:)``).
  ///
  /// A context holding dots of this replica's id beyond what it holds (a restored
  /// backup) makes the store take a fresh id at once, reported as an
  /// ``Event/identityChanged(_:)``: that rare call flushes and makes the fresh id durable
  /// on the caller's thread before it returns.
  ///
  /// - Throws: a ``StoreError`` if the fresh id cannot be made durable, or, without
  ///   background syncs, if the acknowledgement cannot be saved.
  public func recordAcknowledgement(_ context: CausalContext, from peer: String)
    throws(StoreError)
  {
    try record(context, from: peer, saving: true)
  }

  /// Records that `peer` holds every event of `context` as
  /// ``recordAcknowledgement(_:from:)`` does, in memory only: the file is saved with the
  /// next recorded acknowledgement (a handshake's stated context) or at ``close()``.
  ///
  /// For a transport that hears an acknowledgement after each push, such as a relay:
  /// saving each would cost two `fsync`s per group commit of typing. Saving late is safe
  /// (see ``recordAcknowledgement(_:from:)``): a crash loses only the record, whose edits
  /// count as pending until the peer's next handshake states its context again. A
  /// context holding later dots of this replica's id is recorded and saved at once, as
  /// the fresh id it makes the store take must be.
  ///
  /// - Throws: a ``StoreError`` only from that fresh-id case (or a closed store).
  package func noteAcknowledgement(_ context: CausalContext, from peer: String)
    throws(StoreError)
  {
    try record(context, from: peer, saving: false)
  }

  /// The store's ``DocumentStore/recordAcknowledgement(_:from:saving:)``, and the badge;
  /// observers of ``replica`` hear of it only when it takes a fresh id.
  private func record(_ context: CausalContext, from peer: String, saving: Bool)
    throws(StoreError)
  {
    defer { refreshStatus() }
    guard store.holdsLaterDots(context) else {
      return try store.recordAcknowledgement(context, from: peer, saving: saving)
    }
    // A fresh id changes the replica.
    try withMutation(keyPath: \.replica) {
      Result { () throws(StoreError) in
        try store.recordAcknowledgement(context, from: peer, saving: saving)
      }
    }.get()
  }

  /// The durable events `peer` lacks: everything since its acknowledged context except
  /// the edits the store has not synced yet (they follow once the group commit syncs
  /// them). When those are all the peer lacks nothing is flushed for them, so a
  /// transport may ask after every keystroke; when the peer lacks other events too, they
  /// are synced first (see ``DeviceReplica`` "Write-ahead").
  ///
  /// - Returns: an empty delta if that sync failed (see ``lastError``).
  /// - Complexity: O(e + d) for e entities and d events in the result.
  public func outbox(for peer: String) -> DocumentDelta {
    durableDelta(since: acknowledgedContext(of: peer), syncing: true) ?? DocumentDelta()
  }

  /// The durable events a peer that holds `known` lacks, as ``outbox(for:)`` makes them
  /// (for a transport that tracks what it sent, such as a session's live pushes).
  ///
  /// When an unsynced edit waits and the peer lacks other events too, they can go only
  /// after a sync (see ``DeviceReplica`` "Write-ahead"): with `syncing` the store syncs
  /// first, as ``outbox(for:)`` does; without, the result is `nil`, so that a transport
  /// that asks again soon (a timer) can wait for the group commit instead of adding a
  /// sync of its own.
  ///
  /// - Complexity: O(r + g) when the peer lacks nothing that may be sent, otherwise as
  ///   ``outbox(for:)``.
  package func durableDelta(since known: CausalContext, syncing: Bool) -> DocumentDelta? {
    syncIfDue()
    let withheld: CausalContext
    if syncing {
      guard let left = withheldEvents(from: known) else { return DocumentDelta() }
      withheld = left
    } else {
      withheld = undurableEvents()
    }
    let held = withheld.isEmpty ? known : known.union(withheld)
    if held.includes(store.replica.context) { return DocumentDelta() }
    if !withheld.isEmpty && !syncing { return nil }
    return store.replica.delta(since: held)
  }

  /// The next message of a sync session with a peer, made only from durable events (see
  /// ``outbox(for:)``); `nil` when there is nothing to say yet.
  ///
  /// - Complexity: as ``SyncSession/makeMessage(for:)``.
  public func makeMessage(for session: inout SyncSession) -> SyncMessage? {
    syncIfDue()
    guard let withheld = withheldEvents(from: session.peerContext) else { return nil }
    return session.makeMessage(for: store.replica, withholding: withheld)
  }

  /// Integrates a sync message from `peer`, saves its delta like an edit, records the
  /// context the peer states as its acknowledgement (as ``recordAcknowledgement(_:from:)``
  /// does: saved in the background with background syncs) and publishes what changed.
  ///
  /// - Throws: a ``StoreError`` as ``recordAcknowledgement(_:from:)`` throws one; the delta
  ///   is integrated and saved all the same.
  @discardableResult
  public func receive(_ message: SyncMessage, through session: inout SyncSession, from peer: String)
    throws(StoreError) -> DocumentChanges
  {
    defer { refreshStatus() }
    let withheld = undurableEvents()
    let changes = try withMutation(keyPath: \.replica) {
      Result { () throws(StoreError) in
        let changes = try store.receive(
          message, through: &session, from: peer, withholding: withheld)
        remember(changes)
        return changes
      }
    }.get()
    dropStranded()
    publish(changes)
    return changes
  }

  /// Decodes and integrates bytes from a session's peer (a handshake message or a
  /// live-push frame), as ``receive(_:through:from:)`` does.
  ///
  /// - Throws: a ``ConvergeDecodingError`` for bytes that do not decode (the replica is
  ///   then unchanged), or a ``StoreError`` as ``receive(_:through:from:)``.
  @discardableResult
  public func receive(encoded bytes: [UInt8], through session: inout SyncSession, from peer: String)
    throws -> DocumentChanges
  {
    try receive(try session.decode(bytes[...]), through: &session, from: peer)
  }
}
