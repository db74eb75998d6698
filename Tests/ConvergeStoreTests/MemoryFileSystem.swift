import ConvergeStore
import Foundation

/// Files in memory that model what a power cut keeps: a file's content is durable only
/// up to its last `sync`, a directory's entries only up to its last `syncDirectory`.
/// ``crash(tearing:)`` drops the rest (optionally keeping a torn prefix of unsynced
/// appends). Any operation kind can be made to fail at its n-th call.
///
/// `@unchecked Sendable`: every access to the state goes through `lock`.
final class MemoryFileSystem: StoreFileSystem, @unchecked Sendable {
  enum Operation: Hashable, CaseIterable { case write, sync, rename }

  private final class File {
    let identity: UInt64
    var data: [UInt8] = []
    var durable: [UInt8] = []
    init(identity: UInt64) { self.identity = identity }
  }

  private let lock = NSLock()
  private var entries: [String: File] = [:]
  private var durableEntries: [String: File] = [:]
  private var nextIdentity: UInt64 = 1
  private var counts: [Operation: Int] = [:]
  private var failures: [Operation: Int] = [:]
  private var anyCount = 0
  private var anyFailure = Int.max

  /// Makes the `index`-th call (0-based, counted from now) of `operation` fail.
  func fail(_ operation: Operation, at index: Int) {
    lock.withLock {
      counts[operation] = 0
      failures[operation] = index
    }
  }

  /// Makes the `index`-th write, sync or rename (0-based, from now) fail, and every
  /// operation after it too: a process that died there.
  func failAnyOperation(at index: Int) {
    lock.withLock {
      anyCount = 0
      anyFailure = index
    }
  }

  /// The calls of each kind since the counters were last reset.
  func calls(_ operation: Operation) -> Int { lock.withLock { counts[operation] ?? 0 } }

  func resetCounts() { lock.withLock { counts = [:] } }

  /// A power cut: only synced content and synced directory entries survive; `tearing`
  /// keeps that many extra bytes of each file's unsynced appended tail.
  func crash(tearing: (Int) -> Int = { _ in 0 }) {
    lock.withLock {
      entries = durableEntries
      var unique: [ObjectIdentifier: File] = [:]
      for file in entries.values { unique[ObjectIdentifier(file)] = file }
      for file in unique.values {
        if file.data.starts(with: file.durable) && file.data.count > file.durable.count {
          let extra = Swift.min(tearing(file.data.count - file.durable.count), file.data.count)
          file.data = Array(file.data.prefix(file.durable.count + extra))
        } else {
          file.data = file.durable
        }
        file.durable = file.data
      }
      failures = [:]
      anyFailure = .max
    }
  }

  /// Copies every file under `source` to `destination` as new files (new inodes), as a
  /// copy to another device or a restored backup would.
  func copyDirectory(_ source: String, to destination: String) {
    lock.withLock {
      for (path, file) in entries where path.hasPrefix(source + "/") {
        let copy = File(identity: nextIdentity)
        nextIdentity += 1
        copy.data = file.data
        copy.durable = file.data
        let target = destination + path.dropFirst(source.count)
        entries[target] = copy
        durableEntries[target] = copy
      }
    }
  }

  /// Raw access for damage tests.
  func bytes(_ path: String) -> [UInt8]? { lock.withLock { entries[path]?.data } }

  func setBytes(_ bytes: [UInt8], at path: String) {
    lock.withLock {
      entries[path]?.data = bytes
      entries[path]?.durable = bytes
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
    let file = File(identity: nextIdentity)
    nextIdentity += 1
    entries[path] = file
    return file
  }

  func contents(ofDirectory directory: String) throws -> [String] {
    lock.withLock {
      entries.keys.filter { $0.hasPrefix(directory + "/") }
        .map { String($0.dropFirst(directory.count + 1)) }.sorted()
    }
  }

  func createDirectory(_ directory: String) throws {}

  func read(_ path: String) throws -> [UInt8]? { lock.withLock { entries[path]?.data } }

  func append(_ bytes: [UInt8], to path: String) throws {
    try lock.withLock {
      try count(.write, path)
      file(path).data.append(contentsOf: bytes)
    }
  }

  func write(_ bytes: [UInt8], to path: String) throws {
    try lock.withLock {
      try count(.write, path)
      file(path).data = bytes
    }
  }

  func sync(_ path: String) throws {
    try lock.withLock {
      try count(.sync, path)
      guard let file = entries[path] else {
        throw StoreFileError(operation: "fsync", path: path, code: 2)
      }
      file.durable = file.data
    }
  }

  func syncDirectory(_ directory: String) throws {
    try lock.withLock {
      try count(.sync, directory)
      durableEntries = durableEntries.filter { !$0.key.hasPrefix(directory + "/") }
      for (path, file) in entries where path.hasPrefix(directory + "/") {
        durableEntries[path] = file
      }
    }
  }

  func rename(_ source: String, to destination: String) throws {
    try lock.withLock {
      try count(.rename, source)
      guard let file = entries.removeValue(forKey: source) else {
        throw StoreFileError(operation: "rename", path: source, code: 2)
      }
      entries[destination] = file
    }
  }

  func remove(_ path: String) throws {
    try lock.withLock {
      if anyCount >= anyFailure { throw StoreFileError(operation: "unlink", path: path, code: 0) }
      entries.removeValue(forKey: path)
    }
  }

  func truncate(_ path: String, to length: Int) throws {
    lock.withLock {
      if let file = entries[path] { file.data = Array(file.data.prefix(length)) }
    }
  }

  func fileIdentity(_ path: String) throws -> UInt64? { lock.withLock { entries[path]?.identity } }
}
