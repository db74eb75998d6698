import Converge
import ConvergeTestSupport
import Foundation
import Testing

@testable import ConvergeStore

/// Directories that lost or damaged files: opening reports every loss, keeps a copy of
/// what it cannot read, and never reuses a dot.
@Suite struct StoreLossTests {
  /// Writes `bytes` to `name` in the test directory, durably.
  static func put(_ bytes: [UInt8], _ name: String, on fileSystem: MemoryFileSystem) throws {
    let path = directory + "/" + name
    try fileSystem.write(bytes, to: path)
    try fileSystem.sync(path)
    try fileSystem.syncDirectory(directory)
  }

  /// Writes an identity record for `replica` whose fingerprint matches its file.
  static func putIdentity(
    _ replica: ReplicaID, provenCounter: UInt64, cleanShutdown: Bool,
    on fileSystem: MemoryFileSystem
  ) throws {
    let path = directory + "/identity"
    try fileSystem.write([], to: path)
    let identity = StoreIdentity(
      replica: replica, provenCounter: provenCounter, cleanShutdown: cleanShutdown,
      fingerprint: try fileSystem.fileIdentity(path) ?? 0)
    try put(identity.encoded, "identity", on: fileSystem)
  }

  /// The encoded deltas of typing `text` on `replica`, one per character.
  static func typed(_ text: String, on replica: inout Replica) -> [[UInt8]] {
    text.unicodeScalars.map { scalar in
      let end = replica.document.text(of: "body", in: note).unicodeScalars.count
      return replica.transact { $0.insertText(String(scalar), at: end, in: "body", of: note) }
        .delta.encoded()
    }
  }

  /// The newest log was lost (its records never reached the files read here), but the
  /// acknowledgements file records that the relay holds them: the store must not issue
  /// those dots again for other content.
  @Test func aSavedAcknowledgementOfLaterDotsForcesAFreshIDAtOpen() throws {
    let fileSystem = MemoryFileSystem()
    let id = ReplicaID(rawValue: 0xA11CE)
    var writer = Replica(id: id, wallClock: .fixed(0))
    let kept = Self.typed("abc", on: &writer)
    _ = Self.typed("def", on: &writer)
    try Self.put(RecordFrame.framed(kept), DocumentStore.logName(0), on: fileSystem)
    try Self.putIdentity(id, provenCounter: 0, cleanShutdown: false, on: fileSystem)
    try Self.put(
      DocumentStore.encodeAcknowledgements(["relay": writer.context]),
      DocumentStore.acknowledgementsName, on: fileSystem)

    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    #expect(store.replica.document.text(of: "body", in: note) == "abc")
    #expect(store.recovery.identityChange == .peerHoldsLaterDots)
    #expect(store.replica.id != id)
    type("X", into: store)
    // No dot of the old id beyond what it held is issued again.
    #expect(store.replica.context.counters(of: id).maximum == 3)
  }

  /// A store of two compactions with commits after each: generation 2 holds "abc" in its
  /// snapshot and "def" in its log.
  static func compactedStore(_ fileSystem: MemoryFileSystem) throws -> DocumentStore {
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("ab", into: store)
    try store.compact()
    type("c", into: store)
    try store.compact()
    type("def", into: store)
    try store.close()
    return store
  }

  static func reopen(_ fileSystem: MemoryFileSystem) throws -> DocumentStore {
    try DocumentStore(directory: directory, configuration: configuration(fileSystem))
  }

  @Test func aDeletedNewestSnapshotIsReportedAndTakesAFreshID() throws {
    let fileSystem = MemoryFileSystem()
    let store = try Self.compactedStore(fileSystem)
    try fileSystem.remove(directory + "/" + DocumentStore.snapshotName(2))
    let reopened = try Self.reopen(fileSystem)
    #expect(reopened.recovery.losses == [.missingSnapshot(generation: 2)])
    #expect(reopened.recovery.identityChange == .filesLost)
    #expect(reopened.replica.id != store.replica.id)
    // The log's insertions follow characters the lost snapshot held: none shows.
    #expect(reopened.replica.document.text(of: "body", in: note) == "")
    // Opening folded what it kept into a new generation: the next open finds no loss.
    try reopened.close()
    let again = try Self.reopen(fileSystem)
    #expect(again.recovery.losses.isEmpty && again.recovery.identityChange == nil)
    #expect(again.replica.document == reopened.replica.document)
  }

