import Converge
import Foundation
import Testing

@testable import ConvergeStore

/// A retired device's characters that reached this device ahead of an earlier one whose
/// push was lost: the owner drops them (``DeviceReplica/dropPending(of:)``), keeps
/// dropping them when they arrive again, and a reopened store does not bring them back.
@Suite struct StrandedStoreTests {
  private static let note = EntityKey(type: "note", id: "n")

  /// The retired device's three pushes: "a" (with the note), "b", "c".
  private static func pushes() -> (device: Replica, deltas: [DocumentDelta]) {
    var device = Replica(id: ReplicaID(rawValue: 0xD), wallClock: .fixed(10))
    let deltas = typeABC { device.transact($0) }
    return (device, deltas)
  }

  /// The deltas of three transactions made through `transact`: the note with "a", then
  /// "b", then "c".
  private static func typeABC(
    _ transact: ((inout DocumentTransaction) -> Void) -> Commit
  ) -> [DocumentDelta] {
    var deltas = [
      transact { tx in
        tx.create(note)
        tx.insertText("a", at: 0, in: "body", of: note)
      }.delta
    ]
    for (offset, letter) in ["b", "c"].enumerated() {
      deltas.append(
        transact { tx in tx.insertText(letter, at: offset + 1, in: "body", of: note) }.delta)
    }
    return deltas
  }

  /// An empty directory for a store, and settings that sync on the caller's thread.
  private static func storeDirectory() -> (path: String, settings: DocumentStore.Configuration) {
    let path = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-retired-\(UInt64.random(in: 0...UInt64.max))").path
    var settings = DocumentStore.Configuration()
    settings.syncInBackground = false
    return (path, settings)
  }

  @Test func droppedItemsStayDroppedWhenTheyArriveAgainAndAfterAReopen() throws {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-stranded-\(UInt64.random(in: 0...UInt64.max))").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var settings = DocumentStore.Configuration()
    settings.syncInBackground = false
    let (device, deltas) = Self.pushes()
    let owner = try DeviceReplica(directory: directory, configuration: settings)
    owner.apply(deltas[0])
    owner.apply(deltas[2])  // "b" was lost
    #expect(owner.replica.document.hasPendingChanges)
    #expect(owner.dropPending(of: [device.id]) == 1)
    #expect(!owner.replica.document.hasPendingChanges)
    // Arriving again (a peer that had not dropped it yet), it is dropped again.
    owner.apply(deltas[2])
    #expect(!owner.replica.document.hasPendingChanges)
    #expect(owner.replica.document.text(of: "body", in: Self.note) == "a")
    try owner.close()
    // The log holds the delta; the snapshot written after the drop does not wait.
    let reopened = try DeviceReplica(directory: directory, configuration: settings)
    #expect(!reopened.replica.document.hasPendingChanges)
    #expect(reopened.replica.document == owner.replica.document)
    // The device's rejoin onto this state re-applies "b" and "c" under its fresh id.
    let rebase = Replica.rebasing(
      device.document, onto: reopened.replica.document, stable: CausalContext(),
      retired: [device.id], as: ReplicaID(rawValue: 0xE), wallClock: .fixed(30))
    reopened.apply(rebase.delta)
    #expect(reopened.replica.document.text(of: "body", in: Self.note) == "abc")
    #expect(!reopened.replica.document.hasPendingChanges)
    try reopened.close()
  }

  /// The rejoining owner itself: its rebase re-applies the characters the state it
  /// rejoins onto held only waiting, that state's waiting items of the old id are
  /// dropped, and a late push of the old id is dropped on arrival.
  @Test func aRejoinedOwnerReappliesWhatWaitedAndDropsLatePushes() throws {
    let owner = try DeviceReplica.inMemory()
    let old = owner.id
    let deltas = Self.typeABC { owner.transact($0) }
    var peer = Replica(id: ReplicaID(rawValue: 0xA), wallClock: .fixed(20))
    peer.apply(deltas[0])
    peer.apply(deltas[2])  // "b" was lost
    #expect(peer.document.hasPendingChanges)
    let rebase = try owner.rejoin(onto: peer.document, stable: CausalContext())
    #expect(owner.id != old)
    #expect(owner.replica.document.text(of: "body", in: Self.note) == "abc")
    #expect(!owner.replica.document.hasPendingChanges)
    peer.dropPending(of: [old])
    peer.apply(rebase.delta)
    #expect(peer.document == owner.replica.document)
    owner.apply(deltas[2])
    #expect(!owner.replica.document.hasPendingChanges)
    #expect(peer.document == owner.replica.document)
  }

  /// The retired ids live in the identity record (fifteenth session): a reopened owner
  /// drops a stray of an id retired before it closed, without being told again. Before,
  /// they were kept in memory and the stray waited for ever after a restart.
  @Test func aReopenedOwnerKeepsDroppingTheStraysOfIdsItRetired() throws {
    let (directory, settings) = Self.storeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var (device, deltas) = Self.pushes()
    // A fourth push, "d" after "c", arrives only after the restart.
    let late = device.transact { tx in tx.insertText("d", at: 3, in: "body", of: Self.note) }
    let owner = try DeviceReplica(directory: directory, configuration: settings)
    owner.apply(deltas[0])
    owner.apply(deltas[2])  // "b" was lost
    #expect(owner.dropPending(of: [device.id]) == 1)
    #expect(owner.store.retiredIDs == [device.id])
    try owner.close()
    let reopened = try DeviceReplica(directory: directory, configuration: settings)
    #expect(reopened.store.retiredIDs == [device.id])
    reopened.apply(late.delta)
    #expect(!reopened.replica.document.hasPendingChanges)
    #expect(reopened.replica.document.text(of: "body", in: Self.note) == "a")
    try reopened.close()
  }

