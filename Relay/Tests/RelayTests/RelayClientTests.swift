import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayNIO
import ConvergeStore
import Testing

@MainActor
@Suite(.timeLimit(.minutes(1))) struct RelayClientTests {
  @Test func twoDevicesConvergeThroughTheRelay() async throws {
    let relay = try await LiveRelay.start()
    let phoneID = ReplicaID(rawValue: 0xA1)
    let laptopID = ReplicaID(rawValue: 0xB2)
    let phone = try relay.device(phoneID.rawValue, in: "notes")
    // The laptop edits offline before it first connects: its handshake sends the outbox.
    let laptop = try relay.device(laptopID.rawValue, in: "notes")
    let draft = EntityKey(type: "note", id: "draft")
    laptop.transact { tx in
      tx.create(draft)
      tx.insertText("offline", at: 0, in: "body", of: draft)
    }
    let phoneTask = Task { await phone.run() }
    let laptopTask = Task { await laptop.run() }

    let groceries = EntityKey(type: "note", id: "groceries")
    phone.transact { tx in tx.create(groceries) }
    for (offset, word) in ["milk", " eggs", " bread"].enumerated() {
      phone.transact { tx in
        tx.insertText(word, at: offset == 0 ? 0 : .max, in: "body", of: groceries)
      }
      laptop.transact { tx in
        tx.insertText("!", at: 0, in: "body", of: draft)
      }
    }
    let converged = await eventually {
      let a = phone.replica.document
      let b = laptop.replica.document
      return a == b && a.contains(groceries) && a.contains(draft)
        && a.text(of: "body", in: draft) == "!!!offline"
    }
    #expect(converged)
    #expect(phone.replica.document.text(of: "body", in: groceries) == "milk eggs bread")
    let acknowledged = await eventually {
      let phoneDone = phone.pending.isEmpty
      let laptopDone = laptop.pending.isEmpty
      return phoneDone && laptopDone
    }
    #expect(acknowledged)
    phoneTask.cancel()
    laptopTask.cancel()
    await relay.stop()
  }

  /// A poll (here every millisecond) that reads while a push's append is in flight must
  /// not send that push back to its sender: a pusher alone in its space hears only
  /// acknowledgements.
  @Test func aPusherAloneHearsOnlyItsAcknowledgements() async throws {
    let relay = try await LiveRelay.start { $0.storePollInterval = .milliseconds(1) }
    let id = ReplicaID(rawValue: 9)
    let token = try await relay.token(space: "s", replicas: [id])
    var replica = Replica(id: id)
    let key = EntityKey(type: "note", id: "n")
    var pushes: [[UInt8]] = []
    for index in 0..<200 {
      let commit = replica.transact { tx in
        if index == 0 { tx.create(key) }
        tx.insertText("x", at: .max, in: "body", of: key)
      }
      pushes.append(commit.delta.encoded())
    }
    let context = replica.context
    let heard = try await exchange(
      url: relay.url(space: "s"), token: token, messages: pushes, gap: .microseconds(200),
      until: { received in
        received.contains { bytes in
          (try? RelayAcknowledgement(decoding: bytes[...]))?.durable.includes(context) == true
        }
      })
    #expect(!heard.received.isEmpty)
    #expect(heard.acknowledgements.count == heard.received.count)
    await relay.stop()
  }

  /// A device's answer that carries its edits is acknowledged, and answered only when
  /// the space lacks something the device stated: not because the space changed since the
  /// relay's last answer (which would draw another answer from the device, and under steady
  /// typing a handshake per round trip).
  @Test func aDevicesAnswerWithDataDrawsOnlyItsAcknowledgement() async throws {
    // The idle timeout ends the exchange; at 1 s a loaded CI machine sometimes delayed the
    // answer past it, and the relay closed before acknowledging.
    let relay = try await LiveRelay.start { $0.idleTimeout = .seconds(3) }
    let id = ReplicaID(rawValue: 11)
    let token = try await relay.token(space: "s", replicas: [id])
    let (replica, delta) = edit(11, note: "n", title: "T")
    let hello = SyncMessage(context: CausalContext(), delta: nil).encoded()
    let answer = SyncMessage(context: replica.context, delta: delta).encoded()
    let heard = try await exchange(
      url: relay.url(space: "s"), token: token, messages: [hello, answer])
    let handshakes = heard.received.filter {
      !RelayAcknowledgement.isRelayEnvelope($0[...])
        && (try? SyncMessage(decoding: $0))?.context != nil
    }
    #expect(handshakes.count == 1)  // the answer to the opening, and nothing after
    #expect(heard.acknowledgements.count == 1)
    #expect(heard.acknowledgements.first?.durable.includes(replica.context) == true)
    #expect(heard.closeReason == .idleTimeout)
    await relay.stop()
  }

  @Test func aRefusedClientStopsAndReportsWhy() async throws {
    let relay = try await LiveRelay.start()
    let token = try await relay.token(space: "elsewhere", replicas: [])
    let client = RelayClient(url: relay.url(space: "notes"), token: { _ in token })
    let owner = try DeviceReplica.inMemory()
    let run = Task { await client.run(owner: owner) }
    var statuses: [RelayClientStatus] = []
    for await status in client.statuses { statuses.append(status) }
    await run.value
    #expect(statuses.last == .refused(.wrongSpace))
    await relay.stop()
  }

  @Test func theRelayRebuildsASpaceFromSnapshotAndLog() async throws {
    let relay = try await LiveRelay.start { $0.compactionInterval = 3 }
    let id = ReplicaID(rawValue: 7)
    let token = try await relay.token(space: "s", replicas: [id])
    var replica = Replica(id: id)
    let key = EntityKey(type: "note", id: "n")
    // One push per connection, each awaited, so each is its own log entry (pushes on one
    // socket may share a group commit): a snapshot through 6, then entries 7 and 8.
    for index in 0..<8 {
      let commit = replica.transact { tx in
        if index == 0 { tx.create(key) }
        tx.insertText("\(index)", at: .max, in: "body", of: key)
      }
      let pushed = try await exchange(
        url: relay.url(space: "s"), token: token, messages: [commit.delta.encoded()],
        until: { $0.count >= 1 })
      #expect(pushed.acknowledgements.last?.durable == replica.context)
    }
    let log = try await relay.store.read(space: "s", after: 0)
    #expect(log.snapshot?.through == 6)
    #expect(log.entries.map(\.position) == [7, 8])
    // A second relay on the same database (as a second process would be) rebuilds the
    // space from snapshot and log and answers a fresh device's handshake exactly.
    let second = try await LiveRelay.start(sharing: relay)
    let reader = try await second.token(space: "s", scope: .read, replicas: [])
    let hello = SyncMessage(context: CausalContext(), delta: nil).encoded()
    let answer = try await exchange(
      url: second.url(space: "s"), token: reader, messages: [hello], until: { !$0.isEmpty })
    var fresh = Replica()
    var session = SyncSession()
    for bytes in answer.received { try session.receive(encoded: bytes, into: &fresh) }
    #expect(fresh.document == replica.document)
    await second.stop()
    await relay.stop()
  }

  @Test func devicesOnTwoRelaysSharingAStoreSeeEachOtherLive() async throws {
    let first = try await LiveRelay.start { $0.storePollInterval = .milliseconds(50) }
    let second = try await LiveRelay.start(sharing: first) {
      $0.storePollInterval = .milliseconds(50)
    }
    let phoneID = ReplicaID(rawValue: 0xA1)
    let laptopID = ReplicaID(rawValue: 0xB2)
    let phone = try first.device(phoneID.rawValue, in: "notes")
    let laptop = try second.device(laptopID.rawValue, in: "notes")
    let tasks = [Task { await phone.run() }, Task { await laptop.run() }]
    // Both handshakes done before anything is typed: what follows arrives as live pushes
    // relayed from the other process through the store.
    #expect(
      await eventually {
        let phoneStatus = phone.status
        let laptopStatus = laptop.status
        return phoneStatus == .upToDate && laptopStatus == .upToDate
      })
    let key = EntityKey(type: "note", id: "shared")
    phone.transact { tx in
      tx.create(key)
      tx.insertText("from the phone", at: 0, in: "body", of: key)
    }
    #expect(await eventually { laptop.replica.document.contains(key) })
    laptop.transact { tx in tx.insertText("laptop: ", at: 0, in: "body", of: key) }
    #expect(
      await eventually {
        phone.replica.document.text(of: "body", in: key) == "laptop: from the phone"
      })
    for task in tasks { task.cancel() }
    await second.stop()
    await first.stop()
  }

  /// A relay whose append lands after another process's entry reads both and pushes the
  /// other process's entry to every socket, including the one whose delta it appended
  /// (found by `converge-relay simulate`: that socket was skipped for both).
  @Test func aPusherStillReceivesWhatAnotherRelayAppendedBeforeIt() async throws {
    let first = try await LiveRelay.start { $0.storePollInterval = .zero }
    let second = try await LiveRelay.start(sharing: first) { $0.storePollInterval = .zero }
    let senderID = ReplicaID(rawValue: 0x51)
    let otherID = ReplicaID(rawValue: 0x52)
    let sender = try first.device(senderID.rawValue, in: "s")
    let other = try second.device(otherID.rawValue, in: "s")
    let tasks = [Task { await sender.run() }, Task { await other.run() }]
    #expect(
      await eventually {
        let senderStatus = sender.status
        let otherStatus = other.status
        return senderStatus == .upToDate && otherStatus == .upToDate
      })
    let fromOther = EntityKey(type: "note", id: "from-other")
    other.transact { tx in tx.create(fromOther) }
    #expect(
      await eventually {
        (try? await first.store.read(space: "s", after: 0).entries.count) == 1
      })
    // The first relay has not read entry 1; its append of this delta becomes entry 2.
    sender.transact { tx in tx.create(EntityKey(type: "note", id: "from-sender")) }
    #expect(await eventually { sender.replica.document.contains(fromOther) })
    for task in tasks { task.cancel() }
    await second.stop()
    await first.stop()
  }
}
