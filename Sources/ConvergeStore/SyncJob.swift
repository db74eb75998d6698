import Converge

/// One sync: the file work that makes a group of commits durable, either by appending
/// their records to the log or by writing a snapshot of the whole document in a new
/// generation (a compaction). It touches only the values it holds and the files, so it
/// runs the same on the owner's thread or on the store's sync queue.
struct SyncJob: Sendable {
  enum Work: Sendable {
    /// Append the records to the log of the current generation, through the handle the
    /// store holds open on it (one `write` and one `fsync`, no `open` or `close`); `nil`
    /// for a job that readies the files first (``preparation``), which opens the log once
    /// it is durable and hands the handle back.
    case append(log: (any StoreAppendHandle)?)
    /// Write `document` (which holds every commit in `records`) as the snapshot of
    /// `generation`, start that generation's empty log, then remove the older files.
    case snapshot(Document, generation: UInt64)
  }

  /// The commits to make durable; ``run()`` moves them out.
  var records: PendingRecords
  let work: Work
  let directory: String
  let fileSystem: any StoreFileSystem
  /// The store's key, which tags each snapshot (``DocumentStore/tagName(_:)``).
  let key: SnapshotKey
  /// The run's first write, readied before the job's own work (in the background, so
  /// that the owner's thread never waits for the identity's `fsync`s).
  var preparation: WritePreparation? = nil

  /// What a finished job reports back to the store's owner.
  struct Outcome: Sendable {
    /// The log bytes appended (or the snapshot's size), or the failure; on failure
    /// nothing in `records` is durable.
    var result: Result<Int, StoreError>
    /// The job's records: on failure, to be synced again; on success, emptied (the
    /// buffer's capacity serves the next commits).
    var records: PendingRecords
    /// The encoded deltas made durable, in commit order (empty on failure).
    var durable: [[UInt8]] = []
    /// A failure to record the new generation or remove the files a snapshot
    /// superseded; the snapshot is durable all the same, and the next compaction or open
    /// removes them.
    var removalError: StoreError?
    /// The preparation the job ran, and what of it finished (even on failure).
    var preparation: WritePreparation?
    var progress = WritePreparation.Progress()
    /// The log handle the job opened after its preparation, for the store to keep.
    var openedLog: (any StoreAppendHandle)?
  }

  /// Does the file work; never throws, the outcome says what happened.
  ///
  /// A snapshot is written to a temporary file, synced and renamed into place, its new
  /// empty log is synced, and the directory is synced, all before anything older is
  /// removed: a crash at any step leaves a directory that opens to every durable commit.
  ///
  /// The records are moved out of the job, not copied, so that emptying them keeps their
  /// buffer for the next commits instead of allocating one as large.
  mutating func run() -> Outcome {
    var records = PendingRecords()
    swap(&records, &self.records)
    var removalError: StoreError?
    var progress = WritePreparation.Progress()
    var openedLog: (any StoreAppendHandle)?
    let result = Result { () throws(StoreError) -> Int in
      if let preparation {
        try DocumentStore.attempt { try preparation.run(in: directory, fileSystem, &progress) }
      }
      switch work {
      case .append(let held):
        let log: any StoreAppendHandle
        if let held {
          log = held
        } else {
          let path = directory + "/" + DocumentStore.logName(preparation?.generation ?? 0)
          log = try DocumentStore.attempt { try fileSystem.openForAppending(path) }
          openedLog = log
        }
        let bytes = records.framed()
        try DocumentStore.attempt {
          try log.append(bytes)
          try log.sync()
        }
        return bytes.count
      case .snapshot(let document, let generation):
        let encoded = document.encoded()
        let snapshot = RecordFrame.framed(encoded)
        let path = directory + "/" + DocumentStore.snapshotName(generation)
        let tag = directory + "/" + DocumentStore.tagName(generation)
        let log = directory + "/" + DocumentStore.logName(generation)
        try DocumentStore.attempt {
          try fileSystem.write(snapshot, to: path + ".tmp")
          try fileSystem.sync(path + ".tmp")
          // The tag only speeds up loading: missing or damaged, the snapshot loads with
          // every check.
          try fileSystem.write(DocumentStore.encodedTag(key.tag(of: encoded)), to: tag)
          try fileSystem.sync(tag)
          try fileSystem.rename(path + ".tmp", to: path)
          try fileSystem.write([], to: log)
          try fileSystem.sync(log)
          try fileSystem.syncDirectory(directory)
        }
        do throws(StoreError) {
          try DocumentStore.attempt {
            // The log is durable: record its generation, so a lost log is seen at open.
            // The removal's directory sync makes the record durable too.
            try DocumentStore.writeGenerationRecord(generation, in: directory, fileSystem)
            try removeSuperseded(before: generation)
          }
        } catch {
          removalError = error
        }
        return snapshot.count
      }
    }
    guard case .success = result else {
      return Outcome(
        result: result, records: records, preparation: preparation, progress: progress,
        openedLog: openedLog)
    }
    let durable = records.payloads()
    records.removeAll()
    return Outcome(
      result: result, records: records, durable: durable, removalError: removalError,
      preparation: preparation, progress: progress, openedLog: openedLog)
  }

  /// Removes the snapshots and logs of generations before `generation`.
  private func removeSuperseded(before generation: UInt64) throws {
    for name in try fileSystem.contents(ofDirectory: directory) {
      guard let (_, fileGeneration) = DocumentStore.parse(name), fileGeneration < generation
      else { continue }
      try fileSystem.remove(directory + "/" + name)
    }
    try fileSystem.syncDirectory(directory)
  }
}