  @Test func aDeletedNewestLogIsReportedAndTakesAFreshID() throws {
    let fileSystem = MemoryFileSystem()
    let store = try Self.compactedStore(fileSystem)
    try fileSystem.remove(directory + "/" + DocumentStore.logName(2))
    let reopened = try Self.reopen(fileSystem)
    #expect(reopened.recovery.losses == [.missingLog(generation: 2)])
    #expect(reopened.recovery.identityChange == .filesLost)
    #expect(reopened.replica.id != store.replica.id)
    #expect(reopened.replica.document.text(of: "body", in: note) == "abc")
    try reopened.close()
    #expect(try Self.reopen(fileSystem).recovery.losses.isEmpty)
  }

  @Test func aDeletedFirstLogIsReported() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("abc", into: store)
    try store.close()
    try fileSystem.remove(directory + "/" + DocumentStore.logName(0))
    let reopened = try Self.reopen(fileSystem)
    #expect(reopened.recovery.losses == [.missingLog(generation: 0)])
    #expect(reopened.replica.id != store.replica.id)
  }

  /// A byte flipped in the middle of a log: the records after it are kept in a copy,
  /// never read again, and the log holds the records before the damage.
  @Test func aFlipInTheMiddleOfALogKeepsACopyAndReportsTheDroppedRecords() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    for scalar in "abcdef".unicodeScalars {
      type(String(scalar), into: store)
      try store.flush()
    }
    try store.close()
    let path = directory + "/" + DocumentStore.logName(0)
    var bytes = fileSystem.bytes(path) ?? []
    let (records, _) = RecordFrame.records(in: bytes)
    let third = records[2]
    bytes[third.startIndex + third.count / 2] ^= 0x10
    fileSystem.setBytes(bytes, at: path)

    let reopened = try Self.reopen(fileSystem)
    let copy = "damaged-" + DocumentStore.logName(0) + "-1"
    #expect(
      reopened.recovery.losses == [
        .cutLog(file: DocumentStore.logName(0), droppedRecords: 3, copy: copy)
      ])
    #expect(reopened.recovery.cutTails.first?.copy == copy)
    #expect(reopened.recovery.identityChange == .filesLost)
    #expect(reopened.replica.document.text(of: "body", in: note) == "ab")
    #expect(fileSystem.bytes(directory + "/" + copy) == bytes)
    #expect(fileSystem.bytes(path) == Array(bytes[..<records[1].endIndex]))
    type("X", into: reopened)
    try reopened.compact()
    try reopened.close()
    // The copy stays through compactions and opens, and is never read again.
    let again = try Self.reopen(fileSystem)
    #expect(again.recovery.losses.isEmpty && again.recovery.identityChange == nil)
    #expect(again.replica.document.text(of: "body", in: note) == "abX")
    #expect(fileSystem.bytes(directory + "/" + copy) == bytes)
  }

  @Test func aDamagedIdentityIsMovedAsideAndReported() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("abc", into: store)
    try store.close()
    let path = directory + "/identity"
    var bytes = fileSystem.bytes(path) ?? []
    bytes[bytes.count - 1] ^= 1
    fileSystem.setBytes(bytes, at: path)
    let reopened = try Self.reopen(fileSystem)
    #expect(reopened.recovery.losses == [.damagedIdentity(copy: "damaged-identity-1")])
    #expect(reopened.recovery.identityChange == .identityUnreadable)
    #expect(fileSystem.bytes(directory + "/damaged-identity-1") == bytes)
    #expect(reopened.replica.id != store.replica.id)
  }

  /// A compaction killed after its snapshot and log were durable, before it removed the
  /// generation they replace: the next open removes that generation (and only it).
  @Test func openingRemovesTheGenerationsACompactionSuperseded() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("abc", into: store)
    try store.compact()
    type("def", into: store)
    try store.flush()
    fileSystem.setBytes([1, 2, 3], at: directory + "/identity")
    let kept = try Self.reopen(fileSystem)
    #expect(kept.recovery.losses == [.damagedIdentity(copy: "damaged-identity-1")])
    try kept.close()
    // Dies right after the new generation's directory sync (its identity already
    // marked unclean by a first sync).
    let second = try Self.reopen(fileSystem)
    type("g", into: second)
    try second.flush()
    fileSystem.failAnyOperation(at: 8)
    #expect(throws: Never.self) { try second.compact() }
    #expect(second.lastError != nil)
    fileSystem.crash()
    #expect(try fileSystem.contents(ofDirectory: directory).contains(DocumentStore.logName(1)))
    let reopened = try Self.reopen(fileSystem)
    #expect(reopened.recovery.removedSupersededFiles)
    #expect(reopened.recovery.losses.isEmpty && reopened.recovery.identityChange == nil)
    let names = try fileSystem.contents(ofDirectory: directory)
    #expect(names.allSatisfy { DocumentStore.parse($0).map { $0.generation == 2 } ?? true })
    #expect(names.contains("damaged-identity-1"))
    #expect(reopened.replica.document.text(of: "body", in: note) == "abcdefg")
    try reopened.close()
    #expect(!(try Self.reopen(fileSystem).recovery.removedSupersededFiles))
  }
}

