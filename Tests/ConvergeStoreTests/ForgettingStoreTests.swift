import Converge
import Foundation
import Testing

@testable import ConvergeStore

/// Forgetting through the owner and the store: once deletes are stable and the store
/// compacted, no file of the store directory holds a deleted note's body, read raw or
/// decoded.
@Suite struct ForgettingStoreTests {
  private static func note(_ index: Int) -> EntityKey {
    EntityKey(type: "note", id: "note-\(index)")
  }

  /// A distinctive body, short enough to stay raw UTF-8 inside a delta.
  private static func body(_ index: Int) -> String { "zq-body-\(index)-kv" }

  /// Every file of `directory`, by name, as raw bytes.
  private static func files(in directory: String) throws -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
      files[name] = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
    }
    return files
  }

  private static func containsRaw(_ bytes: [UInt8], _ needle: String) -> Bool {
    let needle = Array(needle.utf8)
    guard bytes.count >= needle.count else { return false }
    return (0...(bytes.count - needle.count)).contains {
      bytes[$0..<$0 + needle.count].elementsEqual(needle)
    }
  }

  /// The bodies of `notes` that a file holds, raw or decoded: a snapshot is decoded as a
  /// document, a log's records as deltas applied to an empty document (text content is
  /// Huffman-coded on the wire, so the raw search alone could miss a body).
  private static func bodies(of notes: Range<Int>, in name: String, _ bytes: [UInt8]) -> Set<Int> {
    var found = Set(notes.filter { containsRaw(bytes, body($0)) })
    var documents: [Document] = []
    if name.hasPrefix("snapshot-"), let record = RecordFrame.onlyRecord(in: bytes),
      let document = try? Document(decoding: record)
    {
      documents.append(document)
    }
    if name.hasPrefix("log-") {
      var document = Document()
      for record in RecordFrame.records(in: bytes).records {
        if let delta = try? DocumentDelta(decoding: record) { document.apply(delta) }
      }
      documents.append(document)
    }
    for document in documents {
      found.formUnion(notes.filter { document.text(of: "body", in: note($0)).contains(body($0)) })
    }
    return found
  }

  @Test func noFileHoldsADeletedBodyAfterStableDeletesAndACompaction() throws {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-forget-\(UInt64.random(in: 0...UInt64.max))").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var settings = DocumentStore.Configuration()
    settings.syncInBackground = false
    let first = try DeviceReplica(directory: directory, configuration: settings)
    for index in 0..<40 {
      first.transact { tx in
        tx.create(Self.note(index))
        tx.setValue(.string("title \(index)"), for: "title", of: Self.note(index))
        tx.insertText(Self.body(index), at: 0, in: "body", of: Self.note(index))
      }
    }
    try first.flush()
    try first.store.compact()
    // The bodies are in the files now: the detector sees them (the control).
    var before = Set<Int>()
    for (name, bytes) in try Self.files(in: directory) {
      before.formUnion(Self.bodies(of: 0..<40, in: name, bytes))
    }
    #expect(before == Set(0..<40))
    // Reopened, the notes' texts load deferred from the snapshot: forgetting and the
    // next snapshot must not carry a deleted one's bytes over from it.
    try first.close()
    let device = try DeviceReplica(directory: directory, configuration: settings)
    device.transact { tx in for index in 0..<30 { tx.delete(Self.note(index)) } }
    try device.flush()
    // Logged deletes: the files still hold every body.
    var logged = Set<Int>()
    for (name, bytes) in try Self.files(in: directory) {
      logged.formUnion(Self.bodies(of: 0..<40, in: name, bytes))
    }
    #expect(logged == Set(0..<40))
    // One device: its context is the stable cut.
    let stable = CausalContext.stableCut(
      of: [device.replica.document.context], seenBy: device.replica.document.context)
    #expect(device.forgetDeleted(stable: stable) == 30)
    try device.close()
    for (name, bytes) in try Self.files(in: directory) {
      let found = Self.bodies(of: 0..<40, in: name, bytes)
      #expect(found.isDisjoint(with: 0..<30), "\(name) holds deleted bodies \(found.sorted())")
    }
    let reopened = try DeviceReplica(directory: directory, configuration: settings)
    let document = reopened.replica.document
    #expect(document.keys == (30..<40).map(Self.note).sorted())
    for index in 0..<30 {
      #expect(!document.contains(Self.note(index)))
      #expect(document.fieldNames(of: Self.note(index)).isEmpty)
      #expect(document.text(of: "body", in: Self.note(index)).isEmpty)
      #expect(document.value(of: "title", in: Self.note(index)) == nil)
    }
    for index in 30..<40 {
      #expect(document.text(of: "body", in: Self.note(index)) == Self.body(index))
    }
    try reopened.close()
  }
}