  /// The same after a rejoin: the owner's own old id stays retired across a restart, so a
  /// late copy of its push that the rebase re-applied under the fresh id is dropped.
  @Test func aReopenedOwnerKeepsDroppingLatePushesOfItsRetiredId() throws {
    let (directory, settings) = Self.storeDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let owner = try DeviceReplica(directory: directory, configuration: settings)
    let old = owner.id
    let deltas = Self.typeABC { owner.transact($0) }
    var peer = Replica(id: ReplicaID(rawValue: 0xA), wallClock: .fixed(20))
    peer.apply(deltas[0])
    try owner.rejoin(onto: peer.document, stable: CausalContext())
    #expect(owner.store.retiredIDs == [old])
    try owner.close()
    let reopened = try DeviceReplica(directory: directory, configuration: settings)
    #expect(reopened.id != old)
    #expect(reopened.store.retiredIDs == [old])
    reopened.apply(deltas[2])
    #expect(!reopened.replica.document.hasPendingChanges)
    #expect(reopened.replica.document.text(of: "body", in: Self.note) == "abc")
    try reopened.close()
  }
}

/// The identity record's forms: records written before retired ids were kept (versions 1
/// and 2, bytes as those versions wrote them) read as retiring nothing; a record naming
/// retired ids (version 3) reads back whole, and a damaged one does not read.
@Suite struct StoreIdentityFormatTests {
  /// Version 1: id 0x1234, proven counter 77, fingerprint 0xABCDEF, closed cleanly.
  static let version1: [UInt8] = [
    0x50, 0x5B, 0xCE, 0x4A, 0x1A, 0x00, 0x00, 0x00, 0x01, 0x01, 0x34, 0x12, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x4D, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xEF, 0xCD, 0xAB, 0x00,
    0x00, 0x00, 0x00, 0x00,
  ]
  /// Version 2: id 0x5678, counter 3, fingerprint 0xFEED, a rejoin retiring 0x1234 at
  /// counter 77 whose snapshot is generation 9.
  static let version2: [UInt8] = [
    0xFC, 0x66, 0xCD, 0x6B, 0x32, 0x00, 0x00, 0x00, 0x02, 0x00, 0x78, 0x56, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xED, 0xFE, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x34, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x4D, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  ]

  @Test func recordsOfEarlierVersionsRetireNothing() throws {
    let one = try #require(StoreIdentity(decoding: Self.version1))
    #expect(
      one
        == StoreIdentity(
          replica: ReplicaID(rawValue: 0x1234), provenCounter: 77, cleanShutdown: true,
          fingerprint: 0xABCDEF))
    #expect(one.retired.isEmpty)
    // A store that retired nothing still writes the earlier form.
    #expect(one.encoded == Self.version1)
    let two = try #require(StoreIdentity(decoding: Self.version2))
    #expect(two.retired.isEmpty)
    #expect(
      two.rejoin
        == StoreIdentity.Rejoin(
          retired: ReplicaID(rawValue: 0x1234), retiredCounter: 77, generation: 9))
    #expect(two.encoded == Self.version2)
    // Recovered past the rejoin's generation, the rejoin's id is retired.
    #expect(two.resolved(atGeneration: 9).retired == [ReplicaID(rawValue: 0x1234)])
    #expect(two.resolved(atGeneration: 8).retired.isEmpty)
  }

  @Test func aRecordNamingRetiredIdsReadsBackAndADamagedOneDoesNot() throws {
    let retired: Set<ReplicaID> = [ReplicaID(rawValue: 9), ReplicaID(rawValue: 0xFFFF_0001)]
    let plain = StoreIdentity(
      replica: ReplicaID(rawValue: 5), provenCounter: 4, cleanShutdown: false, fingerprint: 3,
      retired: retired)
    let withRejoin = StoreIdentity(
      replica: ReplicaID(rawValue: 5), provenCounter: 4, cleanShutdown: true, fingerprint: 3,
      rejoin: .init(retired: ReplicaID(rawValue: 7), retiredCounter: 2, generation: 6),
      retired: retired)
    for identity in [plain, withRejoin] {
      let bytes = identity.encoded
      #expect(bytes[8] == StoreIdentity.retiredVersion)
      #expect(StoreIdentity(decoding: bytes) == identity)
      #expect(Set(try #require(StoreIdentity(decoding: bytes)).retired) == retired)
      // Every flipped payload byte is caught by the frame's checksum; a payload whose
      // count disagrees with its length, framed anew, is refused by the decoder.
      var payload = Array(bytes[8...])
      payload[2 + 6 * 8] = 3
      #expect(StoreIdentity(decoding: RecordFrame.framed(payload)) == nil)
      #expect(StoreIdentity(decoding: RecordFrame.framed(Array(payload.dropLast(8)))) == nil)
    }
  }
}
