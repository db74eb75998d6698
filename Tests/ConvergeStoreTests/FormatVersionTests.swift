import Converge
import Testing

@testable import ConvergeStore

/// Files written by a build of another format version are refused with a typed error
/// that names the version, and left exactly as they were: never taken for damage, cut,
/// or passed over for an older snapshot.
@Suite struct FormatVersionTests {
  /// `message` re-sealed as format version `version` (its checksum recomputed), as a
  /// build of that version would have written it.
  static func resealed(_ message: [UInt8], asVersion version: UInt8) -> [UInt8] {
    var bytes = message
    bytes[Envelope.magic.count] = version
    let checksum = CRC32C.checksum(bytes.dropLast(4))
    for index in 0..<4 {
      bytes[bytes.count - 4 + index] = UInt8(truncatingIfNeeded: checksum >> (index * 8))
    }
    return bytes
  }

  /// A store with a snapshot and a log, written and closed, and its file system.
  func writtenStore() throws -> MemoryFileSystem {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("first", into: store)
    try store.compact()
    type(" second", into: store)
    try store.close()
    return fileSystem
  }

  func snapshot(_ fileSystem: MemoryFileSystem) throws -> String {
    let names = try fileSystem.contents(ofDirectory: directory)
    return try #require(names.first { $0.hasPrefix("snapshot-") })
  }

  @Test func aSnapshotOfVersionOneIsRefusedByName() throws {
    let fileSystem = try writtenStore()
    let name = try snapshot(fileSystem)
    let path = directory + "/" + name
    let record = try #require(RecordFrame.records(in: fileSystem.bytes(path) ?? []).records.first)
    fileSystem.setBytes(RecordFrame.framed(Self.resealed(Array(record), asVersion: 1)), at: path)
    let before = try fileSystem.contents(ofDirectory: directory).map {
      fileSystem.bytes(directory + "/" + $0)
    }

    #expect(
      throws: StoreError.unsupportedFormatVersion(
        file: name, found: 1, supported: Envelope.formatVersion)
    ) {
      try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    }
    let after = try fileSystem.contents(ofDirectory: directory).map {
      fileSystem.bytes(directory + "/" + $0)
    }
    #expect(before == after, "nothing was changed")
  }

  @Test func aLogRecordOfVersionOneIsRefusedAndNotCut() throws {
    let fileSystem = try writtenStore()
    let names = try fileSystem.contents(ofDirectory: directory)
    let log = try #require(names.last { $0.hasPrefix("log-") })
    let path = directory + "/" + log
    let (records, _) = RecordFrame.records(in: fileSystem.bytes(path) ?? [])
    #expect(records.count > 1)
    // The last record as another version wrote it, after records of this version.
    var bytes = RecordFrame.framed(records.dropLast().map(Array.init))
    RecordFrame.append(Self.resealed(Array(records[records.count - 1]), asVersion: 1), to: &bytes)
    fileSystem.setBytes(bytes, at: path)

    #expect(
      throws: StoreError.unsupportedFormatVersion(
        file: log, found: 1, supported: Envelope.formatVersion)
    ) {
      try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    }
    #expect(fileSystem.bytes(path) == bytes, "the log was not cut")
  }

  @Test func damageIsStillCutNotRefused() throws {
    let fileSystem = try writtenStore()
    let names = try fileSystem.contents(ofDirectory: directory)
    let log = try #require(names.last { $0.hasPrefix("log-") })
    let path = directory + "/" + log
    var bytes = fileSystem.bytes(path) ?? []
    bytes.append(contentsOf: [1, 2, 3])
    fileSystem.setBytes(bytes, at: path)
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    #expect(store.recovery.cutTails.count == 1)
    #expect(store.replica.document.keys.count == 1)
  }
}
