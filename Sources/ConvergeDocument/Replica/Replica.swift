/// One device's copy of the app's data: a ``Document``, the replica's id and its clock.
///
/// A replica is the type an app keeps. Local edits go through ``transact(_:)``, which
/// returns the delta to send; deltas from other devices go to ``apply(_:)``. Whatever
/// order deltas arrive in, however often, replicas that applied the same deltas hold the
/// same document.
///
/// ```swift
/// let note = EntityKey(type: "note", id: "groceries")
/// var phone = Replica()
/// var laptop = Replica()
/// let commit = phone.transact { tx in
///   tx.create(note)
///   tx.setValue(.string("Groceries"), for: "title", of: note)
/// }
/// // Send commit.delta to the laptop by any means: a session, a server, a shared folder.
/// laptop.apply(commit.delta)
/// ```
///
/// A replica is a value: copying it forks it. Give a fork its own id with
/// ``forked(as:wallClock:)`` before editing it, or both copies would hand out the same dots.
public struct Replica: Sendable {
  /// This replica's id: the name on every dot it hands out.
  public private(set) var id: ReplicaID
  /// The replicated data.
  public private(set) var document: Document
  private var clock: HybridLogicalClock

  /// A new, empty replica with a fresh random id.
  ///
  /// Pass `id` only to restore an id you can prove is current (see ``ReplicaID``), and
  /// `wallClock` only in tests and simulations.
  public init(id: ReplicaID = .random(), wallClock: WallClock = .system) {
    self.id = id
    self.document = Document()
    self.clock = HybridLogicalClock(wallClock: wallClock)
  }

  /// A replica continuing from `document` under a *fresh* id, so that no dot is reused
  /// even if `document` is a stale copy.
  public init(document: Document, id: ReplicaID = .random(), wallClock: WallClock = .system) {
    self.id = id
    self.document = document
    self.clock = HybridLogicalClock(wallClock: wallClock)
    if let latest = document.latestTimestamp { clock.observe(latest) }
  }

  /// A copy of this replica under another id, as another device would start from it.
  ///
  /// The fork keeps this replica's clock (its latest timestamp and wall-clock source)
  /// unless `wallClock` gives it another source.
  ///
  /// - Complexity: O(1); the document's storage is shared until either copy edits it.
  public func forked(as newID: ReplicaID = .random(), wallClock: WallClock? = nil) -> Replica {
    var fork = self
    fork.id = newID
    if let wallClock { fork.clock = HybridLogicalClock(wallClock: wallClock, latest: clock.latest) }
    return fork
  }

  /// Every event this replica has integrated: send it to a peer to ask for what you lack.
  public var context: CausalContext { document.context }

  /// The gap-free summary of ``context``.
  ///
  /// - Complexity: O(r) for r replicas.
  public var version: VersionVector { document.context.versionVector }

  /// Runs `body` as one transaction and returns its delta and changes.
  ///
  /// The document is moved into the transaction, not copied, so editing a long note
  /// costs the edit, not a copy of the note. An empty transaction returns an empty
  /// delta.
  ///
  /// - Complexity: O(1) plus the cost of the edits `body` makes.
  @discardableResult
  public mutating func transact(_ body: (inout DocumentTransaction) -> Void) -> Commit {
    var undoLog: UndoLog?
    return transact(undoLog: &undoLog, body)
  }

  /// The empty document a transaction holds until the replica's is swapped in.
  private static let placeholder = Document()

  /// Runs `body` as one transaction that appends the inverses of its edits to `undoLog`
  /// unless it is `nil`.
  mutating func transact(
    undoLog: inout UndoLog?, _ body: (inout DocumentTransaction) -> Void
  ) -> Commit {
    // The document is swapped in below; the placeholder is shared, so a transaction
    // allocates no empty document (its storage and caches) of its own.
    var transaction = DocumentTransaction(
      document: Self.placeholder, replica: id, clock: clock)
    transaction.undoLog = undoLog.take()
    // Swapped as stored: no run of text edits is open before `body` or after
    // `finishDelta()` (see `DocumentTransaction.document`).
    swap(&transaction.runningDocument, &document)
    transaction.runningDocument.ownForestCache()
    body(&transaction)
    // Before the swap: an open run of text edits reads its runs from the document.
    let delta = transaction.finishDelta()
    swap(&transaction.runningDocument, &document)
    undoLog = transaction.undoLog.take()
    id = transaction.replica
    clock = transaction.clock
    return Commit(delta: delta, changes: transaction.recorder.finish(in: document))
  }

