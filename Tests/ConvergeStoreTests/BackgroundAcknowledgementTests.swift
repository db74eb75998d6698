import Converge
import Foundation
import Testing

@testable import ConvergeStore

/// Files that note every write, sync, rename and append made on the owner's thread while
/// the test is inside a call to the store, hold each write of the acknowledgements'
/// temporary file made on another thread until the test opens the gate, count those
/// writes, and fail them on demand.
final class AcknowledgementGatedFileSystem: ForwardingFileSystem, @unchecked Sendable {
  // `@unchecked`: `base` locks its own state; `gate` is a semaphore; the rest is read and
  // written under `lock`.
  let base: MemoryFileSystem
  let gate = DispatchSemaphore(value: 0)
  private let lock = NSLock()
  private var owner: pthread_t?
  private var operations: [String] = []
  private var acknowledgementWrites = 0
  private var failing = false

  init(_ base: MemoryFileSystem) { self.base = base }

  /// Runs `body` (a call to the store or its owner) with operations noted as the owner's.
  func ownerCall<Result>(_ body: () throws -> Result) rethrows -> Result {
    lock.withLock { owner = pthread_self() }
    defer { lock.withLock { owner = nil } }
    return try body()
  }

  /// The operations made on the owner's thread during ``ownerCall(_:)``, with their paths.
  var ownerOperations: [String] { lock.withLock { operations } }
  /// The writes of the acknowledgements' temporary file so far.
  var acknowledgementsWritten: Int { lock.withLock { acknowledgementWrites } }
  /// Whether writes of the acknowledgements' temporary file fail.
  var failsAcknowledgements: Bool {
    get { lock.withLock { failing } }
    set { lock.withLock { failing = newValue } }
  }

  /// Notes `operation` if it runs on the owner's thread; whether it does.
  @discardableResult
  private func note(_ operation: String, _ path: String) -> Bool {
    lock.withLock {
      guard let owner, pthread_equal(owner, pthread_self()) != 0 else { return false }
      operations.append(operation + " " + path)
      return true
    }
  }

  func write(_ bytes: [UInt8], to path: String) throws {
    let onOwnersThread = note("write", path)
    if path.hasSuffix("/" + DocumentStore.acknowledgementsName + ".tmp") {
      if !onOwnersThread {
        // A save made on the owner's thread would wait here for ever: it is noted and
        // goes on instead, so the test reports it.
        guard gate.wait(timeout: .now() + 60) == .success else {
          throw StoreFileError(operation: "gate", path: path, code: 0)
        }
        gate.signal()
      }
      let fails = lock.withLock {
        acknowledgementWrites += 1
        return failing
      }
      if fails { throw StoreFileError(operation: "write", path: path, code: 5) }
    }
    try base.write(bytes, to: path)
  }
  func sync(_ path: String) throws {
    note("sync", path)
    try base.sync(path)
  }
  func syncDirectory(_ directory: String) throws {
    note("syncDirectory", directory)
    try base.syncDirectory(directory)
  }
  func rename(_ source: String, to destination: String) throws {
    note("rename", destination)
    try base.rename(source, to: destination)
  }
  func append(_ bytes: [UInt8], to path: String) throws {
    note("append", path)
    try base.append(bytes, to: path)
  }
  func openForAppending(_ path: String) throws -> any StoreAppendHandle {
    try base.openForAppending(path)
  }
}

@Suite struct BackgroundAcknowledgementTests {
  /// Background syncs over `fileSystem`, each due at once; every fresh id is new.
  static func settings(_ fileSystem: any StoreFileSystem) -> DocumentStore.Configuration {
    var settings = BackgroundPreparationTests.background(fileSystem)
    let ids = FreshIDs()
    settings.freshID = { ids.next() }
    return settings
  }

  /// Fresh ids 1, 2, 3…
  final class FreshIDs: @unchecked Sendable {
    // `@unchecked`: `counter` is read and written under `lock`.
    private let lock = NSLock()
    private var counter: UInt64 = 0
    func next() -> ReplicaID {
      lock.withLock {
        counter += 1
        return ReplicaID(rawValue: counter)
      }
    }
  }

  /// A device replica holding "abc" (durable) in the note over `fileSystem`.
  static func owner(_ fileSystem: any StoreFileSystem) throws -> DeviceReplica {
    let owner = try DeviceReplica(directory: directory, configuration: settings(fileSystem))
    for (offset, character) in ["a", "b", "c"].enumerated() {
      owner.transact { $0.insertText(character, at: offset, in: "body", of: note) }
    }
    try owner.flush()
    return owner
  }

  /// With background syncs, recording an acknowledgement writes and syncs nothing on the
  /// caller's thread, and does not wait for its save (held at the gate), yet the badge
  /// and the acknowledged context follow at once; ``DeviceReplica/flush()`` waits for the
  /// save, which then survives a power cut.
  @Test func anAcknowledgementIsSavedOffTheOwnersThread() throws {
    let disk = MemoryFileSystem()
    let files = AcknowledgementGatedFileSystem(disk)
    let owner = try Self.owner(files)
    let relay = owner.replica.context
    #expect(owner.pendingCount == 1)

    try files.ownerCall { try owner.recordAcknowledgement(relay, from: "relay") }
    #expect(files.ownerOperations.isEmpty)
    #expect(owner.pendingCount == 0 && owner.acknowledgedContext(of: "relay") == relay)
    #expect(disk.bytes(directory + "/" + DocumentStore.acknowledgementsName) == nil)

    files.gate.signal()
    try owner.flush()
    #expect(files.acknowledgementsWritten == 1 && owner.lastError == nil)
    disk.crash()
    let reopened = try DeviceReplica(directory: directory, configuration: Self.settings(disk))
    #expect(reopened.acknowledgedContext(of: "relay") == relay)
    #expect(reopened.pendingCount == 0 && reopened.id == owner.id)
  }

