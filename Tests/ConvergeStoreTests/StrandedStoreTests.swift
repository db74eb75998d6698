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
    var deltas: [DocumentDelta] = []
    deltas.append(
      device.transact { tx in
        tx.create(note)
        tx.insertText("a", at: 0, in: "body", of: note)
      }.delta)
    deltas.append(device.transact { tx in tx.insertText("b", at: 1, in: "body", of: note) }.delta)
    deltas.append(device.transact { tx in tx.insertText("c", at: 2, in: "body", of: note) }.delta)
    return (device, deltas)
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
    var deltas: [DocumentDelta] = []
    deltas.append(
      owner.transact { tx in
        tx.create(Self.note)
        tx.insertText("a", at: 0, in: "body", of: Self.note)
      }.delta)
    for (offset, letter) in ["b", "c"].enumerated() {
      deltas.append(
        owner.transact { tx in tx.insertText(letter, at: offset + 1, in: "body", of: Self.note) }
          .delta)
    }
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
}
