import Converge
import Observation

/// This device's replica: the one object an app holds for its data.
///
/// A device replica owns the ``Replica``, keeps it durably in a directory (or in memory,
/// for tests and previews, through the same code), records this device's undo history,
/// knows what each peer acknowledged and therefore what is pending, and announces every
/// change: it is `@Observable` for SwiftUI, and ``changes()`` and ``events()`` stream what
/// happens. Every local edit goes through it: the typed ``create(_:id:)``,
/// ``update(_:id:_:)`` and ``delete(_:id:)``, or any ``transact(_:)``:
///
/// ```swift
/// let notes = try DeviceReplica(directory: notesFolder.path)  // on the main actor
/// let changes = notes.changes()  // subscribed now: no later change is missed
/// Task { for await change in changes { refreshList(change) } }
/// notes.create(Note(title: "Groceries"), id: "groceries")
/// let badge = notes.pendingCount  // 1: no peer has it yet
/// try notes.close()  // when the app quits
/// ```
///
/// **Transports attach, never own.** A peer session, a relay client or a shared folder
/// takes what to send from ``makeMessage(for:)`` or ``outbox(for:)`` and hands what
/// arrives to ``receive(_:through:from:)`` or ``apply(_:)``; what a peer acknowledged is
/// recorded here once (and saved), so ``pendingCount`` is one number whatever is
/// attached. Neither keeps a replica of its own or saves anything.
///
/// **Write-ahead without a sync per keystroke.** A commit is appended to the store's
/// group commit, which syncs at most once per ``DocumentStore/Configuration/syncInterval``
/// of typing. Until then its events are withheld from every message and outbox: a peer
/// never holds an edit the device could lose, and a transport that asks after every
/// keystroke costs no extra sync. The events go out with the next message after the
/// sync, or at once after ``flush()``. Nothing is withheld beside other events: an
/// unsynced edit would show in them (a changed entity travels with its whole presence,
/// which names its latest event), so when one waits and the peer lacks other events, the
/// store syncs before the message is made.
///
/// **Isolation.** A device replica is a class that is neither `Sendable` nor bound to an
/// actor: one isolation domain owns it, as it would own a file handle. In an app that is
/// the main actor (a `@MainActor` view model holds it); a simulation drives one from a
/// single thread. File I/O leaves that domain where it matters: the store's group-commit
/// `fsync`s and the saves of what peers acknowledged (``recordAcknowledgement(_:from:)``,
/// the context a handshake states to ``receive(_:through:from:)``) run on a background
/// queue (``DocumentStore/Configuration/syncInBackground``), and their results (a
/// failure in ``lastError``) are taken in on the owner's next call (or ``syncIfDue()``,
/// from a timer); an acknowledgement counts in memory, and in the badge, at once.
/// Opening, ``flush()`` and ``close()`` do their I/O on the caller's thread and wait for
/// the background work; so does the rare acknowledgement that makes the store take a
/// fresh replica id (its identity is durable before the call returns). The streams it
/// hands out are `Sendable` and may be read from any task.
///
/// ``DocumentStore`` is the persistence engine beneath it; use it directly only for
/// tools that need its files and counters.
@Observable
public final class DeviceReplica {
  /// Something an app must hear about, in the order it happened (see ``events()``).
  public enum Event: Sendable {
    /// The document changed: a local transaction, an undo or redo, or what a peer sent.
    case changed(DocumentChanges)
    /// The store took a fresh replica id (a restored backup, a peer holding later dots of
    /// this id): the device's earlier id is never used again.
    case identityChanged(IdentityChange)
    /// A sync failed: the edits stay in memory, unacknowledged, and the next sync writes
    /// them again (see ``DocumentStore`` "Failures").
    case storeFailed(StoreError)
  }

