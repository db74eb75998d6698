#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The few file operations a ``DocumentStore`` makes, behind a protocol so that tests can
/// fail each write, sync and rename in turn, or drop what was never synced (a simulated
/// power cut).
///
/// Paths are absolute strings (``DocumentStore`` resolves a relative directory against
/// the current directory before it calls any). Every operation either succeeds or throws a
/// ``StoreFileError``; none traps.
public protocol StoreFileSystem: Sendable {
  /// The names in `directory`; an empty list if it does not exist.
  func contents(ofDirectory directory: String) throws -> [String]
  /// Creates `directory` (and its parents) if missing.
  func createDirectory(_ directory: String) throws
  /// The whole content of `path`, or `nil` if there is no such file.
  func read(_ path: String) throws -> [UInt8]?
  /// Appends `bytes` to `path`, creating the file if missing (not synced).
  func append(_ bytes: [UInt8], to path: String) throws
  /// Opens `path` for appending, creating it if missing, and keeps it open until the
  /// handle is closed: a store appends each sync's records through one handle instead of
  /// opening the log for each write and each sync. The handle keeps naming the file it
  /// opened, even after a rename or removal of `path`.
  func openForAppending(_ path: String) throws -> any StoreAppendHandle
  /// Creates or replaces `path` with `bytes` (not synced).
  func write(_ bytes: [UInt8], to path: String) throws
  /// Makes `path`'s content durable (`fsync`).
  func sync(_ path: String) throws
  /// Makes `directory`'s entries (creations, renames, removals) durable.
  func syncDirectory(_ directory: String) throws
  /// Atomically replaces `destination` with `source`.
  func rename(_ source: String, to destination: String) throws
  /// Removes `path`; no error if it is already gone.
  func remove(_ path: String) throws
  /// Cuts `path` to its first `length` bytes.
  func truncate(_ path: String, to length: Int) throws
  /// A number that names the file itself rather than its path: a hash of its device,
  /// inode number and, where the system records it, birth time. A copy or a restored
  /// backup gets another one, even when the file system hands the restored file an old
  /// inode number back; a rename keeps it. `nil` if there is no such file.
  func fileIdentity(_ path: String) throws -> UInt64?
}

/// A file held open for appending (``StoreFileSystem/openForAppending(_:)``).
///
/// One sync at a time uses a handle (the store hands it from sync to sync), so its
/// methods need no lock of their own.
public protocol StoreAppendHandle: AnyObject, Sendable {
  /// Appends `bytes` at the end of the file (not synced).
  func append(_ bytes: [UInt8]) throws
  /// Makes the file's content durable (`fsync`).
  func sync() throws
  /// Closes the file; later calls throw. Closing twice is harmless.
  func close()
}

extension StoreFileSystem {
  /// A handle that appends and syncs through the path-based operations, for a file
  /// system that holds nothing open.
  public func openForAppending(_ path: String) throws -> any StoreAppendHandle {
    PathAppendHandle(fileSystem: self, path: path)
  }
}

/// Appends and syncs by path: the default ``StoreAppendHandle``.
final class PathAppendHandle: StoreAppendHandle {
  let fileSystem: any StoreFileSystem
  let path: String
  init(fileSystem: any StoreFileSystem, path: String) {
    self.fileSystem = fileSystem
    self.path = path
  }
  func append(_ bytes: [UInt8]) throws { try fileSystem.append(bytes, to: path) }
  func sync() throws { try fileSystem.sync(path) }
  func close() {}
}

/// A file operation that failed, with the operation, the path and `errno`.
public struct StoreFileError: Error, Equatable, Sendable, CustomStringConvertible {
  /// The operation that failed: `open`, `read`, `write`, `fsync`, `rename`, …
  public var operation: String
  /// The file or directory it named.
  public var path: String
  /// The system's error number (0 when a test injected the failure).
  public var code: Int32

  public init(operation: String, path: String, code: Int32) {
    self.operation = operation
    self.path = path
    self.code = code
  }

  public var description: String {
    guard code != 0, let reason = strerror(code) else {
      return "\(operation) \(path) failed (errno \(code))"
    }
    return "\(operation) \(path) failed: \(String(cString: reason)) (errno \(code))"
  }
}

/// The operating system's files, through the C library.
public struct POSIXFileSystem: StoreFileSystem {
  public init() {}

  public func contents(ofDirectory directory: String) throws -> [String] {
    guard let handle = opendir(directory) else {
      if errno == ENOENT { return [] }
      throw StoreFileError(operation: "opendir", path: directory, code: errno)
    }
    defer { closedir(handle) }
    var names: [String] = []
    while let entry = readdir(handle) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
  }

