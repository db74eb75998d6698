import Converge
import Foundation

/// One log write and `fsync` at a time on a serial queue, with its result kept until the
/// store's owner collects it.
///
/// `@unchecked Sendable`: `result` is only read and written under `lock`; everything else
/// is immutable.
final class BackgroundSync: @unchecked Sendable {
  private let queue = DispatchQueue(label: "ConvergeStore.sync")
  private let lock = NSLock()
  private var result: Result<Int, StoreError>?

  /// Frames `records`, appends them to `path` and syncs it, in the background.
  func start(_ records: [[UInt8]], to path: String, in fileSystem: any StoreFileSystem) {
    queue.async {
      let outcome = Result { () throws(StoreError) -> Int in
        let bytes = RecordFrame.framed(records)
        try DocumentStore.attempt {
          try fileSystem.append(bytes, to: path)
          try fileSystem.sync(path)
        }
        return bytes.count
      }
      self.lock.withLock { self.result = outcome }
    }
  }

  /// The finished sync's result, if one finished since the last call.
  func take() -> Result<Int, StoreError>? {
    lock.withLock {
      defer { result = nil }
      return result
    }
  }

  /// Waits for the running sync, if any.
  func wait() { queue.sync {} }
}

extension DocumentStore {
  func startBackgroundSync() {
    guard inFlight == nil else { return }
    let log = directory + "/" + Self.logName(generation)
    backgroundSync.start(unsynced, to: log, in: fileSystem)
    inFlight = unsynced
    unsynced = []
    unsyncedBytes = 0
  }

  /// Acknowledges what a finished background sync made durable; after a failure, its
  /// deltas wait again and the next sync starts a fresh generation (the log may be torn).
  func collectBackgroundSync() {
    guard let deltas = inFlight, let result = backgroundSync.take() else { return }
    inFlight = nil
    switch result {
    case .success(let count):
      logBytes += count
      markDurable(deltas)
    case .failure(let error):
      unsynced = deltas + unsynced
      unsyncedBytes = unsynced.reduce(0) { $0 + RecordFrame.headerSize + $1.count }
      needsFreshGeneration = true
      lastError = error
    }
  }

  func finishBackgroundSync() {
    guard inFlight != nil else { return }
    backgroundSync.wait()
    collectBackgroundSync()
  }
}
