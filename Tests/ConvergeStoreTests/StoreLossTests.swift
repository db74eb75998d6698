import Converge
import ConvergeTestSupport
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
}