  public func createDirectory(_ directory: String) throws {
    var path = ""
    for component in directory.split(separator: "/") {
      path += "/" + component
      if mkdir(path, 0o755) != 0 && errno != EEXIST {
        throw StoreFileError(operation: "mkdir", path: path, code: errno)
      }
    }
  }

  public func read(_ path: String) throws -> [UInt8]? {
    let descriptor = open(path, O_RDONLY)
    if descriptor < 0 {
      if errno == ENOENT { return nil }
      throw StoreFileError(operation: "open", path: path, code: errno)
    }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let count = chunk.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
      if count < 0 {
        if errno == EINTR { continue }
        throw StoreFileError(operation: "read", path: path, code: errno)
      }
      if count == 0 { return bytes }
      bytes.append(contentsOf: chunk[..<count])
    }
  }

  public func append(_ bytes: [UInt8], to path: String) throws {
    try withDescriptor(path, O_WRONLY | O_CREAT | O_APPEND) { try writeAll(bytes, $0, path) }
  }

  public func write(_ bytes: [UInt8], to path: String) throws {
    try withDescriptor(path, O_WRONLY | O_CREAT | O_TRUNC) { try writeAll(bytes, $0, path) }
  }

  public func openForAppending(_ path: String) throws -> any StoreAppendHandle {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    if descriptor < 0 { throw StoreFileError(operation: "open", path: path, code: errno) }
    return POSIXAppendHandle(descriptor: descriptor, path: path)
  }

  public func sync(_ path: String) throws {
    try withDescriptor(path, O_RDONLY) { descriptor in
      if fsync(descriptor) != 0 {
        throw StoreFileError(operation: "fsync", path: path, code: errno)
      }
    }
  }

  public func syncDirectory(_ directory: String) throws {
    try withDescriptor(directory, O_RDONLY | O_DIRECTORY) { descriptor in
      if fsync(descriptor) != 0 {
        throw StoreFileError(operation: "fsync", path: directory, code: errno)
      }
    }
  }

  public func rename(_ source: String, to destination: String) throws {
    if systemRename(source, destination) != 0 {
      throw StoreFileError(operation: "rename", path: source, code: errno)
    }
  }

  public func remove(_ path: String) throws {
    if unlink(path) != 0 && errno != ENOENT {
      throw StoreFileError(operation: "unlink", path: path, code: errno)
    }
  }

  public func truncate(_ path: String, to length: Int) throws {
    if systemTruncate(path, off_t(length)) != 0 {
      throw StoreFileError(operation: "truncate", path: path, code: errno)
    }
  }

  public func fileIdentity(_ path: String) throws -> UInt64? {
    var status = stat()
    if stat(path, &status) != 0 {
      if errno == ENOENT { return nil }
      throw StoreFileError(operation: "stat", path: path, code: errno)
    }
    // Equal files always give equal numbers. Inode numbers are reused once a file is
    // removed, so a restore can hand the identity file its old number back: the birth
    // time (which a rename keeps and a new file does not) tells them apart where the
    // system has one; elsewhere the device and inode alone.
    var words = [
      UInt64(truncatingIfNeeded: status.st_dev), UInt64(truncatingIfNeeded: status.st_ino),
    ]
    if let birth = birthTime(path, status) { words += [birth.seconds, birth.nanoseconds] }
    return fingerprintHash(words)
  }

  /// The birth time of `path`, if the system and file system record one.
  private func birthTime(_ path: String, _ status: stat) -> (seconds: UInt64, nanoseconds: UInt64)?
  {
    #if canImport(Darwin)
      return (
        UInt64(truncatingIfNeeded: status.st_birthtimespec.tv_sec),
        UInt64(truncatingIfNeeded: status.st_birthtimespec.tv_nsec)
      )
    #elseif canImport(Glibc)
      return linuxBirthTime(path)
    #else
      return nil
    #endif
  }

  private func withDescriptor<Result>(
    _ path: String, _ flags: Int32, _ body: (Int32) throws -> Result
  ) throws -> Result {
    let descriptor = open(path, flags | O_CLOEXEC, 0o644)
    if descriptor < 0 { throw StoreFileError(operation: "open", path: path, code: errno) }
    defer { close(descriptor) }
    return try body(descriptor)
  }

  fileprivate func writeAll(_ bytes: [UInt8], _ descriptor: Int32, _ path: String) throws {
    try bytes.withUnsafeBytes { raw in
      guard let base = raw.baseAddress else { return }
      var offset = 0
      while offset < raw.count {
        let written = systemWrite(descriptor, base + offset, raw.count - offset)
        if written < 0 {
          if errno == EINTR { continue }
          throw StoreFileError(operation: "write", path: path, code: errno)
        }
        offset += written
      }
    }
  }
}

