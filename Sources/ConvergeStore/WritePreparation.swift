import Converge

/// What readies a store's files for a run's first write: the key file if the store has
/// none whole, the current generation's log and the generation record naming it, and the
/// identity record marked unclean, all durable before any record of the run is (so that
/// a crash after a write is always seen as an unclean shutdown).
///
/// Made on the owner's thread from the store's state, and run there or, when syncs run
/// in the background, by the run's first ``SyncJob`` before its own work, so that the
/// typing thread never waits for the identity's two `fsync`s.
struct WritePreparation: Sendable {
  /// The key to write, if the directory holds no whole key file.
  var key: SnapshotKey?
  /// The current generation, whose log must exist.
  var generation: UInt64
  /// Whether the generation record must be made to name `generation`.
  var recordGeneration: Bool
  /// The identity to write, marked unclean.
  var replica: ReplicaID
  var counter: UInt64
  /// The ids the identity record names as retired.
  var retired: Set<ReplicaID>

  /// What a run finished, kept even when a later step failed, so that a retry redoes
  /// only the rest.
  struct Progress: Sendable {
    var keyWritten = false
    var generationRecorded = false
    /// The identity record written, once the whole preparation is done.
    var identity: StoreIdentity?
  }

  func run(in directory: String, _ fileSystem: any StoreFileSystem, _ progress: inout Progress)
    throws
  {
    if let key {
      try DocumentStore.writeKey(key, in: directory, fileSystem)
      progress.keyWritten = true
    }
    // The log's entry is durable before the record that names it.
    let path = directory + "/" + DocumentStore.logName(generation)
    if try fileSystem.read(path) == nil {
      try fileSystem.write([], to: path)
      try fileSystem.sync(path)
      try fileSystem.syncDirectory(directory)
    }
    if recordGeneration {
      try DocumentStore.writeGenerationRecord(generation, in: directory, fileSystem)
      try fileSystem.syncDirectory(directory)
      progress.generationRecorded = true
    }
    progress.identity = try DocumentStore.writeIdentity(
      replica: replica, counter: counter, cleanShutdown: false, in: directory, fileSystem,
      retired: retired)
  }
}

extension DocumentStore {
  /// What this run must still do before its first write, or `nil` once it is done.
  func writePreparation() -> WritePreparation? {
    guard !isPrepared else { return nil }
    return WritePreparation(
      key: hasKeyFile ? nil : snapshotKey, generation: generation,
      recordGeneration: recordedGeneration != generation, replica: storedReplica.id,
      counter: storedReplica.context.counters(of: storedReplica.id).maximum,
      retired: retiredIDs)
  }

  /// Takes in what a preparation finished (on this thread or in a sync job).
  func applyPreparation(_ progress: WritePreparation.Progress, of preparation: WritePreparation) {
    if progress.keyWritten { hasKeyFile = true }
    if progress.generationRecorded { recordedGeneration = preparation.generation }
    if let identity = progress.identity {
      identityOnDisk = identity
      isPrepared = true
    }
  }

  /// Readies the files for this run's first write on this thread, once
  /// (``WritePreparation``).
  func prepareForWriting() throws(StoreError) {
    guard let preparation = writePreparation() else { return }
    var progress = WritePreparation.Progress()
    defer { applyPreparation(progress, of: preparation) }
    try Self.attempt { try preparation.run(in: directory, fileSystem, &progress) }
  }
}
