import Converge
import ConvergeRelayClient

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// One space as this relay process serves it: a cache of the space's replica, rebuilt
/// from the store and refreshed from it, and the sockets to fan new deltas out to.
///
/// Nothing here is the source of truth. The replica only ever changes by applying what
/// ``RelayStore/read(space:after:)`` returns, in position order, so it is the store's
/// state at ``appliedPosition``; another process appending to the same space is picked
/// up at the next refresh. Commits are grouped: deltas that arrive while an append is in
/// flight are merged into one log entry, written with the next append (one fsync for
/// many keystrokes), and each sender is acknowledged after that append returns. A
/// socket does not wait for its push to be durable before it reads the next one, so
/// one device's keystrokes share group commits too.
///
/// Entries other processes append reach the cache through the store's announcements:
/// one that carries its bytes and comes next in position order is applied and fanned
/// out with no read; anything else (a gap, an entry too large to announce, a lost
/// announcement) is read from the store.
///
/// A hub has no timer of its own: an idle space costs no CPU. When the store is shared
/// and cannot announce appends, ``SpaceDirectory`` polls every hub with sockets from one
/// timer (``pollIfServing()``).
actor SpaceHub {
  let space: String
  let store: any RelayStore
  private let compactionInterval: UInt64
  /// The store's state at ``appliedPosition``.
  var replica: Replica
  private(set) var appliedPosition: UInt64 = 0
  var snapshotPosition: UInt64 = 0
  private(set) var subscribers: [UInt64: Subscriber] = [:]
  private var waiting: [PendingCommit] = []
  private var isFlushing = false
  /// The last position the store announced, and whether some appends may have gone
  /// unannounced (the store reported ``RelayStoreEvent/resumed``, or a poll came due); a
  /// refresh is owed while either is ahead of ``appliedPosition``.
  private var announcedPosition: UInt64 = 0
  private var isResumed = false
  private var isCatchingUp = false
  /// Entries announced with their bytes and not applied yet, by position.
  private var announced: [UInt64: [UInt8]] = [:]
  /// Whether a read or an append of this space is in flight, and who waits for it. They
  /// take turns, so a read never returns an entry whose append has not come back yet:
  /// that entry would go out to every socket, its sender's included, before the append
  /// could name the sender.
  private var isUsingStore = false
  private var storeQueue: [CheckedContinuation<Void, Never>] = []
  /// Who waits for the hub to finish its reads and commits (``settle()``).
  private var settleQueue: [CheckedContinuation<Void, Never>] = []
  /// Deltas that may wait for the next append before ``submit(_:from:then:)`` refuses
  /// more: a store that stalls, or a space pushed faster than it commits, costs bounded
  /// memory.
  private let waitingLimit: Int

  /// Announced entries a space keeps while it waits for the ones before them; past it,
  /// the rest are read from the store instead.
  static let announcedLimit = 4_096

  /// A socket's queue of outgoing messages, and how to close it.
  struct Subscriber {
    var send: @Sendable ([UInt8]) -> Bool
    var close: @Sendable (RelayCloseReason) -> Void
  }

  private struct PendingCommit {
    var delta: DocumentDelta
    var sender: UInt64?
    var done: @Sendable (Result<CausalContext, any Error>) -> Void
  }

  /// The stable cut last sent to the sockets (see `SpaceHub+Stability.swift`).
  var publishedCut: RelayStableCut?
  /// The replica ids each admitted socket's token grants: connected devices are active.
  var connectedDevices: [UInt64: Set<ReplicaID>] = [:]
  /// While devices are connected to this process, the task that marks them heard from
  /// (``keepConnectedDevicesHeard()``).
  var heartbeat: Task<Void, Never>?
  /// The covering context of a cut ``advanceCut()`` could not publish because the replica
  /// lacked some of it; tried again when a read brings it (``advanceCutIfCovered()``).
  var awaitedCovering: CausalContext?
  /// A cut another process recorded that this one could not adopt yet because the replica
  /// lacked its covering context (see ``adoptRecordedCut(refreshing:answering:)``).
  var awaitedRecorded: RelayStableCut?
  /// Seconds a device may stay silent before it is retired.
  let retireAfter: Int64
  /// Seconds after its latest grant ended before a device is retired.
  let grantGrace: Int64
  let now: @Sendable () -> Date

  init(
    space: String, store: any RelayStore, compactionInterval: UInt64, waitingLimit: Int,
    retireAfter: Duration = .seconds(30 * 24 * 3600), grantGrace: Duration = .seconds(86_400),
    now: @escaping @Sendable () -> Date = { Date() }
  ) {
    self.space = space
    self.store = store
    self.compactionInterval = max(1, compactionInterval)
    self.waitingLimit = max(1, waitingLimit)
    self.replica = Replica()
    self.retireAfter = max(0, retireAfter.components.seconds)
    self.grantGrace = max(0, grantGrace.components.seconds)
    self.now = now
  }

  /// Registers a socket; `send` returns `false` when its queue is full, and `close` closes
  /// it with a reason (its queued messages first).
  func subscribe(
    _ id: UInt64, close: @escaping @Sendable (RelayCloseReason) -> Void = { _ in },
    send: @escaping @Sendable ([UInt8]) -> Bool
  ) {
    subscribers[id] = Subscriber(send: send, close: close)
  }

  /// Whether a read or a commit is in flight or owed.
  private var isBusy: Bool {
    isFlushing || isCatchingUp || isUsingStore || !waiting.isEmpty
  }

  /// Returns once no read or commit is in flight: what was submitted is durable (or
  /// failed) and its senders have been told, so the hub may be dropped.
  func settle() async {
    while isBusy { await withCheckedContinuation { settleQueue.append($0) } }
  }

  private func wakeSettlers() {
    guard !isBusy, !settleQueue.isEmpty else { return }
    let settlers = settleQueue
    settleQueue.removeAll()
    for settler in settlers { settler.resume() }
  }

  /// The store announced an append at `position`, with its bytes when it could carry
  /// them (`position` `nil`: possibly missed ones). With sockets open, the space applies
  /// what is new and pushes it, reading the store for what the announcements lack;
  /// while its own append is in flight it waits for that to finish, so the announcement
  /// of its own entry does not send a device's delta back to it.
  func notified(position: UInt64?, delta: [UInt8]? = nil) {
    guard !subscribers.isEmpty else { return }
    if let position {
      announcedPosition = max(announcedPosition, position)
      if let delta, position > appliedPosition, announced.count < Self.announcedLimit {
        announced[position] = delta
      }
    } else {
      isResumed = true
    }
    catchUpIfNotified()
  }

  /// A poll tick: some appends may have gone unannounced, so a space with sockets reads
  /// the store once no append of its own is in flight.
  func pollIfServing() {
    guard !subscribers.isEmpty else { return }
    isResumed = true
    catchUpIfNotified()
  }

  /// Whether an announcement is still unread: not the one of an entry this hub appended
  /// and applied itself, which needs no read.
  private var owesRefresh: Bool { isResumed || announcedPosition > appliedPosition }

  private func catchUpIfNotified() {
    guard !isFlushing else { return }
    applyAnnounced(through: .max)
    guard owesRefresh, !isCatchingUp else { return }
    isCatchingUp = true
    Task { await self.catchUp() }
  }

  /// Applies and fans out the announced entries that follow ``appliedPosition`` without
  /// a gap, up to `limit`, and forgets those the cache already has. An entry that does
  /// not decode is left to the read, which reports it.
  private func applyAnnounced(through limit: UInt64) {
    guard !announced.isEmpty else { return }
    while appliedPosition < limit, let bytes = announced[appliedPosition + 1],
      let delta = try? DocumentDelta(decoding: bytes), !introducesReplica(delta)
    {
      announced[appliedPosition + 1] = nil
      replica.apply(delta)
      appliedPosition += 1
      broadcast(bytes, excluding: [])
    }
    if announced.keys.contains(where: { $0 <= appliedPosition }) {
      announced = announced.filter { $0.key > appliedPosition }
    }
  }

  /// Whether `delta` holds events of a replica this space's replica has none of (a new
  /// device, or a rejoin's fresh id): such an entry is applied by a read, which first
  /// adopts the recorded cut (``adoptRecordedCut(refreshing:answering:)``).
  private func introducesReplica(_ delta: DocumentDelta) -> Bool {
    delta.context.replicas.contains { replica.context.counters(of: $0).isEmpty }
  }

  private func catchUp() async {
    while owesRefresh, !isFlushing {
      isResumed = false
      let before = appliedPosition
      do {
        try await refresh()
      } catch {
        // Retried at the next announcement or poll.
        break
      }
      await advanceCutIfCovered()
      // A store that announced more than it lets read is left to the poll.
      if appliedPosition == before, !isResumed { break }
    }
    isCatchingUp = false
    wakeSettlers()
  }

  func unsubscribe(_ id: UInt64) {
    subscribers[id] = nil
    connectedDevices[id] = nil
    if connectedDevices.isEmpty {
      heartbeat?.cancel()
      heartbeat = nil
    }
  }

  /// Brings the cache up to the store's latest state and fans what was new out to the
  /// subscribers, once no append of this space is in flight.
  ///
  /// - Throws: the store's errors, or a `ConvergeDecodingError` for stored bytes that do
  ///   not decode; the cache is then left at the last entry that did.
  func refresh() async throws {
    try await usingStore { try await read() }
  }

  /// Runs `body` once no other read or append of this space is in flight, holding off
  /// the others until it returns.
  func usingStore<T>(_ body: () async throws -> T) async rethrows -> T {
    await takeStore()
    defer { releaseStore() }
    return try await body()
  }

  /// Waits until no other read or append of this space is in flight.
  private func takeStore() async {
    guard isUsingStore else {
      isUsingStore = true
      return
    }
    await withCheckedContinuation { storeQueue.append($0) }
  }

  /// Hands the store to the next waiter, in arrival order.
  private func releaseStore() {
    if storeQueue.isEmpty {
      isUsingStore = false
      wakeSettlers()
    } else {
      storeQueue.removeFirst().resume()
    }
  }

  /// ``refresh()``'s read, for a caller that holds the store. `own` names this process's
  /// entry, if the read may include one, and the sockets whose deltas it holds: they are
  /// skipped for that entry alone, never for entries other processes appended.
  private func read(own: (position: UInt64, senders: Set<UInt64>)? = nil) async throws {
    let log = try await store.read(space: space, after: appliedPosition)
    if let snapshot = log.snapshot, snapshot.through > appliedPosition {
      // Behind a compaction: what the snapshot has and the cache lacks is applied and
      // fanned out as one delta.
      let restored = try Replica(restoring: snapshot.state)
      let missing = restored.delta(since: replica.context)
      replica.apply(missing)
      appliedPosition = snapshot.through
      snapshotPosition = max(snapshotPosition, snapshot.through)
      if !missing.isEmpty { broadcast(missing.encoded(), excluding: []) }
    }
    // Announcements applied while this read was in flight are skipped.
    for entry in log.entries where entry.position > appliedPosition {
      let delta = try DocumentDelta(decoding: entry.delta)
      if introducesReplica(delta) {
        // Maybe a rejoin, rebased on a cut another process recorded: forget by it first.
        try await adoptRecordedCut(refreshing: false)
        // Announcements applied meanwhile stop before this entry.
        guard entry.position > appliedPosition else { continue }
      }
      replica.apply(delta)
      appliedPosition = entry.position
      let excluded = entry.position == own?.position ? own?.senders ?? [] : []
      broadcast(entry.delta, excluding: excluded)
    }
  }

  /// Queues a validated delta for the next group commit; `done` receives the space's
  /// context once the delta is durable, or the store's error. Returns `false`, queuing
  /// nothing, when `waitingLimit` deltas already wait.
  func submit(
    _ delta: DocumentDelta, from sender: UInt64?,
    then done: @escaping @Sendable (Result<CausalContext, any Error>) -> Void
  ) -> Bool {
    guard waiting.count < waitingLimit else { return false }
    waiting.append(PendingCommit(delta: delta, sender: sender, done: done))
    if !isFlushing {
      isFlushing = true
      Task { await self.flush() }
    }
    return true
  }

  /// Commits a validated delta and returns the space's context once it is durable.
  func commit(_ delta: DocumentDelta, from sender: UInt64?) async throws -> CausalContext {
    try await withCheckedThrowingContinuation { continuation in
      let queued = submit(delta, from: sender) { continuation.resume(with: $0) }
      if !queued { continuation.resume(throwing: SpaceHubOverloaded()) }
    }
  }

  /// Appends the waiting deltas, merged, until none is left.
  private func flush() async {
    while !waiting.isEmpty {
      let batch = waiting
      waiting.removeAll()
      var merged = DocumentDelta()
      for pending in batch { merged.merge(pending.delta) }
      let senders = Set(batch.compactMap(\.sender))
      let excluded = senders.count == 1 ? senders : []
      let outcome: Result<CausalContext, any Error>
      do {
        outcome = .success(try await usingStore { try await append(merged, excluding: excluded) })
      } catch {
        outcome = .failure(error)
      }
      for pending in batch { pending.done(outcome) }
      await compactIfDue()
      // A report handled while this append was in flight may have deferred the cut.
      await advanceCutIfCovered()
    }
    isFlushing = false
    catchUpIfNotified()
    wakeSettlers()
  }

  /// Appends one group commit, `merged`, and brings the cache past it; `excluded` are the
  /// sockets whose deltas it holds. Returns the space's context once it is durable.
  private func append(_ merged: DocumentDelta, excluding excluded: Set<UInt64>) async throws
    -> CausalContext
  {
    let encoded = merged.encoded()
    let position = try await store.append(space: space, delta: encoded)
    // Entries other processes appended just before this one may have been announced
    // meanwhile.
    applyAnnounced(through: max(position, 1) - 1)
    if position == appliedPosition + 1 {
      // Nothing else was appended meanwhile: the cache takes what was written without
      // reading it back.
      replica.apply(merged)
      appliedPosition = position
      broadcast(encoded, excluding: excluded)
    } else if position > appliedPosition {
      // Other processes appended before this entry: read them and it in order.
      try await read(own: (position, excluded))
    }
    return replica.context
  }

  /// Replaces the log by a snapshot every ``compactionInterval`` entries. A failure only
  /// postpones it: the log still holds everything.
  private func compactIfDue() async {
    guard appliedPosition - snapshotPosition >= compactionInterval else { return }
    let through = appliedPosition
    do {
      try await store.compact(space: space, state: replica.encodedState(), through: through)
      snapshotPosition = through
    } catch {
      return
    }
  }

  func broadcast(_ bytes: [UInt8], excluding excluded: Set<UInt64>) {
    for (id, subscriber) in subscribers where !excluded.contains(id) {
      if !subscriber.send(bytes) { subscribers[id] = nil }
    }
  }
}

/// More deltas wait for a space's next append than the relay allows
/// (``RelayConfiguration/pendingDeltasPerSpace``).
struct SpaceHubOverloaded: Error {}
