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