  /// The persistence engine: every edit this replica takes goes through it.
  @ObservationIgnored package let store: DocumentStore
  /// The retired replica ids whose waiting items this replica drops (see
  /// ``dropPending(of:)``), kept by the store in its identity record.
  private var retiredIDs: Set<ReplicaID> { store.retiredIDs }
  /// What the latest transaction, undo, redo or received delta changed. Observers hear
  /// of it with ``replica``, which changes with it.
  public var lastChanges: DocumentChanges {
    access(keyPath: \.replica)
    return latestChanges
  }
  /// The undo and redo stacks of this device's transactions (see ``UndoHistory``); kept
  /// in memory, not saved. Observers hear of it with ``replica``, which changes with it.
  public var undoHistory: UndoHistory {
    access(keyPath: \.replica)
    return history
  }
  // Kept apart from the observed properties: they change only with the replica, so one
  // notification per edit covers them (each observed mutation costs a keystroke about
  // a fifth of its time).
  @ObservationIgnored private var latestChanges = DocumentChanges()
  @ObservationIgnored private var history: UndoHistory
  /// The number of entities holding edits of this device no peer has acknowledged: the
  /// "not synced" badge.
  public private(set) var pendingCount: Int
  /// Every fresh replica id the store took since opening, and why: the one taken at open
  /// (also in ``recovery``) first.
  public private(set) var identityChanges: [IdentityChange]
  /// The last failure of a sync a commit triggered, cleared by the next successful sync.
  public private(set) var lastError: StoreError?
  /// Commits made durable since opening (local edits and received deltas).
  public private(set) var durableCommits = 0
  /// Called with each batch of encoded deltas the store made durable, in commit order:
  /// for a transport that forwards them as they are (a relay client).
  @ObservationIgnored public var onDurable: (([[UInt8]]) -> Void)?
  /// The open change streams, by subscriber.
  @ObservationIgnored private var changeSubscribers:
    [Int: AsyncStream<DocumentChanges>.Continuation] = [:]
  @ObservationIgnored private var eventSubscribers: [Int: AsyncStream<Event>.Continuation] = [:]
  @ObservationIgnored private var nextSubscriber = 0
  /// The local commits the store has not made durable yet: the store's commit number
  /// (``DocumentStore/committed``) after each and the latest counter it issued.
  @ObservationIgnored private var undurable: [(commit: Int, counter: UInt64)] = []
  /// The latest counter of this replica's id that is durable.
  @ObservationIgnored private var durableCounter: UInt64
  /// The entity of the local edit the badge was last counted after, if no other call
  /// counted it since (see ``refreshStatus(afterLocalEdit:)``).
  @ObservationIgnored private var countedEntity: EntityKey?
  /// The replica id `durableCounter` counts.
  @ObservationIgnored private var countedID: ReplicaID

  /// Opens (or creates) this device's replica in `directory`, recovering what the last
  /// run left (see ``recovery``).
  ///
  /// - Parameters:
  ///   - directory: the replica's folder (created if missing); one owner at a time.
  ///   - configuration: group commit, compaction and clocks; a `fileSystem` of
  ///     ``MemoryFileSystem`` keeps it in memory (see ``inMemory(configuration:undoHistory:)``).
  ///   - undoHistory: the history to record transactions in.
  /// - Throws: a ``StoreError`` if the directory cannot be created or read; damaged data
  ///   is cut and reported in ``recovery``, never thrown.
  public convenience init(
    directory: String, configuration: DocumentStore.Configuration = .init(),
    undoHistory: UndoHistory = UndoHistory()
  ) throws(StoreError) {
    self.init(
      store: try DocumentStore(directory: directory, configuration: configuration),
      undoHistory: undoHistory)
  }

  /// A replica kept in memory, for tests and previews: the same store over a
  /// ``MemoryFileSystem``, so it behaves as one on disk (group commit, acknowledgements)
  /// and saves nothing.
  ///
  /// - Throws: a ``StoreError`` only if `configuration`'s clocks or ids make the store
  ///   fail; a memory file system does not.
  public static func inMemory(
    configuration: DocumentStore.Configuration = .init(), undoHistory: UndoHistory = UndoHistory()
  ) throws(StoreError) -> DeviceReplica {
    var configuration = configuration
    configuration.fileSystem = MemoryFileSystem()
    return try DeviceReplica(
      directory: "/device-replica", configuration: configuration, undoHistory: undoHistory)
  }

  /// Takes over an open store: from now on every edit goes through this owner.
  package init(store: DocumentStore, undoHistory: UndoHistory = UndoHistory()) {
    self.store = store
    history = undoHistory
    pendingCount = store.pendingCount
    identityChanges = store.identityChanges
    lastError = store.lastError
    let replica = store.replica
    countedID = replica.id
    durableCounter = replica.context.counters(of: replica.id).maximum
    store.onDurable = { [weak self] deltas in self?.onDurable?(deltas) }
  }

  // MARK: - Reading

