import Converge
import Foundation
import Testing

@testable import ConvergeStore

/// Files that hold every write of the identity's temporary file until the test opens the
/// gate, and note one made on the owner's thread while the test is inside a call to the
/// store (which then does not wait). The thread is what counts, not the moment: a
/// background sync that starts during the call runs on its queue at the same time.
final class IdentityGatedFileSystem: ForwardingFileSystem, @unchecked Sendable {
  // `@unchecked`: `base` locks its own state; `gate` is a semaphore; the flags are read
  // and written under `lock`.
  let base: MemoryFileSystem
  let gate = DispatchSemaphore(value: 0)
  private let lock = NSLock()
  private var owner: pthread_t?
  private var writtenInOwnerCall = false

  init(_ base: MemoryFileSystem) { self.base = base }

  /// Runs `body` (a call to the store) with identity writes noted as the owner's.
  func ownerCall(_ body: () throws -> Void) rethrows {
    lock.withLock { owner = pthread_self() }
    defer { lock.withLock { owner = nil } }
    try body()
  }

  var identityWrittenInOwnerCall: Bool { lock.withLock { writtenInOwnerCall } }

  func write(_ bytes: [UInt8], to path: String) throws {
    if path.hasSuffix("/identity.tmp") {
      let onOwnersThread = lock.withLock {
        let here = owner.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        if here { writtenInOwnerCall = true }
        return here
      }
      if !onOwnersThread {
        guard gate.wait(timeout: .now() + 60) == .success else {
          throw StoreFileError(operation: "gate", path: path, code: 0)
        }
        gate.signal()
      }
    }
    try base.write(bytes, to: path)
  }
  func openForAppending(_ path: String) throws -> any StoreAppendHandle {
    try base.openForAppending(path)
  }
}

@Suite struct BackgroundPreparationTests {
  /// A directory holding "abc" from a run that closed cleanly.
  static func closedStore() throws -> MemoryFileSystem {
    let disk = MemoryFileSystem()
    let first = try DocumentStore(directory: directory, configuration: configuration(disk))
    type("abc", into: first)
    try first.close()
    return disk
  }

  static func background(_ fileSystem: any StoreFileSystem) -> DocumentStore.Configuration {
    var settings = HeldLogTests.settings(fileSystem)
    settings.syncInBackground = true
    return settings
  }

  /// With background syncs, the run's first sync writes the identity (marked unclean) on
  /// the sync queue: the commit that starts it returns while the identity write waits at
  /// the gate, and nothing was written on the owner's thread.
  @Test func theFirstBackgroundSyncWritesTheIdentityOffTheOwnersThread() throws {
    let disk = try Self.closedStore()
    let gated = IdentityGatedFileSystem(disk)
    let store = try DocumentStore(directory: directory, configuration: Self.background(gated))
    disk.resetCounts()
    // Due at once: starts the first sync in the background.
    gated.ownerCall { type("d", into: store) }
    #expect(!gated.identityWrittenInOwnerCall)
    #expect(disk.calls(.write) == 0 && disk.calls(.sync) == 0)
    #expect(store.durableCommits == 0)
    gated.gate.signal()
    try store.flush()
    #expect(store.durableCommits == 1 && store.lastError == nil)
    disk.crash()
    let reopened = try DocumentStore(directory: directory, configuration: configuration(disk))
    #expect(reopened.replica.document.text(of: "body", in: note) == "abcd")
    #expect(!reopened.recovery.previousRunClosedCleanly)
    #expect(reopened.recovery.identityChange == nil)
  }

  /// A power cut at each operation of a run's first sync in the background: whenever the
  /// run's record survives, the identity says the run did not close cleanly (the same
  /// 7 operations as on the owner's thread).
  @Test func theUncleanMarkerIsDurableBeforeABackgroundRunsFirstRecord() throws {
    var step = 0
    var survived = 0
    while step < 50 {
      let disk = try Self.closedStore()
      let store = try DocumentStore(directory: directory, configuration: Self.background(disk))
      disk.failAnyOperation(at: step)
      type("d", into: store)
      let completed = (try? store.flush()) != nil && store.lastError == nil
      disk.crash()
      let reopened = try DocumentStore(directory: directory, configuration: configuration(disk))
      if reopened.replica.document.text(of: "body", in: note) == "abcd" {
        survived += 1
        #expect(!reopened.recovery.previousRunClosedCleanly, "crash at operation \(step)")
      }
      if completed { break }
      step += 1
    }
    #expect(step == 7 && survived == 1)
  }
}
