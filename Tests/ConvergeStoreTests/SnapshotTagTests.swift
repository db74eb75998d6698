import Converge
import Testing

@testable import ConvergeStore

/// A store tags its snapshots with its key and loads its own with their texts deferred;
/// a snapshot whose tag is missing, damaged or under another key loads with every check,
/// to the same document.
@Suite struct SnapshotTagTests {
  /// A store whose snapshot holds a typed note and a second note, closed.
  func savedStore(_ fileSystem: MemoryFileSystem) throws -> Document {
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("a body typed into a note", into: store)
    store.transact {
      $0.insertText("another", at: 0, in: "body", of: EntityKey(type: "note", id: "2"))
    }
    try store.compact()
    try store.close()
    return store.replica.document
  }

  @Test func aStoreLoadsItsOwnSnapshotWithItsTextsDeferred() throws {
    let fileSystem = MemoryFileSystem()
    let saved = try savedStore(fileSystem)
    #expect(fileSystem.bytes(directory + "/key") != nil)
    #expect(fileSystem.bytes(directory + "/tag-0000000000000001") != nil)
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem))
    #expect(reopened.recovery.snapshotTagged)
    #expect(reopened.replica.document.deferredTextCount == 2)
    #expect(reopened.replica.document == saved)
    // An edit decodes the one text it touches; the store saves and reopens as before.
    reopened.transact { $0.insertText("!", at: 0, in: "body", of: note) }
    #expect(reopened.replica.document.deferredTextCount == 1)
    try reopened.compact()
    try reopened.close()
    let again = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    #expect(again.recovery.snapshotTagged)
    #expect(again.replica.document == reopened.replica.document)
    #expect(again.replica.document.text(of: "body", in: note) == "!a body typed into a note")
    // The superseded snapshot's tag went with it.
    #expect(fileSystem.bytes(directory + "/tag-0000000000000001") == nil)
  }

  @Test(arguments: ["no tag", "damaged tag", "another key", "damaged key"])
  func aSnapshotWithoutItsTagLoadsWithEveryCheck(_ damage: String) throws {
    let fileSystem = MemoryFileSystem()
    let saved = try savedStore(fileSystem)
    let tag = directory + "/tag-0000000000000001"
    let key = directory + "/key"
    switch damage {
    case "no tag": try fileSystem.remove(tag)
    case "damaged tag":
      var bytes = fileSystem.bytes(tag) ?? []
      bytes[bytes.count - 1] ^= 1
      fileSystem.setBytes(bytes, at: tag)
    case "another key":
      fileSystem.setBytes(DocumentStore.encodedKey(SnapshotKey(low: 7, high: 7)), at: key)
    default:
      fileSystem.setBytes(Array((fileSystem.bytes(key) ?? []).dropLast()), at: key)
    }
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem))
    #expect(!reopened.recovery.snapshotTagged)
    #expect(reopened.recovery.damagedSnapshots.isEmpty)
    #expect(reopened.replica.document.deferredTextCount == 0)
    #expect(reopened.replica.document == saved)
    // A damaged key is replaced; the next snapshot is tagged under the key kept.
    #expect(fileSystem.bytes(key).flatMap(DocumentStore.decodedKey) == reopened.snapshotKey)
    try reopened.compact()
    try reopened.close()
    let again = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    #expect(again.recovery.snapshotTagged)
    #expect(again.replica.document == saved)
  }

  /// Damaged snapshot bytes are never trusted for their tag: the tag of the undamaged
  /// bytes no longer matches, and the damage is found as before.
  @Test func aDamagedSnapshotIsNotTrustedForItsTag() throws {
    let fileSystem = MemoryFileSystem()
    _ = try savedStore(fileSystem)
    let path = directory + "/snapshot-0000000000000001"
    let bytes = fileSystem.bytes(path) ?? []
    // A byte in the middle of the message, its frame's checksum made valid again.
    let (records, _) = RecordFrame.records(in: bytes)
    guard var payload = records.first.map(Array.init) else {
      Issue.record("no snapshot record")
      return
    }
    payload[payload.count / 2] ^= 0x40
    fileSystem.setBytes(RecordFrame.framed(payload), at: path)
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem))
    #expect(!reopened.recovery.snapshotTagged)
    #expect(reopened.recovery.damagedSnapshots == ["snapshot-0000000000000001"])
  }
}