  /// The replica: read the document and models through it; change it only through
  /// ``transact(_:)`` so that observers, the store and the transports hear of it.
  ///
  /// Reading it inside a ``transact(_:)`` body traps: the transaction holds the document
  /// then (read it through the transaction).
  public var replica: Replica {
    access(keyPath: \.replica)
    return store.replica
  }

  /// This device's replica id: kept across launches, fresh when the store cannot prove
  /// its last counter (see ``identityChanges``).
  public var id: ReplicaID { replica.id }

  /// What opening found and repaired; ``StoreRecovery/losses`` lists what it could not.
  public var recovery: StoreRecovery { store.recovery }

  /// The store's directory.
  public var directory: String { store.directory }

  /// Whether `key` holds edits of this device no peer has acknowledged.
  public func isPending(_ key: EntityKey) -> Bool {
    access(keyPath: \.pendingCount)
    return store.isPending(key)
  }

  /// The entities holding edits no peer has acknowledged, sorted.
  public var pendingEntities: [EntityKey] {
    access(keyPath: \.pendingCount)
    return store.pendingEntities
  }

  // MARK: - Editing

  /// Runs a local transaction: the only way this device edits. It is recorded for undo,
  /// appended to the store's group commit, counted as pending and published.
  ///
  /// The returned commit's delta is not durable yet: transports take it from
  /// ``makeMessage(for:)`` or ``outbox(for:)`` once it is.
  ///
  /// - Complexity: the transaction's cost plus O(d) to encode its delta.
  @discardableResult
  public func transact(_ body: (inout DocumentTransaction) -> Void) -> Commit {
    let commit = withMutation(keyPath: \.replica) {
      remember(store.transact(recordingUndoIn: &history, body))
    }
    return finishLocal(commit)
  }

  /// Whether ``undo()`` has a step to take back (for an Undo button or menu item).
  public var canUndo: Bool { undoHistory.canUndo }
  /// Whether ``redo()`` has an undone step to make again.
  public var canRedo: Bool { undoHistory.canRedo }

  /// Takes back the latest step of this device's own edits (never another device's)
  /// with new operations, saved and sent like any transaction; `nil` if there was
  /// nothing to undo.
  @discardableResult
  public func undo() -> Commit? {
    withMutation(keyPath: \.replica) { store.undo(&history).map(remember) }.map(finishLocal)
  }

  /// Makes the latest undone step again, as ``undo()`` does; `nil` if there was nothing
  /// to redo.
  @discardableResult
  public func redo() -> Commit? {
    withMutation(keyPath: \.replica) { store.redo(&history).map(remember) }.map(finishLocal)
  }

  /// Ends the current undo step, so the next transaction starts a new one (call it when
  /// the cursor moves to another place, for instance).
  public func stopUndoGrouping() { history.stopGrouping() }

  /// Keeps a local commit's changes as ``lastChanges``, within the replica's mutation.
  private func remember(_ commit: Commit) -> Commit {
    remember(commit.changes)
    return commit
  }

  /// Keeps `changes` as ``lastChanges`` unless they are empty; call it within the
  /// replica's mutation, so observers read them with the new replica.
  func remember(_ changes: DocumentChanges) {
    if !changes.isEmpty { latestChanges = changes }
  }

  private func finishLocal(_ commit: Commit) -> Commit {
    if !commit.delta.isEmpty {
      let counter = commit.delta.latestCounter(of: countedID)
      if counter > 0 {
        undurable.append((store.committed, counter))
      }
    }
    publish(commit.changes)
    refreshStatus(afterLocalEdit: true)
    return commit
  }

  /// Integrates a delta from another device, saves it like an edit and publishes what
  /// changed. A transport that knows the sender holds the delta's events records that
  /// with ``recordAcknowledgement(_:from:)``.
  @discardableResult
  public func apply(_ delta: DocumentDelta) -> DocumentChanges {
    let changes = withMutation(keyPath: \.replica) {
      let changes = store.apply(delta)
      remember(changes)
      return changes
    }
    dropStranded()
    publish(changes)
    refreshStatus()
    return changes
  }

  /// Forgets the deleted entities whose events all lie in the stable cut `stable` and
  /// returns how many (see ``DocumentStore/forgetDeleted(stable:)``): the next sync
  /// writes a snapshot without their content and removes the files that held it.
  ///
  /// - Complexity: O(e + f) for e entities and f fields.
  @discardableResult
  public func forgetDeleted(stable: CausalContext) -> Int {
    let forgotten = withMutation(keyPath: \.replica) { store.forgetDeleted(stable: stable) }
    refreshStatus()
    return forgotten
  }

