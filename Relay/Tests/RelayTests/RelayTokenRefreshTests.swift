import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayNIO
import ConvergeStore
import Foundation
import Synchronization
import Testing

/// A token provider as an app writes one, recording the replica ids it was asked for;
/// `answer` makes each token from the call's index (0 first) and the id asked.
final class RecordingTokenProvider: Sendable {
  private let asked = Mutex<[ReplicaID]>([])
  private let answer: @Sendable (Int, ReplicaID) async throws -> String

  init(_ answer: @escaping @Sendable (Int, ReplicaID) async throws -> String) {
    self.answer = answer
  }

  /// The ids asked for so far, in order.
  var ids: [ReplicaID] { asked.withLock { $0 } }

  func token(for id: ReplicaID) async throws -> String {
    let index = asked.withLock { list in
      list.append(id)
      return list.count - 1
    }
    return try await answer(index, id)
  }
}

/// The relay client's token provider against a live relay: a token that expires while
/// connected, and a fresh replica id after a device's folder was copied.
@MainActor
@Suite(.timeLimit(.minutes(1))) struct RelayTokenRefreshTests {
  @Test func aTokenExpiringWhileConnectedIsReplacedAndEditsKeepFlowing() async throws {
    let relay = try await LiveRelay.start()
    let laptop = try relay.device(0xB2, in: "notes")
    let phoneOwner = try RelayDevice.owner(0xA1)
    // The first token lives three seconds (the relay closes the socket with
    // `tokenExpired` then); later ones ten minutes.
    let provider = RecordingTokenProvider { index, id in
      try await relay.token(space: "notes", replicas: [id], expiresIn: index == 0 ? 3 : 600)
    }
    let phone = RelayDevice(
      owner: phoneOwner,
      client: RelayClient(
        url: relay.url(space: "notes"), token: { try await provider.token(for: $0) },
        backoff: RelayClient.Backoff(base: .milliseconds(20), maximum: .milliseconds(200))))
    let tasks = [Task { await phone.run() }, Task { await laptop.run() }]
    let note = EntityKey(type: "note", id: "shopping")
    phone.transact { tx in
      tx.create(note)
      tx.insertText("milk", at: 0, in: "body", of: note)
    }
    #expect(await eventually { laptop.replica.document.text(of: "body", in: note) == "milk" })
    // Typed while the first token runs out: it reaches the laptop once the client has a
    // new token (the socket it was sent on may be the one the relay closes).
    phone.transact { tx in tx.insertText(" eggs", at: .max, in: "body", of: note) }
    #expect(await eventually { provider.ids.count >= 2 })
    phone.transact { tx in tx.insertText(" bread", at: .max, in: "body", of: note) }
    #expect(
      await eventually {
        laptop.replica.document.text(of: "body", in: note) == "milk eggs bread"
      })
    #expect(await eventually { phone.pending.isEmpty })
    #expect(provider.ids.allSatisfy { $0 == phoneOwner.id })
    for task in tasks { task.cancel() }
    for task in tasks { await task.value }
    await relay.stop()
  }

  @Test func aCopiedFolderTakesAFreshIDWhoseEditsTheOldTokenCannotCarry() async throws {
    let relay = try await LiveRelay.start()
    let laptop = try relay.device(0xB2, in: "notes")
    let laptopTask = Task { await laptop.run() }
    let folder = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let note = EntityKey(type: "note", id: "journal")

    // The first phone, on disk, syncs an edit and closes; the app keeps its token.
    let first = try DeviceReplica(directory: folder + "/phone")
    let oldID = first.id
    let oldToken = try await relay.token(space: "notes", replicas: [oldID])
    let firstDevice = RelayDevice(
      owner: first,
      client: RelayClient(url: relay.url(space: "notes"), token: { _ in oldToken }))
    let firstTask = Task { await firstDevice.run() }
    first.transact { tx in
      tx.create(note)
      tx.insertText("before", at: 0, in: "body", of: note)
    }
    #expect(await eventually { laptop.replica.document.text(of: "body", in: note) == "before" })
    firstTask.cancel()
    await firstTask.value
    try first.close()

    // Its folder copied to a new phone (or restored from a backup): the store there
    // takes a fresh id, and the app sees why.
    try FileManager.default.copyItem(atPath: folder + "/phone", toPath: folder + "/copy")
    let restored = try DeviceReplica(directory: folder + "/copy")
    let newID = restored.id
    #expect(newID != oldID)
    #expect(restored.identityChanges == [.copiedOrRestored])
    #expect(restored.replica.document.text(of: "body", in: note) == "before")
    restored.transact { tx in tx.insertText(" after", at: .max, in: "body", of: note) }
    try restored.flush()

    // The relay refuses the old token for the new id's edits, with its typed reason.
    let newEdit = restored.replica.delta(since: first.replica.context)
    let refused = try await exchange(
      url: relay.url(space: "notes"), token: oldToken, messages: [newEdit.encoded()])
    #expect(refused.closeReason == .replicaNotGranted)

    // The app still hands out the token it kept; once the relay refuses it, the client
    // asks the provider again, for the new id.
    let provider = RecordingTokenProvider { index, id in
      index == 0 ? oldToken : try await relay.token(space: "notes", replicas: [id])
    }
    let device = RelayDevice(
      owner: restored,
      client: RelayClient(
        url: relay.url(space: "notes"), token: { try await provider.token(for: $0) },
        backoff: RelayClient.Backoff(base: .milliseconds(20), maximum: .milliseconds(200))))
    let task = Task { await device.run() }
    #expect(
      await eventually {
        laptop.replica.document.text(of: "body", in: note) == "before after"
      })
    #expect(provider.ids.count == 2 && provider.ids.allSatisfy { $0 == newID })
    restored.transact { tx in tx.insertText("!", at: .max, in: "body", of: note) }
    #expect(
      await eventually {
        laptop.replica.document.text(of: "body", in: note) == "before after!"
      })
    #expect(await eventually { device.pending.isEmpty })
    task.cancel()
    await task.value
    laptopTask.cancel()
    await laptopTask.value
    try restored.close()
    await relay.stop()
  }
}
