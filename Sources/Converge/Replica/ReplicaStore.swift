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

    /// A store that owns `replica`.
    public init(replica: Replica) {
      self.replica = replica
    }

    /// Runs a local transaction, publishes its changes and hands the commit to
    /// ``onCommit``.
    @discardableResult
    public func transact(_ body: (inout Transaction) -> Void) -> Commit {
      let commit = replica.transact(body)
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

    /// Integrates a sync message from another device and publishes what changed.
    @discardableResult
    public func receive(_ message: SyncMessage, through session: inout SyncSession)
      -> DocumentChanges
    {
      let changes = session.receive(message, into: &replica)
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
      let changes = try session.receive(encoded: bytes, into: &replica)
      publish(changes)
      return changes
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

    private func publish(_ changes: DocumentChanges) {
      guard !changes.isEmpty else { return }
      lastChanges = changes
      for continuation in subscribers.values { continuation.yield(changes) }
    }
  }
#endif
