#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The few file operations a ``DocumentStore`` makes, behind a protocol so that tests can
/// fail each write, sync and rename in turn, or drop what was never synced (a simulated
/// power cut).
///
/// Paths are absolute strings. Every operation either succeeds or throws a
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
  /// A number that names the file itself rather than its path (device and inode): a copy
  /// or a restored backup gets another one. `nil` if there is no such file.
  func fileIdentity(_ path: String) throws -> UInt64?
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

  public var description: String { "\(operation) \(path) failed (errno \(code))" }
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
    // Mixes device and inode; equal files always give equal numbers.
    return UInt64(truncatingIfNeeded: status.st_dev) &* 0x9E37_79B9_7F4A_7C15
      ^ UInt64(truncatingIfNeeded: status.st_ino)
  }

  private func withDescriptor<Result>(
    _ path: String, _ flags: Int32, _ body: (Int32) throws -> Result
  ) throws -> Result {
    let descriptor = open(path, flags | O_CLOEXEC, 0o644)
    if descriptor < 0 { throw StoreFileError(operation: "open", path: path, code: errno) }
    defer { close(descriptor) }
    return try body(descriptor)
  }

  private func writeAll(_ bytes: [UInt8], _ descriptor: Int32, _ path: String) throws {
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

// The C functions whose names the protocol's methods shadow inside the type.
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
