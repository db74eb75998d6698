import Converge
import Foundation

/// One ``SyncJob`` at a time on a serial queue, with its outcome kept until the store's
/// owner collects it.
///
/// The same queue saves the acknowledged contexts (``saveAcknowledgements(_:in:_:)``),
/// after the sync running there, if any.
///
/// `@unchecked Sendable`: `outcome` and the acknowledgements' state are only read and
/// written under `lock`; everything else is immutable.
final class BackgroundSync: @unchecked Sendable {
  private let queue = DispatchQueue(label: "ConvergeStore.sync")
  private let lock = NSLock()
  private var outcome: SyncJob.Outcome?
  /// The acknowledged contexts waiting on the queue for their save: a save asked for
  /// while one waits replaces it (each writes the whole file), so a burst of
  /// acknowledgements costs one write.
  private var waitingAcknowledgements: [String: CausalContext]?
  /// Saves handed to the queue and not finished.
  private var acknowledgementSaves = 0
  /// The outcome of the latest finished save, until the owner takes it.
  private var acknowledgementOutcome: Result<Void, StoreError>?

  /// Runs `job` in the background.
  func start(_ job: SyncJob) {
    // Handed over in a box: a closure's captured copy and a mutable one inside it would
    // both hold the records, and emptying them would allocate a buffer as large.
    let box = JobBox(job)
    queue.async {
      let outcome = box.job.run()
      self.lock.withLock { self.outcome = outcome }
    }
  }

  /// A job on its way to the sync queue, the only holder of its records.
  ///
  /// `@unchecked Sendable`: made on the owner's thread, then used only on the queue.
  private final class JobBox: @unchecked Sendable {
    var job: SyncJob
    init(_ job: SyncJob) { self.job = job }
  }

  /// The finished job's outcome, if one finished since the last call.
  func take() -> SyncJob.Outcome? {
    lock.withLock {
      defer { outcome = nil }
      return outcome
    }
  }

  /// Waits for the running job and the acknowledgements' save, if any.
  func wait() { queue.sync {} }

  /// Writes `acknowledged` as the store's `acknowledged` file on the queue, after the
  /// job running there (``DocumentStore/writeAcknowledgements(_:in:_:)``).
  func saveAcknowledgements(
    _ acknowledged: [String: CausalContext], in directory: String,
    _ fileSystem: any StoreFileSystem
  ) {
    let enqueue = lock.withLock {
      defer { waitingAcknowledgements = acknowledged }
      guard waitingAcknowledgements == nil else { return false }
      acknowledgementSaves += 1
      return true
    }
    guard enqueue else { return }
    queue.async {
      let acknowledged = self.lock.withLock {
        defer { self.waitingAcknowledgements = nil }
        return self.waitingAcknowledgements ?? [:]
      }
      let result = Result { () throws(StoreError) in
        try DocumentStore.attempt {
          try DocumentStore.writeAcknowledgements(acknowledged, in: directory, fileSystem)
        }
      }
      self.lock.withLock {
        self.acknowledgementSaves -= 1
        self.acknowledgementOutcome = result
      }
    }
  }

  /// The outcome of the acknowledgements' saves once none waits or runs (the latest
  /// wrote everything the earlier ones did), if one finished since the last call.
  func takeAcknowledgementOutcome() -> Result<Void, StoreError>? {
    lock.withLock {
      guard acknowledgementSaves == 0 else { return nil }
      defer { acknowledgementOutcome = nil }
      return acknowledgementOutcome
    }
  }

  /// Releases `deltas` on the queue: freeing thousands of small arrays is the sync's
  /// work, not the typing thread's (a no-op for those the app still holds).
  func discard(_ deltas: [[UInt8]]) {
    queue.async { withExtendedLifetime(deltas) {} }
  }
}

extension DocumentStore {
  /// Runs a sync of every pending commit: in the background when `background` (its
  /// outcome is collected by a later call), otherwise before returning.
  ///
  /// - Returns: the error of a sync that ran and failed.
  func startSync(snapshot: Bool, background: Bool) -> StoreError? {
    // A background job readies the run's files itself: the owner's thread never waits
    // for the identity's `fsync`s.
    let preparation = background ? writePreparation() : nil
    let work: SyncJob.Work
    do throws(StoreError) {
      if !background { try prepareForWriting() }
      work =
        snapshot
        ? .snapshot(storedReplica.document, generation: generation + 1)
        : .append(log: preparation == nil ? try openLog() : nil)
    } catch {
      lastError = error
      return error
    }
    var job = SyncJob(
      records: pending, work: work, directory: directory, fileSystem: fileSystem,
      key: snapshotKey, preparation: preparation)
    pending = spareRecords
    spareRecords = PendingRecords()
    guard background else { return settle(job.run(), of: work, background: false) }
    backgroundSync.start(consume job)
    running = work
    return nil
  }

  /// The handle on the current generation's log, opened by the first append to it and
  /// held until the generation ends, a sync fails or the store closes.
  func openLog() throws(StoreError) -> any StoreAppendHandle {
    if let logHandle { return logHandle }
    let path = directory + "/" + Self.logName(generation)
    let handle = try Self.attempt { try fileSystem.openForAppending(path) }
    logHandle = handle
    return handle
  }

  /// Closes the log's handle, if one is open.
  func closeLog() {
    logHandle?.close()
    logHandle = nil
  }

  /// Takes in what a finished background sync did, if one finished, and the outcome of
  /// the acknowledgements' background save.
  func collectBackgroundSync() {
    // `running` is unwrapped only once the job is done: a snapshot job holds a document,
    // which a commit need not copy to learn that the job still runs.
    if running != nil, let outcome = backgroundSync.take(), let work = running {
      running = nil
      _ = settle(outcome, of: work, background: true)
    }
    // After the sync's: a successful sync clears `lastError`, which must not hide a
    // failed save.
    if savingAcknowledgements { collectAcknowledgementSave() }
  }

  /// Waits for the background sync and the acknowledgements' save, if either runs, and
  /// takes in what they did.
  func finishBackgroundSync() {
    guard running != nil || savingAcknowledgements else { return }
    backgroundSync.wait()
    collectBackgroundSync()
  }

  /// Updates the store after a sync: its deltas are durable (and reported last, since
  /// ``onDurable`` may commit again), or, after a failure, they wait again and the next
  /// sync starts a fresh generation (the log may end in a torn record).
  ///
  /// - Returns: the sync's error, if it failed.
  func settle(_ outcome: SyncJob.Outcome, of work: SyncJob.Work, background: Bool)
    -> StoreError?
  {
    if let preparation = outcome.preparation {
      applyPreparation(outcome.progress, of: preparation)
    }
    if let opened = outcome.openedLog { logHandle = opened }
    switch outcome.result {
    case .failure(let error):
      // The next sync starts a new generation, whose log is opened afresh.
      closeLog()
      pending.prepend(outcome.records)
      needsFreshGeneration = true
      lastError = error
      return error
    case .success(let count):
      spareRecords = outcome.records
      switch work {
      case .append:
        logBytes += count
        logRecords += outcome.durable.count
      case .snapshot(_, let next):
        closeLog()
        generation = next
        logBytes = 0
        logRecords = 0
        snapshotBytes = count
        needsFreshGeneration = false
        // The job records the generation before removing what it superseded.
        recordedGeneration = outcome.removalError == nil ? next : nil
      }
      markDurable(outcome.durable, releasingOnQueue: background)
      if let removalError = outcome.removalError { lastError = removalError }
      return nil
    }
  }
}