  /// Drops the text and list items that wait for events of the retired replicas
  /// `replicas` (see ``DocumentStore/dropPending(of:)``) and returns how many, and keeps
  /// dropping the ones that arrive again: after each ``apply(_:)`` and
  /// ``receive(_:through:from:)``. The ids are kept in the store's identity record
  /// (``DocumentStore/retire(_:)``), so a reopened device replica goes on dropping them; a
  /// failure to write it is reported as ``Event/storeFailed(_:)`` and the ids are written
  /// with the next identity record.
  ///
  /// Call it once this replica holds every event of `replicas` that any replica still
  /// holds (see ``Document/dropPending(of:)``): peer to peer, once it heard every other
  /// member since the retirement and holds what each stated. Then a retired id's item
  /// still waiting here waits for an event no replica holds; its device's rejoin
  /// (``rejoin(onto:stable:heldBy:as:)``) re-applies it under a fresh id.
  ///
  /// - Complexity: O(w + p log p) for w waiting fields and p waiting items.
  @discardableResult
  public func dropPending(of replicas: Set<ReplicaID>) -> Int {
    do throws(StoreError) {
      try store.retire(replicas)
    } catch {
      store.lastError = error
    }
    return dropStranded()
  }

  /// Drops what waits for events of `retiredIDs`, if anything waits.
  @discardableResult
  func dropStranded() -> Int {
    guard store.replica.document.hasPendingChanges(of: retiredIDs) else { return 0 }
    let dropped = withMutation(keyPath: \.replica) { store.dropPending(of: retiredIDs) }
    refreshStatus()
    return dropped
  }

  /// Rejoins after the relay retired this device (see
  /// ``DocumentStore/rejoin(onto:stable:heldBy:as:)``): the edits `current` lacks are
  /// re-applied on it under a fresh id, written durably as one snapshot. Sends
  /// ``Event/identityChanged(_:)`` with ``IdentityChange/retired``; observers of
  /// ``replica`` are notified (no ``DocumentChanges`` are sent: reread the document).
  ///
  /// The undo history is cleared: its steps name events of the retired id, which the
  /// rebased document no longer holds as such, so undoing one would take back nothing
  /// or the wrong thing.
  @discardableResult
  public func rejoin(
    onto current: Document, stable: CausalContext, heldBy peer: String? = nil,
    as id: ReplicaID? = nil
  ) throws(StoreError) -> Replica.Rebase {
    defer { refreshStatus() }
    let outcome = withMutation(keyPath: \.replica) {
      () -> Result<Replica.Rebase, StoreError> in
      do throws(StoreError) {
        return .success(try store.rejoin(onto: current, stable: stable, heldBy: peer, as: id))
      } catch {
        return .failure(error)
      }
    }
    // The store holds the fresh id's state even when its snapshot failed (it is written
    // by the next sync), so the history goes either way.
    history = UndoHistory()
    // Events of the old id that arrive late wait for ever, as those the rebase dropped:
    // the store retired it (`retiredIDs`).
    return try outcome.get()
  }

  // MARK: - Durability

  /// Takes in a finished background sync and starts the next one if it is due: call it
  /// from a timer so that edits made just before the user stops typing become durable
  /// (and sendable) without waiting for the next edit.
  public func syncIfDue() {
    do { try store.syncIfDue() } catch { store.lastError = error }
    refreshStatus()
  }

  /// Writes and syncs every buffered commit now (when the app goes to the background, or
  /// before a transport must send everything).
  public func flush() throws(StoreError) {
    defer { refreshStatus() }
    try store.flush()
  }

  /// Flushes, marks the shutdown clean and closes the store; later edits are kept in
  /// memory only, and later calls that write throw ``StoreError/closed``.
  public func close() throws(StoreError) {
    defer { refreshStatus() }
    try store.close()
  }

  // MARK: - Events

  /// A stream of every non-empty change from now on, local or remote; each caller gets
  /// its own stream.
  ///
  /// A stream reports the changes made after it is created, so create it before the
  /// task that reads it: a task starts later, and would miss what happens in between.
  public func changes() -> AsyncStream<DocumentChanges> {
    let (stream, continuation) = AsyncStream.makeStream(of: DocumentChanges.self)
    changeSubscribers[nextSubscriber] = continuation
    nextSubscriber += 1
    return stream
  }

