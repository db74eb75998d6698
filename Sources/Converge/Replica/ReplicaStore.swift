#if canImport(Observation)
  import Observation

  /// A replica for an app's user interface: observable, main-actor bound, with a stream of
  /// changes and a hook to persist and send each commit.
  ///
  /// SwiftUI views that read ``replica`` (or the models it returns) update when it
  /// changes; other code can iterate ``changes()``:
  ///
  /// ```swift
  /// let store = ReplicaStore(replica: Replica())  // on the main actor
  /// store.onCommit = { commit in
  ///   save(commit.delta)  // the app's own persistence
  ///   send(session.pushEncoded(commit, from: store.replica))  // and transport
  /// }
  /// let changes = store.changes()  // subscribed now: no later change is missed
  /// Task { for await change in changes { refreshList(change) } }
  /// store.transact { $0.create(Note(title: "Groceries")) }
  /// ```
  ///
  /// A stream reports the changes made after it is created, so create it before the task
  /// that reads it: a task starts later, and would miss what happens in between.
  @MainActor
  @Observable
  public final class ReplicaStore {
    /// The replica; mutate it only through this store so observers hear of it.
    public private(set) var replica: Replica
    /// What the latest transaction or received delta changed.
    public private(set) var lastChanges = DocumentChanges()
    /// Called after every local transaction, to persist the state and send the delta.
    @ObservationIgnored public var onCommit: ((Commit) -> Void)?
    @ObservationIgnored private var subscribers: [Int: AsyncStream<DocumentChanges>.Continuation] =
      [:]
    @ObservationIgnored private var nextSubscriber = 0
    /// What the peers (a relay, another device) have stated they hold: the contexts their
    /// messages through this store stated and the deltas they sent, plus whatever the app
    /// recorded (``recordAcknowledgement(_:)``, for instance from a durable store).
    public private(set) var acknowledged: CausalContext
    /// The entities holding events that ``acknowledged`` lacks: an "unsynced" badge.
    public private(set) var pendingEntities: Set<EntityKey> = []
    /// The undo and redo stacks of this store's transactions (see ``UndoHistory``).
    public private(set) var undoHistory: UndoHistory

    /// A store that owns `replica`; `acknowledged` is what peers already hold (nothing,
    /// unless the app kept it from an earlier launch); `undoHistory` records every
    /// transaction made through the store.
    public init(
      replica: Replica, acknowledged: CausalContext = CausalContext(),
      undoHistory: UndoHistory = UndoHistory()
    ) {
      self.replica = replica
      self.acknowledged = acknowledged
      self.undoHistory = undoHistory
      refreshPending()
    }

    /// How many entities hold events no peer has acknowledged yet.
    public var pendingCount: Int { pendingEntities.count }

    /// Whether `key` holds events no peer has acknowledged yet.
    public func isPending(_ key: EntityKey) -> Bool { pendingEntities.contains(key) }

    /// Records that a peer holds `context` and recomputes which entities are pending.
    public func recordAcknowledgement(_ context: CausalContext) {
      acknowledged.formUnion(context)
      refreshPending()
    }

    /// Runs a local transaction, publishes its changes and hands the commit to
    /// ``onCommit``.
    @discardableResult
    public func transact(_ body: (inout DocumentTransaction) -> Void) -> Commit {
      finishLocal(replica.transact(recordingUndoIn: &undoHistory, body))
    }

    /// Whether ``undo()`` has a step to take back (for an Undo button or menu item).
    public var canUndo: Bool { undoHistory.canUndo }
    /// Whether ``redo()`` has an undone step to make again.
    public var canRedo: Bool { undoHistory.canRedo }

    /// Takes back the latest step of this store's own edits (never another device's),
    /// publishes what changed and hands the commit to ``onCommit``; `nil` if there was
    /// nothing to undo.
    @discardableResult
    public func undo() -> Commit? {
      replica.undo(&undoHistory).map(finishLocal)
    }

    /// Makes the latest undone step again, as ``undo()`` does; `nil` if there was nothing
    /// to redo.
    @discardableResult
    public func redo() -> Commit? {
      replica.redo(&undoHistory).map(finishLocal)
    }

    /// Ends the current undo step, so the next transaction starts a new one (call it when
    /// the cursor moves to another place, for instance).
    public func stopUndoGrouping() { undoHistory.stopGrouping() }

    private func finishLocal(_ commit: Commit) -> Commit {
      // A local event is new, so no peer holds it yet.
      commit.delta.forEachKey { pendingEntities.insert($0) }
      publish(commit.changes)
      onCommit?(commit)
      return commit
    }

    /// Integrates a delta from another device and publishes what changed.
    @discardableResult
    public func apply(_ delta: DocumentDelta) -> DocumentChanges {
      let changes = replica.apply(delta)
      publish(changes)
      return changes
    }

    /// The next message of a sync session with another device (see ``SyncSession``).
    public func makeMessage(for session: inout SyncSession) -> SyncMessage? {
      session.makeMessage(for: replica)
    }

    /// Integrates a sync message from another device, records what the message shows the
    /// peer holds (the context it states, the events it carries) as acknowledged, and
    /// publishes what changed.
    @discardableResult
    public func receive(_ message: SyncMessage, through session: inout SyncSession)
      -> DocumentChanges
    {
      let changes = session.receive(message, into: &replica)
      // The events a message carries are the peer's, so they are never pending here;
      // only a stated context can acknowledge local events (and costs a recount).
      if let delta = message.delta { acknowledged.formUnion(delta.context) }
      if let stated = message.context {
        acknowledged.formUnion(stated)
        if !pendingEntities.isEmpty { refreshPending() }
      }
      publish(changes)
      return changes
    }

    /// Integrates bytes from a sync session's peer (a handshake message or a live-push
    /// frame, see ``SyncSession/pushEncoded(_:from:)``) and publishes what changed.
    ///
    /// - Throws: a ``ConvergeDecodingError`` for bytes that do not decode; the replica is
    ///   then unchanged.
    @discardableResult
    public func receive(encoded bytes: [UInt8], through session: inout SyncSession) throws
      -> DocumentChanges
    {
      receive(try session.decode(bytes[...]), through: &session)
    }

    /// A stream of every non-empty change from now on; each caller gets its own stream.
    public func changes() -> AsyncStream<DocumentChanges> {
      let (stream, continuation) = AsyncStream.makeStream(of: DocumentChanges.self)
      let id = nextSubscriber
      nextSubscriber += 1
      subscribers[id] = continuation
      continuation.onTermination = { [weak self] _ in
        Task { @MainActor in self?.subscribers[id] = nil }
      }
      return stream
    }

    private func refreshPending() {
      pendingEntities = Set(replica.delta(since: acknowledged).keys)
    }

    private func publish(_ changes: DocumentChanges) {
      guard !changes.isEmpty else { return }
      lastChanges = changes
      for continuation in subscribers.values { continuation.yield(changes) }
    }
  }
#endif
