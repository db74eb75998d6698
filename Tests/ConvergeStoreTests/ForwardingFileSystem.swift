import ConvergeStore

/// A test's file system around a ``MemoryFileSystem``: every operation the test's type
/// does not define itself goes to `base` unchanged, so a type that gates or counts one
/// operation says only that. (`openForAppending` is left to each type: without one, the
/// store's path-based handle goes through the type's own `append` and `sync`.)
protocol ForwardingFileSystem: StoreFileSystem {
  var base: MemoryFileSystem { get }
}

extension ForwardingFileSystem {
  func contents(ofDirectory directory: String) throws -> [String] {
    try base.contents(ofDirectory: directory)
  }
  func createDirectory(_ directory: String) throws { try base.createDirectory(directory) }
  func read(_ path: String) throws -> [UInt8]? { try base.read(path) }
  func append(_ bytes: [UInt8], to path: String) throws { try base.append(bytes, to: path) }
  func write(_ bytes: [UInt8], to path: String) throws { try base.write(bytes, to: path) }
  func sync(_ path: String) throws { try base.sync(path) }
  func syncDirectory(_ directory: String) throws { try base.syncDirectory(directory) }
  func rename(_ source: String, to destination: String) throws {
    try base.rename(source, to: destination)
  }
  func remove(_ path: String) throws { try base.remove(path) }
  func truncate(_ path: String, to length: Int) throws { try base.truncate(path, to: length) }
  func fileIdentity(_ path: String) throws -> UInt64? { try base.fileIdentity(path) }
}