  /// A stream of every ``Event`` from now on: changes, fresh replica ids and sync
  /// failures. What opening found is in ``recovery`` and ``identityChanges``.
  public func events() -> AsyncStream<Event> {
    let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
    eventSubscribers[nextSubscriber] = continuation
    nextSubscriber += 1
    return stream
  }

  /// Sends `changes` to the streams, unless they are empty (see ``remember(_:)`` for
  /// ``lastChanges``).
  func publish(_ changes: DocumentChanges) {
    guard !changes.isEmpty else { return }
    // A stream whose reader went away is dropped at its next change.
    for (id, continuation) in changeSubscribers {
      if case .terminated = continuation.yield(changes) { changeSubscribers[id] = nil }
    }
    send(.changed(changes))
  }

  private func send(_ event: Event) {
    for (id, continuation) in eventSubscribers {
      if case .terminated = continuation.yield(event) { eventSubscribers[id] = nil }
    }
  }

  /// Takes in what the store's last call changed: the badge, durability, a fresh id, a
  /// failure. Observed properties are set only when they change.
  ///
  /// After a local edit in the entity the badge last counted (typing on in one note),
  /// the badge is unchanged and is not recounted: the recount would file the store's
  /// latest pending entity away, which it keeps aside so that typing hashes nothing.
  func refreshStatus(afterLocalEdit: Bool = false) {
    let recent = store.recentPending?.key
    if !afterLocalEdit || recent == nil || recent != countedEntity {
      let pending = store.pendingCount
      if pending != _pendingCount { pendingCount = pending }
      countedEntity = afterLocalEdit ? recent : nil
    }
    if store.durableCommits != _durableCommits { durableCommits = store.durableCommits }
    if store.lastError != _lastError {
      lastError = store.lastError
      if let error = lastError { send(.storeFailed(error)) }
    }
    if store.identityChanges.count != _identityChanges.count {
      let fresh = store.identityChanges.dropFirst(identityChanges.count)
      identityChanges = store.identityChanges
      // Before the next edit, which would otherwise count the old id.
      followIdentity()
      for change in fresh { send(.identityChanged(change)) }
    }
  }

  /// Counts the store's current replica id: a fresh one (taken after a flush, so every
  /// earlier commit is durable) starts from what the replica holds of it.
  private func followIdentity() {
    let replica = store.replica
    guard replica.id != countedID else { return }
    countedID = replica.id
    undurable.removeAll()
    durableCounter = replica.context.counters(of: replica.id).maximum
  }

  /// The events to withhold from a peer that holds `known` (`nil`: a peer that has not
  /// spoken, which is sent no events), or `nil` if nothing may be sent now.
  ///
  /// They are the local edits the store has not made durable yet. They can be withheld
  /// only from a message that holds nothing else: any edit shows in the events sent
  /// beside it (a changed entity travels with its whole presence, which names the
  /// entity's latest event of each replica, typed characters included; the value an
  /// overwrite replaced would travel as replaced, a deleted entity as deleted), and a
  /// crash would then lose an event that peers hold a trace of. So when an edit is
  /// withheld and the peer lacks other events, the store syncs first and nothing is
  /// withheld; if that sync fails, nothing is sent.
  func withheldEvents(from known: CausalContext?) -> CausalContext? {
    let withheld = undurableEvents()
    guard !withheld.isEmpty, let known, !known.union(withheld).includes(store.replica.context)
    else { return withheld }
    do {
      try store.flushCommits()
    } catch {
      store.lastError = error
    }
    refreshStatus()
    let left = undurableEvents()
    return left.isEmpty ? left : nil
  }

  /// The local events the store has not made durable yet: withheld from every peer.
  ///
  /// - Complexity: O(1) amortized, plus O(r + g) for the context's replicas and gaps.
  func undurableEvents() -> CausalContext {
    followIdentity()
    let id = countedID
    let durable = store.durableCommits
    let settled = undurable.prefix { $0.commit <= durable }
    if let last = settled.last {
      durableCounter = last.counter
      undurable.removeFirst(settled.count)
    }
    var withheld = CausalContext()
    if let latest = undurable.last?.counter, latest > durableCounter {
      withheld.insert(replica: id, counters: (durableCounter + 1)...latest)
    }
    return withheld
  }
}
