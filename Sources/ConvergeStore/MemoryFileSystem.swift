import Foundation  // NSLock

/// Files in memory that model what a power cut keeps: a file's content is durable only
/// up to its last `sync`, a directory's entries only up to its last `syncDirectory`.
/// ``crash(tearing:)`` drops the rest (optionally keeping a torn prefix of unsynced
/// appends). Any operation kind can be made to fail at its n-th call.
///
/// The store's tests and the simulator's devices use it: a device killed mid-run loses
/// exactly what a real disk would lose, without touching the real one.
///
/// ```swift
/// let disk = MemoryFileSystem()
/// var configuration = DocumentStore.Configuration()
/// configuration.fileSystem = disk
/// configuration.syncInterval = .seconds(60)  // nothing syncs before flush()
/// let store = try DocumentStore(directory: "/notes", configuration: configuration)
/// store.transact { $0.setValue(.string("Groceries"), for: "title", of: note) }
/// disk.crash()  // the edit was never synced: it is gone, as after a power cut
/// ```
///
/// Appending and syncing cost O(1) beyond the bytes written: a file remembers how much
/// of it is durable rather than keeping a copy, and copies its durable content only when
/// it is rewritten or cut before its next sync.
///
/// `@unchecked Sendable`: every access to the state goes through `lock`.
public final class MemoryFileSystem: StoreFileSystem, @unchecked Sendable {
  /// The operations whose n-th call can be made to fail.
  public enum Operation: Hashable, CaseIterable, Sendable { case write, sync, rename }

  private final class File {
    /// The inode number, which a file made after a restore may get back.
    let identity: UInt64
    /// The birth time: new for every file made, kept by a rename.
    let birth: UInt64
    var data: [UInt8] = []
    /// How many leading bytes of `data` are durable, while `data` only grew since.
    var durableCount = 0
    /// The durable content, kept only once `data` was rewritten or cut since its sync.
    var durableCopy: [UInt8]?
    init(identity: UInt64, birth: UInt64) {
      self.identity = identity
      self.birth = birth
    }

    /// What a power cut would keep of the file (its unsynced tail dropped).
    var durableContent: [UInt8] { durableCopy ?? Array(data.prefix(durableCount)) }

    /// Saves the durable content before `data` changes other than by appending.
    func preserveDurable() {
      if durableCopy == nil { durableCopy = Array(data.prefix(durableCount)) }
    }

    func sync() {
      durableCount = data.count
      durableCopy = nil
    }
  }

  private let lock = NSLock()
  private var entries: [String: File] = [:]
  private var durableEntries: [String: File] = [:]
  private var nextIdentity: UInt64 = 1
  private var nextBirth: UInt64 = 1
  private var counts: [Operation: Int] = [:]
  private var failures: [Operation: Int] = [:]
  private var anyCount = 0
  private var anyFailure = Int.max
  /// Counts the power cuts: a handle opened before one belongs to a process that died.
  private var crashes = 0

  public init() {}

  /// Makes the `index`-th call (0-based, counted from now) of `operation` fail.
  public func fail(_ operation: Operation, at index: Int) {
    lock.withLock {
      counts[operation] = 0
      failures[operation] = index
    }
  }

  /// Makes the `index`-th write, sync or rename (0-based, from now) fail, and every
  /// operation after it too: a process that died there.
  public func failAnyOperation(at index: Int) {
    lock.withLock {
      anyCount = 0
      anyFailure = index
    }
  }

  /// The calls of each kind since the counters were last reset.
  public func calls(_ operation: Operation) -> Int { lock.withLock { counts[operation] ?? 0 } }

  /// Resets the counters of ``calls(_:)``.
  public func resetCounts() { lock.withLock { counts = [:] } }

  /// A power cut: only synced content and synced directory entries survive; `tearing`
  /// keeps that many extra bytes of each file's unsynced appended tail (it is given the
  /// tail's length).
  public func crash(tearing: (Int) -> Int = { _ in 0 }) {
    lock.withLock {
      entries = durableEntries
      var unique: [ObjectIdentifier: File] = [:]
      for file in entries.values { unique[ObjectIdentifier(file)] = file }
      for file in unique.values {
        if let copy = file.durableCopy {
          file.data = copy
        } else if file.data.count > file.durableCount {
          let tail = file.data.count - file.durableCount
          let extra = Swift.max(0, Swift.min(tearing(tail), tail))
          file.data.removeLast(tail - extra)
        }
        file.sync()
      }
      failures = [:]
      anyFailure = .max
      crashes += 1
    }
  }

  /// Copies every file under `source` to `destination` as new files (new inodes), as a
  /// copy to another device or a restored backup would. Files already under
  /// `destination` are removed first. With `durableOnly`, the copy holds what a power cut
  /// would keep (a crash-consistent backup, such as a file-system snapshot). With
  /// `inPlace`, a copied file keeps the identity (inode number and birth time) of the
  /// file it replaces, as a file-system snapshot rolled back in place does. With
  /// `reusingInodeNumbers`, it keeps only the inode number, with a new birth time: a
  /// restore of a backup onto a file system that hands freed inode numbers back.
  public func copyDirectory(
    _ source: String, to destination: String, durableOnly: Bool = false, inPlace: Bool = false,
    reusingInodeNumbers: Bool = false
  ) {
    lock.withLock {
      let sources = durableOnly ? durableEntries : entries
      var replaced: [String: File] = [:]
      for (path, file) in entries where path.hasPrefix(destination + "/") {
        replaced[path] = file
        entries[path] = nil
        durableEntries[path] = nil
      }
      for (path, file) in sources where path.hasPrefix(source + "/") {
        let target = destination + path.dropFirst(source.count)
        let old = inPlace || reusingInodeNumbers ? replaced[target] : nil
        let copy = File(
          identity: old?.identity ?? nextIdentity,
          birth: inPlace ? old?.birth ?? nextBirth : nextBirth)
        if old == nil { nextIdentity += 1 }
        nextBirth += 1
        copy.data = durableOnly ? file.durableContent : file.data
        copy.sync()
        entries[target] = copy
        durableEntries[target] = copy
      }
    }
  }

