import Converge
import Foundation
import Testing

@testable import ConvergeStore

/// Files that count the handles a store opens on its logs and the appends it makes by
/// path, around a ``MemoryFileSystem``.
final class HandleCountingFileSystem: ForwardingFileSystem, @unchecked Sendable {
  // `@unchecked`: `base` locks its own state; the counters are read after the store's
  // syncs finished on the test's thread.
  let base: MemoryFileSystem
  private let lock = NSLock()
  private var handles: [any StoreAppendHandle] = []
  private var pathAppends = 0

  init(_ base: MemoryFileSystem) { self.base = base }

  var opened: Int { lock.withLock { handles.count } }
  var appendsByPath: Int { lock.withLock { pathAppends } }
  /// Whether every handle opened so far was closed (an append through it throws).
  var allClosed: Bool {
    lock.withLock { handles }.allSatisfy { handle in (try? handle.append([])) == nil }
  }

  func openForAppending(_ path: String) throws -> any StoreAppendHandle {
    let handle = try base.openForAppending(path)
    lock.withLock { handles.append(handle) }
    return handle
  }
  func append(_ bytes: [UInt8], to path: String) throws {
    lock.withLock { pathAppends += 1 }
    try base.append(bytes, to: path)
  }
}

@Suite struct HeldLogTests {
  static func settings(_ fileSystem: any StoreFileSystem) -> DocumentStore.Configuration {
    var settings = DocumentStore.Configuration()
    settings.fileSystem = fileSystem
    settings.syncInterval = .zero
    settings.syncInBackground = false
    settings.wallClock = .fixed(0)
    settings.freshID = { ReplicaID(rawValue: 7) }
    return settings
  }

  /// A store that syncs every commit opens its log once per generation, appends through
  /// that handle only (one write and one sync per commit), and closes it at a
  /// compaction and at close.
  @Test func theLogIsOpenedOncePerGeneration() throws {
    let disk = MemoryFileSystem()
    let counting = HandleCountingFileSystem(disk)
    let store = try DocumentStore(directory: "/held", configuration: Self.settings(counting))
    disk.resetCounts()
    for index in 0..<10 {
      store.transact { $0.setValue(.int(Int64(index)), for: "n\(index)", of: note) }
    }
    #expect(store.durableCommits == 10)
    #expect(counting.opened == 1)
    #expect(disk.calls(.write) == 10 && disk.calls(.sync) == 10)
    try store.compact()
    #expect(counting.allClosed)
    for index in 10..<15 {
      store.transact { $0.setValue(.int(Int64(index)), for: "n\(index)", of: note) }
    }
    #expect(counting.opened == 2)
    #expect(counting.appendsByPath == 0)
    try store.close()
    #expect(counting.allClosed)
    let reopened = try DocumentStore(directory: "/held", configuration: Self.settings(disk))
    #expect(reopened.replica.document.keys.count == 1)
    #expect(reopened.replica.document.value(of: "n14", in: note) == .int(14))
    #expect(reopened.recovery.replayedRecords == 5)
  }

  /// After a failed append the handle is dropped: the next sync starts a new generation
  /// and its log gets a handle of its own.
  @Test func aFailedAppendDropsTheHandle() throws {
    let disk = MemoryFileSystem()
    let counting = HandleCountingFileSystem(disk)
    let store = try DocumentStore(directory: "/held", configuration: Self.settings(counting))
    store.transact { $0.setValue(.int(1), for: "a", of: note) }
    disk.fail(.write, at: 0)
    store.transact { $0.setValue(.int(2), for: "b", of: note) }
    #expect(store.lastError != nil)
    #expect(counting.allClosed)
    try store.flush()  // a compaction into a new generation
    store.transact { $0.setValue(.int(3), for: "c", of: note) }
    #expect(store.lastError == nil && store.durableCommits == 3)
    #expect(counting.opened == 2)
    try store.close()
    let reopened = try DocumentStore(directory: "/held", configuration: Self.settings(disk))
    #expect(reopened.replica.document.value(of: "c", in: note) == .int(3))
    #expect(reopened.replica.document.value(of: "b", in: note) == .int(2))
  }

  /// A MemoryFileSystem handle appends to the file it opened: unsynced bytes are lost or
  /// torn by a power cut, the handle of a process that died only throws, and failures are
  /// injected and counted as for ``MemoryFileSystem/append(_:to:)``.
  @Test func aMemoryHandleModelsAPowerCut() throws {
    let disk = MemoryFileSystem()
    let handle = try disk.openForAppending("/d/log")
    try handle.append(Array("abc".utf8))
    try handle.sync()
    try handle.append(Array("defg".utf8))
    #expect(disk.calls(.write) == 2 && disk.calls(.sync) == 1)
    // A rename keeps the file the handle names.
    try disk.rename("/d/log", to: "/d/moved")
    try handle.append(Array("h".utf8))
    #expect(disk.bytes("/d/moved") == Array("abcdefgh".utf8))
    try disk.rename("/d/moved", to: "/d/log")
    try disk.syncDirectory("/d")
    disk.crash(tearing: { _ in 2 })
    #expect(disk.bytes("/d/log") == Array("abcde".utf8))
    #expect(throws: StoreFileError.self) { try handle.append(Array("x".utf8)) }
    #expect(throws: StoreFileError.self) { try handle.sync() }

    let second = try disk.openForAppending("/d/log")
    disk.fail(.sync, at: 0)
    try second.append(Array("x".utf8))
    #expect(throws: StoreFileError.self) { try second.sync() }
    try second.sync()
    second.close()
    #expect(throws: StoreFileError.self) { try second.append(Array("y".utf8)) }
    disk.crash()
    #expect(disk.bytes("/d/log") == Array("abcdex".utf8))
  }
}