@Suite struct RestoreDetectionTests {
  /// A backup restored onto a file system that hands the freed inode numbers back: the
  /// identity file has its old inode number, but it is a new file.
  @Test func aRestoreThatReusesInodeNumbersTakesAFreshID() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("abc", into: store)
    try store.close()
    fileSystem.copyDirectory(directory, to: "/backup")
    let backup = try #require(fileSystem.bytes(directory + "/identity"))
    fileSystem.copyDirectory("/backup", to: directory, reusingInodeNumbers: true)
    #expect(fileSystem.bytes(directory + "/identity") == backup)
    let restored = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    #expect(restored.recovery.identityChange == .copiedOrRestored)
    #expect(restored.replica.id != store.replica.id)
  }

  /// A snapshot rolled back in place keeps the file itself: nothing to detect here (a
  /// peer's acknowledgement does, see ``DocumentStoreTests``).
  @Test func aRollbackInPlaceKeepsTheFingerprint() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    try store.close()
    let before = try fileSystem.fileIdentity(directory + "/identity")
    fileSystem.copyDirectory(directory, to: "/backup")
    fileSystem.copyDirectory("/backup", to: directory, inPlace: true)
    #expect(try fileSystem.fileIdentity(directory + "/identity") == before)
  }

  /// On the real disk: a file removed and made again at the same path (which often gets
  /// the same inode number back) has another identity where the system records birth
  /// times, and a rename keeps it.
  @Test func aRemadeFileHasAnotherIdentityOnDisk() throws {
    #if canImport(Glibc)
      let path = FileManager.default.temporaryDirectory.path + "/converge-identity-\(getpid())"
      let disk = POSIXFileSystem()
      defer { try? disk.remove(path) }
      try disk.write([1], to: path + ".tmp")
      let first = try disk.fileIdentity(path + ".tmp")
      try disk.rename(path + ".tmp", to: path)
      #expect(try disk.fileIdentity(path) == first)
      guard linuxBirthTime(path) != nil else { return }  // no birth times here
      var reusedInode = false
      for _ in 0..<20 {
        let before = try disk.fileIdentity(path)
        let inode = try inodeNumber(path)
        try disk.remove(path)
        try disk.write([2], to: path)
        reusedInode = try reusedInode || inodeNumber(path) == inode
        #expect(try disk.fileIdentity(path) != before)
      }
      print("inode numbers reused: \(reusedInode)")
    #endif
  }

  func inodeNumber(_ path: String) throws -> UInt64 {
    var status = stat()
    guard stat(path, &status) == 0 else {
      throw StoreFileError(operation: "stat", path: path, code: errno)
    }
    return UInt64(status.st_ino)
  }
}