/// A file descriptor opened with `O_APPEND`, closed by ``close()`` or when the handle goes.
///
/// `@unchecked Sendable`: one sync at a time uses it (``StoreAppendHandle``); `descriptor`
/// changes only in `close()`, which the store calls once no sync runs.
final class POSIXAppendHandle: StoreAppendHandle, @unchecked Sendable {
  private var descriptor: Int32
  let path: String

  init(descriptor: Int32, path: String) {
    self.descriptor = descriptor
    self.path = path
  }

  deinit { close() }

  func append(_ bytes: [UInt8]) throws {
    guard descriptor >= 0 else { throw StoreFileError(operation: "write", path: path, code: EBADF) }
    try POSIXFileSystem().writeAll(bytes, descriptor, path)
  }

  func sync() throws {
    guard descriptor >= 0 else { throw StoreFileError(operation: "fsync", path: path, code: EBADF) }
    if fsync(descriptor) != 0 { throw StoreFileError(operation: "fsync", path: path, code: errno) }
  }

  func close() {
    guard descriptor >= 0 else { return }
    systemClose(descriptor)
    descriptor = -1
  }
}

// The C functions whose names the protocol's methods shadow inside the type.
private func systemClose(_ descriptor: Int32) {
  // Nothing to do about a failed close: every byte that counts was synced before.
  _ = close(descriptor)
}
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int)
  -> Int
{
  read(descriptor, buffer, count)
}
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
  write(descriptor, buffer, count)
}
private func systemRename(_ source: String, _ destination: String) -> Int32 {
  rename(source, destination)
}
private func systemTruncate(_ path: String, _ length: off_t) -> Int32 {
  truncate(path, length)
}

/// A hash of `words` (FNV-1a over their bytes, then a final mix): the fingerprint of a
/// file, the same for the same words on every run.
func fingerprintHash(_ words: [UInt64]) -> UInt64 {
  var hash: UInt64 = 0xCBF2_9CE4_8422_2325
  for word in words {
    for index in 0..<8 {
      hash ^= (word >> (index * 8)) & 0xFF
      hash = hash &* 0x0000_0100_0000_01B3
    }
  }
  hash ^= hash >> 33
  hash = hash &* 0xFF51_AFD7_ED55_8CCD
  return hash ^ hash >> 33
}

#if canImport(Glibc)
  /// `statx(2)`, found at run time: Glibc's module does not export it (it is declared
  /// only for `_GNU_SOURCE`), and a C library older than 2.28 lacks it.
  private typealias StatxFunction =
    @convention(c) (Int32, UnsafePointer<CChar>, Int32, UInt32, UnsafeMutableRawPointer) -> Int32
  private let statxFunction: StatxFunction? = {
    // `dlsym(RTLD_DEFAULT, …)`: RTLD_DEFAULT is the null handle on Linux.
    guard let symbol = dlsym(nil, "statx") else { return nil }
    return unsafeBitCast(symbol, to: StatxFunction.self)
  }()

  /// The birth time `statx` reports for `path`, or `nil` where the kernel or the file
  /// system keeps none. Offsets are those of the kernel's `struct statx` (a stable ABI):
  /// `stx_mask` at 0, `stx_btime` (seconds, then nanoseconds) at 80, 256 bytes in all.
  func linuxBirthTime(_ path: String) -> (seconds: UInt64, nanoseconds: UInt64)? {
    guard let statx = statxFunction else { return nil }
    let birthMask: UInt32 = 0x800  // STATX_BTIME
    let currentDirectory: Int32 = -100  // AT_FDCWD
    return withUnsafeTemporaryAllocation(byteCount: 256, alignment: 8) { buffer in
      guard let base = buffer.baseAddress else { return nil }
      base.initializeMemory(as: UInt8.self, repeating: 0, count: 256)
      guard statx(currentDirectory, path, 0, birthMask, base) == 0,
        base.load(fromByteOffset: 0, as: UInt32.self) & birthMask != 0
      else { return nil }
      return (
        UInt64(bitPattern: base.load(fromByteOffset: 80, as: Int64.self)),
        UInt64(base.load(fromByteOffset: 88, as: UInt32.self))
      )
    }
  }
#endif