  /// A handshake's stated context is recorded the same way, with no write of the file on
  /// the owner's thread; acknowledgements that arrive while a save waits are saved by one
  /// more write (the first save may also take them all); ``DeviceReplica/close()`` waits
  /// for them.
  @Test func aBurstOfAcknowledgementsCostsAtMostTwoWritesAndCloseWaitsForThem() throws {
    let disk = MemoryFileSystem()
    let files = AcknowledgementGatedFileSystem(disk)
    let owner = try Self.owner(files)
    var peer = Replica(id: ReplicaID(rawValue: 99), wallClock: .fixed(0))
    var ownerSession = SyncSession()
    var peerSession = SyncSession()
    // Twenty acknowledgements (ten stated by the laptop, ten by the relay): the first
    // save waits at the gate, the others replace one another in the queue.
    for index in 0..<10 {
      let outgoing = owner.makeMessage(for: &ownerSession)
      if let outgoing { peerSession.receive(outgoing, into: &peer) }
      peer.transact { $0.setValue(.int(Int64(index)), for: "count", of: note) }
      guard let incoming = peerSession.makeMessage(for: peer) else {
        Issue.record("the peer had nothing to say")
        return
      }
      try files.ownerCall {
        try owner.receive(incoming, through: &ownerSession, from: "laptop")
        try owner.recordAcknowledgement(peer.context, from: "relay")
      }
    }
    #expect(files.ownerOperations.allSatisfy { !$0.contains(DocumentStore.acknowledgementsName) })
    #expect(owner.pendingCount == 0)
    files.gate.signal()
    try owner.close()
    // Twenty acknowledgements, saved on the caller's thread, were twenty writes.
    #expect((1...2).contains(files.acknowledgementsWritten))
    disk.crash()
    let reopened = try DeviceReplica(directory: directory, configuration: Self.settings(disk))
    #expect(reopened.acknowledgedContext(of: "relay") == peer.context)
    #expect(reopened.acknowledgedContext(of: "laptop") == owner.acknowledgedContext(of: "laptop"))
    #expect(reopened.pendingCount == 0)
    #expect(reopened.replica.document == peer.document)
  }

  /// A peer holding later dots of this id: the fresh id is taken before the call
  /// returns, and its identity record is durable by then (on the caller's thread, after
  /// a flush), while the acknowledgement's own save still waits at the gate: a power
  /// cut right after the call reopens with the fresh id.
  @Test func aFreshIDIsDurableBeforeTheCallReturns() throws {
    let disk = MemoryFileSystem()
    let files = AcknowledgementGatedFileSystem(disk)
    let owner = try Self.owner(files)
    let old = owner.id
    var beyond = owner.replica.context
    beyond.insert(Dot(replica: old, counter: 10))

    try files.ownerCall { try owner.recordAcknowledgement(beyond, from: "relay") }
    #expect(owner.id != old)
    #expect(owner.identityChanges.last == .peerHoldsLaterDots)
    #expect(files.ownerOperations.contains { $0.hasSuffix("/identity") })
    #expect(!files.ownerOperations.contains { $0.contains(DocumentStore.acknowledgementsName) })
    #expect(disk.bytes(directory + "/" + DocumentStore.acknowledgementsName) == nil)

    disk.crash()
    let reopened = try DocumentStore(directory: directory, configuration: configuration(disk))
    #expect(reopened.replica.id == owner.id)
    #expect(reopened.recovery.identityChange == nil)
    #expect(reopened.replica.document.text(of: "body", in: note) == "abc")
    // The old store's save, let through now, lands after the test's checks.
    files.gate.signal()
    owner.store.backgroundSync.wait()
  }

  /// A failed background save is reported in ``DeviceReplica/lastError`` on a later call
  /// (with a ``DeviceReplica/Event/storeFailed(_:)``); ``DeviceReplica/flush()`` retries
  /// it on the caller's thread (after the commits) and throws while it fails, and clears
  /// the error once it succeeds.
  @Test func aFailedSaveIsReportedAndRetriedByFlush() throws {
    let disk = MemoryFileSystem()
    let files = AcknowledgementGatedFileSystem(disk)
    let owner = try Self.owner(files)
    let relay = owner.replica.context
    files.gate.signal()
    files.failsAcknowledgements = true
    try owner.recordAcknowledgement(relay, from: "relay")
    #expect(owner.pendingCount == 0)
    owner.store.backgroundSync.wait()
    owner.syncIfDue()
    #expect(owner.lastError != nil)
    // The failing file never keeps an edit from becoming durable, nor a peer holding
    // later dots of this id from making the store take a fresh one.
    let durable = owner.durableCommits
    owner.transact { $0.insertText("d", at: 3, in: "body", of: note) }
    #expect(throws: StoreError.self) { try owner.flush() }
    #expect(owner.durableCommits == durable + 1)
    let old = owner.id
    var beyond = owner.replica.context
    beyond.insert(Dot(replica: old, counter: 10))
    try owner.recordAcknowledgement(beyond, from: "backup")
    #expect(owner.id != old)

    files.failsAcknowledgements = false
    try owner.flush()
    #expect(owner.lastError == nil)
    disk.crash()
    let reopened = try DeviceReplica(directory: directory, configuration: Self.settings(disk))
    #expect(reopened.acknowledgedContext(of: "relay") == relay)
    #expect(reopened.acknowledgedContext(of: "backup") == beyond)
    #expect(reopened.replica.document.text(of: "body", in: note) == "abcd")
    #expect(reopened.id == owner.id)
  }
}