  /// The current content of `path` (durable or not), for damage tests.
  public func bytes(_ path: String) -> [UInt8]? { lock.withLock { entries[path]?.data } }

  /// Replaces the content of `path`, durably, as damage on the disk would.
  public func setBytes(_ bytes: [UInt8], at path: String) {
    lock.withLock {
      guard let file = entries[path] else { return }
      file.data = bytes
      file.sync()
    }
  }

  private func count(_ operation: Operation, _ path: String) throws {
    anyCount += 1
    if anyCount > anyFailure {
      throw StoreFileError(operation: "\(operation)", path: path, code: 0)
    }
    let index = counts[operation, default: 0]
    counts[operation] = index + 1
    if failures[operation] == index {
      failures[operation] = nil
      throw StoreFileError(operation: "\(operation)", path: path, code: 0)
    }
  }

  private func file(_ path: String) -> File {
    if let file = entries[path] { return file }
    let file = File(identity: nextIdentity, birth: nextBirth)
    nextIdentity += 1
    nextBirth += 1
    entries[path] = file
    return file
  }

  public func contents(ofDirectory directory: String) throws -> [String] {
    lock.withLock {
      entries.keys.filter { $0.hasPrefix(directory + "/") }
        .map { String($0.dropFirst(directory.count + 1)) }.sorted()
    }
  }

  public func createDirectory(_ directory: String) throws {}

  public func read(_ path: String) throws -> [UInt8]? { lock.withLock { entries[path]?.data } }

  public func append(_ bytes: [UInt8], to path: String) throws {
    try lock.withLock {
      try count(.write, path)
      file(path).data.append(contentsOf: bytes)
    }
  }

  /// A handle on the file at `path` (made if missing): it appends to that file, counted
  /// and failed like ``append(_:to:)`` and ``sync(_:)``, even after the path names
  /// another file or none; after a power cut (``crash(tearing:)``) it only throws.
  public func openForAppending(_ path: String) throws -> any StoreAppendHandle {
    lock.withLock { Handle(fileSystem: self, file: file(path), path: path, crashes: crashes) }
  }

  /// A file held open: the file itself, not its path.
  ///
  /// `@unchecked Sendable`: its state is read and written under the file system's lock.
  private final class Handle: StoreAppendHandle, @unchecked Sendable {
    let fileSystem: MemoryFileSystem
    let file: File
    let path: String
    let crashes: Int
    var isClosed = false

    init(fileSystem: MemoryFileSystem, file: File, path: String, crashes: Int) {
      self.fileSystem = fileSystem
      self.file = file
      self.path = path
      self.crashes = crashes
    }

    func append(_ bytes: [UInt8]) throws {
      try fileSystem.lock.withLock {
        try fileSystem.count(.write, path)
        try checkOpen("write")
        file.data.append(contentsOf: bytes)
      }
    }

    func sync() throws {
      try fileSystem.lock.withLock {
        try fileSystem.count(.sync, path)
        try checkOpen("fsync")
        file.sync()
      }
    }

    func close() { fileSystem.lock.withLock { isClosed = true } }

    private func checkOpen(_ operation: String) throws {
      guard !isClosed, crashes == fileSystem.crashes else {
        throw StoreFileError(operation: operation, path: path, code: 9)  // EBADF
      }
    }
  }

  public func write(_ bytes: [UInt8], to path: String) throws {
    try lock.withLock {
      try count(.write, path)
      let file = file(path)
      file.preserveDurable()
      file.data = bytes
    }
  }

  public func sync(_ path: String) throws {
    try lock.withLock {
      try count(.sync, path)
      guard let file = entries[path] else {
        throw StoreFileError(operation: "fsync", path: path, code: 2)
      }
      file.sync()
    }
  }

  public func syncDirectory(_ directory: String) throws {
    try lock.withLock {
      try count(.sync, directory)
      durableEntries = durableEntries.filter { !$0.key.hasPrefix(directory + "/") }
      for (path, file) in entries where path.hasPrefix(directory + "/") {
        durableEntries[path] = file
      }
    }
  }

  public func rename(_ source: String, to destination: String) throws {
    try lock.withLock {
      try count(.rename, source)
      guard let file = entries.removeValue(forKey: source) else {
        throw StoreFileError(operation: "rename", path: source, code: 2)
      }
      entries[destination] = file
    }
  }

  public func remove(_ path: String) throws {
    try lock.withLock {
      if anyCount >= anyFailure { throw StoreFileError(operation: "unlink", path: path, code: 0) }
      entries.removeValue(forKey: path)
    }
  }

  public func truncate(_ path: String, to length: Int) throws {
    lock.withLock {
      guard let file = entries[path], length < file.data.count else { return }
      if length < file.durableCount { file.preserveDurable() }
      file.data.removeLast(file.data.count - Swift.max(0, length))
    }
  }

  public func fileIdentity(_ path: String) throws -> UInt64? {
    lock.withLock { entries[path].map { fingerprintHash([$0.identity, $0.birth]) } }
  }
}