  /// Integrates a delta from another replica (or this one) and reports what changed.
  ///
  /// The replica's clock observes the delta's latest timestamp, so this replica's later
  /// writes win over the writes it has now seen, whatever its wall clock says.
  ///
  /// - Complexity: O(d log n) for a delta with d dots in a document of n elements.
  @discardableResult
  public mutating func apply(_ delta: DocumentDelta) -> DocumentChanges {
    if let latest = delta.latestTimestamp { clock.observe(latest) }
    return document.apply(delta)
  }

  /// Integrates a delta from a sender that may author only the events of `replicas` (a
  /// peer authenticated as those replicas), or throws why it may not, changing nothing:
  /// the check a relay runs on every push (see ``AuthorshipViolation``).
  ///
  /// - Complexity: O(d log n), as ``apply(_:)``, plus the check's O(d log n).
  @discardableResult
  public mutating func apply(_ delta: DocumentDelta, authoredBy replicas: Set<ReplicaID>)
    throws(AuthorshipViolation) -> DocumentChanges
  {
    if !delta.isAuthored(onlyBy: replicas),
      let violation = document.authorshipViolation(in: delta, grantedTo: replicas)
    {
      throw violation
    }
    return apply(delta)
  }

  /// Integrates another replica's whole state.
  ///
  /// - Complexity: O(e + d log n) for e entities in `other` and the d dots this replica
  ///   lacks.
  @discardableResult
  public mutating func merge(_ other: Replica) -> DocumentChanges {
    apply(other.document.delta(since: document.context))
  }

  /// Forgets the deleted entities whose events all lie in the stable cut `stable`, and
  /// returns how many (see ``Document/forgetDeleted(stable:)``).
  ///
  /// - Complexity: O(e + f) for e entities and f fields.
  @discardableResult
  public mutating func forgetDeleted(stable: CausalContext) -> Int {
    document.forgetDeleted(stable: stable)
  }

  /// Drops what waits for events of the retired replicas `replicas` (see
  /// ``Document/dropPending(of:)``) and returns how many items were dropped.
  ///
  /// - Complexity: O(w + p log p) for w waiting fields and p waiting items.
  @discardableResult
  public mutating func dropPending(of replicas: Set<ReplicaID>) -> Int {
    document.dropPending(of: replicas)
  }

  /// Drops the slot tombstones `cut` lets every list field collect (see
  /// ``Document/collectListTombstones(at:)``), and returns how many.
  ///
  /// - Complexity: O(Σ s log s) over the list fields' s slots each.
  @discardableResult
  public mutating func collectListTombstones(at cut: DoublyStableCut) -> Int {
    document.collectListTombstones(at: cut)
  }

  /// Exactly what a replica whose context is `known` lacks: its size grows with the
  /// changes since `known`, not with the document's history.
  ///
  /// `known` may understate what the peer has (the delta is then larger, never wrong),
  /// but must not overstate it.
  ///
  /// - Complexity: O(e + d) for e entities and d dots in the result.
  public func delta(since known: CausalContext) -> DocumentDelta {
    document.delta(since: known)
  }
}

/// The result of a transaction: the delta to send and what changed locally.
public struct Commit: Sendable {
  /// The transaction's edits as one delta.
  public var delta: DocumentDelta
  /// What the transaction changed, for the UI.
  public var changes: DocumentChanges
}

/// Errors a replica reports.
public enum ReplicaError: Error, Equatable, Sendable {
  /// The typed facade was asked to update an entity that does not exist.
  case entityNotFound(EntityKey)
}

extension Document {
  /// The latest register timestamp in the document.
  var latestTimestamp: Timestamp? {
    entities.values.reduce(nil) { FieldState.latestTimestamp(of: $1.fields.values, after: $0) }
  }
}
