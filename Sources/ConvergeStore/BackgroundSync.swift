import Converge
import Foundation

/// One ``SyncJob`` at a time on a serial queue, with its outcome kept until the store's
/// owner collects it.
///
/// `@unchecked Sendable`: `outcome` is only read and written under `lock`; everything
/// else is immutable.
final class BackgroundSync: @unchecked Sendable {
  private let queue = DispatchQueue(label: "ConvergeStore.sync")
  private let lock = NSLock()
  private var outcome: SyncJob.Outcome?

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

  /// Waits for the running job, if any.
  func wait() { queue.sync {} }

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

  /// Takes in what a finished background sync did, if one finished.
  func collectBackgroundSync() {
    // `running` is unwrapped only once the job is done: a snapshot job holds a document,
    // which a commit need not copy to learn that the job still runs.
    guard running != nil, let outcome = backgroundSync.take(), let work = running else {
      return
    }
    running = nil
    _ = settle(outcome, of: work, background: true)
  }

  /// Waits for the background sync, if one runs, and takes in what it did.
  func finishBackgroundSync() {
    guard running != nil else { return }
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