@Suite struct LazyIdentityTests {
  /// Opening a closed store, reading it and closing it writes nothing and syncs nothing.
  @Test func anOpenThatOnlyReadsWritesNothing() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("abc", into: store)
    try store.compact()
    type("def", into: store)
    try store.close()
    fileSystem.resetCounts()
    for _ in 0..<3 {
      let reader = try DocumentStore(
        directory: directory, configuration: configuration(fileSystem))
      #expect(reader.replica.document.text(of: "body", in: note) == "abcdef")
      #expect(reader.recovery.identityChange == nil)
      try reader.close()
    }
    for operation in MemoryFileSystem.Operation.allCases {
      #expect(fileSystem.calls(operation) == 0, "\(operation)")
    }
    // The first write of a run marks it unclean first.
    let writer = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("g", into: writer)
    try writer.flush()
    #expect(fileSystem.calls(.sync) > 1)
  }

  /// A power cut at every file operation of a run's first sync: whenever the run's
  /// record survives, so does the unclean marker written before it.
  @Test func theUncleanMarkerIsDurableBeforeTheRunsFirstRecord() throws {
    var step = 0
    var survived = 0
    while true {
      let fileSystem = MemoryFileSystem()
      let first = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
      type("abc", into: first)
      try first.close()
      let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
      type("d", into: store)
      fileSystem.failAnyOperation(at: step)
      let completed = (try? store.flush()) != nil
      fileSystem.crash()
      let reopened = try DocumentStore(
        directory: directory, configuration: configuration(fileSystem))
      if reopened.replica.document.text(of: "body", in: note) == "abcd" {
        survived += 1
        #expect(!reopened.recovery.previousRunClosedCleanly, "crash at operation \(step)")
      }
      if completed { break }
      step += 1
    }
    // Write the identity's temporary file empty (for its fingerprint) and whole, sync
    // it, rename it, sync the directory; append and sync the record.
    #expect(step == 7 && survived == 1)
  }
}

@Suite struct StorePathTests {
  @Test func relativePathsResolveAgainstTheCurrentDirectory() throws {
    let current = FileManager.default.currentDirectoryPath
    #expect(try DocumentStore.absolutePath("a/b") == current + "/a/b")
    #expect(try DocumentStore.absolutePath("./a/") == current + "/a")
    #expect(try DocumentStore.absolutePath(".") == current)
    #expect(try DocumentStore.absolutePath("/x/y/") == "/x/y")
  }

  /// On the real disk: a store opened at a relative path lives under the current
  /// directory (it once made its folders under `/` and failed on `key.tmp`).
  @Test func aStoreAtARelativePathOpensAndReopens() throws {
    let folder = ".build/converge-relative-\(getpid())"
    let relative = folder + "/notes"
    let absolute = FileManager.default.currentDirectoryPath + "/" + relative
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let store = try DocumentStore(directory: relative)
    #expect(store.directory == absolute)
    store.transact { $0.insertText("kept", at: 0, in: "body", of: note) }
    try store.close()
    #expect(FileManager.default.fileExists(atPath: absolute + "/identity"))
    let reopened = try DocumentStore(directory: relative)
    #expect(reopened.replica.document.text(of: "body", in: note) == "kept")
    #expect(reopened.recovery.identityChange == nil)
  }

  /// A directory that cannot be made is named in the error, with the reason.
  @Test func aDirectoryThatCannotBeMadeIsNamed() throws {
    let file = FileManager.default.temporaryDirectory.path + "/converge-not-a-folder-\(getpid())"
    try POSIXFileSystem().write([], to: file)
    defer { try? POSIXFileSystem().remove(file) }
    #expect {
      try DocumentStore(directory: file + "/store")
    } throws: { error in
      guard case .fileSystem(let failure) = error as? StoreError else { return false }
      return failure.operation == "mkdir" && failure.path == file + "/store"
        && failure.description.contains("Not a directory")
    }
  }
}

@Suite struct GenerationBoundTests {
  /// A generation record or file name at the top of the counter space is damage, not a
  /// generation: the next compaction would add one to it.
  @Test func generationsAtTheTopOfTheCounterSpaceAreDamage() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("abc", into: store)
    try store.close()
    try StoreLossTests.put(
      DocumentStore.encodedTag(.max), DocumentStore.generationRecordName, on: fileSystem)
    try StoreLossTests.put([], DocumentStore.logName(.max), on: fileSystem)
    let reopened = try StoreLossTests.reopen(fileSystem)
    #expect(
      reopened.recovery.losses == [.damagedGenerationRecord(copy: "damaged-generation-1")])
    type("d", into: reopened)
    try reopened.compact()
    #expect(reopened.replica.document.text(of: "body", in: note) == "abcd")
  }
}
