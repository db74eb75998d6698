import Converge

/// What opening a store found and repaired.
public struct StoreRecovery: Equatable, Sendable {
  /// A log that ended in a torn or damaged record, cut back to its last whole record.
  public struct CutTail: Equatable, Sendable {
    /// The log file's name.
    public var file: String
    /// The bytes kept: every whole record.
    public var keptBytes: Int
    /// The bytes dropped after them.
    public var droppedBytes: Int
    /// The name of the copy of the whole damaged file kept beside the log, or `nil` when
    /// the cut dropped only a torn tail (the unsynced end of a run that did not close).
    public var copy: String? = nil
  }

  /// Something opening could not recover: each loss may have dropped acknowledged
  /// commits, so the store takes a fresh replica id (``IdentityChange/filesLost``)
  /// whenever it finds one. A damaged file is never read again: its bytes stay beside the
  /// store as `copy` (`damaged-<name>-<n>`), which neither opening nor compaction removes.
  public enum Loss: Equatable, Sendable {
    /// The snapshot of the newest generation is missing, though a log of it or the
    /// store's generation record shows it was written: recovery started from an older
    /// snapshot (or none), and the commits a compaction put only in this snapshot are
    /// lost.
    case missingSnapshot(generation: UInt64)
    /// The log of the newest generation is missing, though the store made it durable:
    /// its commits are lost.
    case missingLog(generation: UInt64)
    /// A snapshot failed its checksum or did not decode; it was moved aside as `copy`.
    case damagedSnapshot(file: String, copy: String)
    /// A log was damaged before its end, with `droppedRecords` whole records after the
    /// damage (or its previous run had closed cleanly, so its tail was durable data):
    /// the whole file was kept as `copy` and the log rewritten with the records before
    /// the damage.
    case cutLog(file: String, droppedRecords: Int, copy: String)
    /// The identity record was damaged; it was moved aside as `copy`.
    case damagedIdentity(copy: String)
    /// The store's generation record was damaged, so a lost newest log could go unseen;
    /// it was moved aside as `copy`.
    case damagedGenerationRecord(copy: String)
  }

  /// Whether the previous run closed the store (``DocumentStore/close()``).
  public var previousRunClosedCleanly = true
  /// The generation of the snapshot recovery started from (0: none).
  public var snapshotGeneration: UInt64 = 0
  /// Whether the snapshot's tag matched the store's key (``SnapshotKey``): its texts
  /// were then left coded until read, which makes opening a large library several times
  /// faster. False for a snapshot without a tag (an earlier build's), with a damaged
  /// one, or under a key the store no longer has; such a snapshot loads with every check.
  public var snapshotTagged = false
  /// Snapshots that failed their checksum or did not decode, newest first.
  public var damagedSnapshots: [String] = []
  /// Logs whose damaged tail was cut.
  public var cutTails: [CutTail] = []
  /// What opening could not recover, in the order found; empty after a clean run or a
  /// crash that lost only unsynced commits.
  public var losses: [Loss] = []
  /// Whether opening removed files of generations older than the snapshot it started
  /// from, left by a compaction that did not finish removing them.
  public var removedSupersededFiles = false
  /// Log records replayed on top of the snapshot.
  public var replayedRecords = 0
  /// Why the store took a fresh replica id, or `nil` if it continued the stored one.
  public var identityChange: IdentityChange?
  /// Whether the acknowledged contexts were damaged and reset (everything is resent).
  public var acknowledgementsReset = false
}

/// A store operation that failed. The replica in memory keeps every edit; what was not
/// made durable is not acknowledged and is written again by the next sync.
public enum StoreError: Error, Equatable, Sendable {
  /// A file operation failed.
  case fileSystem(StoreFileError)
  /// The store was closed.
  case closed
  /// A whole record of `file` holds a message of format version `found`, which this
  /// build does not read (it reads `supported`): files written by another version of
  /// Converge. Nothing was changed; open them with a build that reads that version.
  case unsupportedFormatVersion(file: String, found: UInt8, supported: UInt8)
}
