import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeStore
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Issue #48's rejoin on a live relay, over SQLite and PostgreSQL: two devices on disk,
/// each with a `RelayClient`; one stays away past the horizon while the other's deletes
/// become stable and are forgotten, comes back, is refused as retired (4011), rejoins
/// under a fresh id and converges with every offline edit of its own, while what was
/// deleted and never edited again stays out of the relay's rows.
@MainActor
@Suite(.timeLimit(.minutes(3))) struct RejoinRelayTests {
  static let doomed = EntityKey(type: "note", id: "doomed")
  static let gone = EntityKey(type: "note", id: "gone")
  static let shared = EntityKey(type: "note", id: "shared")
  static let offline = EntityKey(type: "note", id: "written-offline")
  static let goneTitle = "deleted and never edited again"
  static let goneBody = "a private body nobody edited after its delete"

  /// Fresh ids handed out in order, one per call: a device's ids, so the test knows
  /// which one a rejoin took.
  final class IDSequence: Sendable {
    private let next: Mutex<[UInt64]>
    init(_ ids: [UInt64]) { next = Mutex(ids) }
    func take() -> ReplicaID {
      ReplicaID(rawValue: next.withLock { $0.isEmpty ? 0xDEAD : $0.removeFirst() })
    }
  }

  /// A device replica on disk in `folder` whose fresh ids come from `ids`.
  static func open(_ folder: String, ids: IDSequence) throws -> DeviceReplica {
    var configuration = DocumentStore.Configuration()
    configuration.freshID = { ids.take() }
    return try DeviceReplica(directory: folder, configuration: configuration)
  }

  @Test(arguments: StoreKind.available)
  func aDeviceBackPastTheHorizonRejoinsWithItsOfflineEditsAndForgottenNotesStayGone(
    kind: StoreKind
  ) async throws {
    let clock = StabilityRelayTests.TestWallClock()
    let relay = try await StabilityRelayTests.start(kind, now: { clock.now })
    let space = "rejoin-\(UInt64.random(in: 0 ... .max))"
    let folder = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let backoff = RelayClient.Backoff(base: .milliseconds(20), maximum: .milliseconds(200))
    let phoneOwner = try Self.open(folder + "/phone", ids: IDSequence([0xA1]))
    let laptopIDs = IDSequence([0xB2, 0xB3])
    let laptopOwner = try Self.open(folder + "/laptop", ids: laptopIDs)
    let phone = RelayDevice(
      owner: phoneOwner, client: relay.client(for: phoneOwner, in: space, backoff: backoff))
    let laptop = RelayDevice(
      owner: laptopOwner, client: relay.client(for: laptopOwner, in: space, backoff: backoff))
    #expect(phone.owner.id.rawValue == 0xA1 && laptop.owner.id.rawValue == 0xB2)
    let phoneTask = Task { await phone.run() }
    var laptopTask = Task { await laptop.run() }

    // The phone writes three notes; both devices hold them and the relay knows it.
    phone.transact { tx in
      for key in [Self.doomed, Self.gone, Self.shared] { tx.create(key) }
      tx.setValue(.string("doomed title"), for: "title", of: Self.doomed)
      tx.insertText("doomed body", at: 0, in: "body", of: Self.doomed)
      tx.setValue(.string(Self.goneTitle), for: "title", of: Self.gone)
      tx.insertText(Self.goneBody, at: 0, in: "body", of: Self.gone)
      tx.insertText("shared body", at: 0, in: "body", of: Self.shared)
    }
    #expect(await eventually { laptop.replica.document.contains(Self.shared) })
    #expect(
      await StabilityRelayTests.eventuallyRecords(
        relay, space: space, replica: 0xB2, seeing: phone.replica.context))

    // The laptop goes offline and edits: the note the phone is about to delete, the
    // shared note, and a new note.
    laptopTask.cancel()
    await laptopTask.value
    laptop.transact { tx in
      tx.setValue(.string("doomed title, edited offline"), for: "title", of: Self.doomed)
      tx.insertText(" (shared, edited offline)", at: .max, in: "body", of: Self.shared)
      tx.create(Self.offline)
      tx.setValue(.string("written on the train"), for: "title", of: Self.offline)
      tx.insertText("offline body", at: 0, in: "body", of: Self.offline)
    }
    try laptop.owner.flush()

    // The phone deletes two notes. The laptop is offline within the horizon and holds
    // the cut back: nothing is forgotten yet.
    phone.transact { tx in
      tx.delete(Self.doomed)
      tx.delete(Self.gone)
    }
    #expect(
      await StabilityRelayTests.eventuallyRecords(
        relay, space: space, replica: 0xA1, seeing: phone.replica.context))
    #expect(!phone.replica.document.fieldNames(of: Self.gone).isEmpty)

    // Past the horizon, the phone's next report retires the laptop; the deletes become
    // stable and the phone and the relay forget them.
    clock.advance(200)
    phone.transact { tx in tx.setValue(.string("after"), for: "title", of: Self.shared) }
    #expect(
      await eventually {
        phone.replica.document.fieldNames(of: Self.gone).isEmpty
          && phone.replica.document.fieldNames(of: Self.doomed).isEmpty
      })
    let retired = try await relay.store.devices(space: space)
    #expect(retired.first { $0.replica.rawValue == 0xB2 }?.isRetired == true)
    #expect(await Self.eventuallyRowsLack(Self.gone, Self.doomed, relay: relay, space: space))

    // The laptop comes back: refused as retired, it rejoins under its next fresh id and
    // sends its offline edits re-applied on the current state.
    laptopTask = Task { await laptop.run() }
    #expect(await eventually { laptop.owner.id.rawValue == 0xB3 })
    #expect(laptop.owner.identityChanges.last == .retired)
    let converged = await eventually(within: .seconds(60)) {
      laptop.pending.isEmpty && phone.pending.isEmpty
        && phone.replica.document == laptop.replica.document
        && phone.replica.document.contains(Self.offline)
    }
    #expect(converged, "phone \(phone.status), laptop \(laptop.status)")
    for device in [phone, laptop] {
      let document = device.replica.document
      // Every offline edit, by the rebase rule: the new note whole; the text appended to
      // the shared note after the phone's own title write; the note the phone deleted
      // that the laptop edited back whole, with the laptop's title.
      #expect(document.value(of: "title", in: Self.offline) == .string("written on the train"))
      #expect(document.text(of: "body", in: Self.offline) == "offline body")
      #expect(document.text(of: "body", in: Self.shared) == "shared body (shared, edited offline)")
      #expect(document.value(of: "title", in: Self.shared) == .string("after"))
      #expect(
        document.value(of: "title", in: Self.doomed) == .string("doomed title, edited offline"))
      #expect(document.text(of: "body", in: Self.doomed) == "doomed body")
      // The note nobody edited after its delete stays forgotten.
      #expect(document.fieldNames(of: Self.gone).isEmpty)
      #expect(!document.contains(Self.gone))
    }
    // The relay: the fresh id recorded and active, the old one retired; no row holds the
    // forgotten note's content, the revived one is there.
    let records = try await relay.store.devices(space: space)
    #expect(records.first { $0.replica.rawValue == 0xB3 }?.isRetired == false)
    #expect(records.first { $0.replica.rawValue == 0xB2 }?.isRetired == true)
    let rows = try await StabilityRelayTests.decodedRows(relay.store, space: space)
    #expect(rows.allSatisfy { $0.fieldNames(of: Self.gone).isEmpty })
    var merged = Replica()
    for document in rows { merged.merge(Replica(document: document)) }
    #expect(merged.document.value(of: "title", in: Self.offline) == .string("written on the train"))
    #expect(
      merged.document.value(of: "title", in: Self.doomed)
        == .string("doomed title, edited offline"))
    if kind == .sqlite {
      let bytes = Self.fileBytes(relay.directory + "/relay.sqlite")
      #expect(StabilityRelayTests.contains(bytes, "written on the train"))
      #expect(!StabilityRelayTests.contains(bytes, Self.goneTitle))
      #expect(!StabilityRelayTests.contains(bytes, Self.goneBody))
    }

    // The laptop's store reopened keeps the fresh id and the rejoined state.
    laptopTask.cancel()
    await laptopTask.value
    phoneTask.cancel()
    await phoneTask.value
    let before = laptop.replica.document
    try laptop.owner.close()
    let reopened = try Self.open(folder + "/laptop", ids: IDSequence([0xBF]))
    #expect(reopened.id.rawValue == 0xB3)
    #expect(reopened.replica.document == before)
    #expect(reopened.identityChanges.allSatisfy { $0 != .copiedOrRestored })
    try reopened.close()
    try phone.owner.close()
    await relay.stop()
  }

  /// A rejoin's bootstrap (a fresh id's handshake stating nothing, closed once answered)
  /// whose device never connects again (it died before its rejoin was durable) holds the
  /// cut back as any device offline does, until the horizon retires it: its device may
  /// still push edits rebased on the cut it was told (`RejoinInFlightCutTests`). Before
  /// #48's fourteenth session it held the cut back only while its socket was open.
  @Test(arguments: StoreKind.available)
  func aBootstrapThatNeverComesBackHoldsTheCutBackUntilTheHorizon(kind: StoreKind) async throws {
    let clock = StabilityRelayTests.TestWallClock()
    let relay = try await StabilityRelayTests.start(kind, now: { clock.now })
    let space = "bootstrap-\(UInt64.random(in: 0 ... .max))"
    let phone = try relay.device(0xA1, in: space)
    let phoneTask = Task { await phone.run() }
    phone.transact { tx in
      tx.create(Self.gone)
      tx.setValue(.string(Self.goneTitle), for: "title", of: Self.gone)
    }
    #expect(await eventually { phone.pending.isEmpty })
    let bootstrap = try await exchange(
      url: relay.url(space: space),
      token: try await relay.token(space: space, replicas: [ReplicaID(rawValue: 0xC3)]),
      messages: [StabilityRelayTests.handshake(CausalContext())],
      until: { received in
        received.contains { !RelayAcknowledgement.isRelayEnvelope($0[...]) }
      })
    #expect(bootstrap.closeReason == nil)
    phone.transact { tx in tx.delete(Self.gone) }
    // The phone's report of the delete is recorded; the cut stays short of it.
    #expect(
      await StabilityRelayTests.eventuallyRecords(
        relay, space: space, replica: 0xA1, seeing: phone.replica.context))
    #expect(!(try await relay.store.stableCut(space: space)).includes(phone.replica.context))
    #expect(phone.replica.document.fieldNames(of: Self.gone).isEmpty == false)
    // Past the horizon the bootstrap's record is retired and the cut moves on.
    clock.advance(200)
    phone.transact { tx in
      tx.setValue(.string("kept"), for: "title", of: EntityKey(type: "note", id: "k"))
    }
    let forgotten = await eventually {
      phone.replica.document.fieldNames(of: Self.gone).isEmpty
    }
    let records = try await relay.store.devices(space: space)
    #expect(forgotten, "records: \(records)")
    #expect(records.first { $0.replica.rawValue == 0xC3 }?.isRetired == true)
    #expect(await Self.eventuallyRowsLack(Self.gone, relay: relay, space: space))
    phoneTask.cancel()
    await phoneTask.value
    await relay.stop()
  }

  /// The database file and its write-ahead log, as bytes.
  static func fileBytes(_ path: String) -> [UInt8] {
    var bytes: [UInt8] = []
    for suffix in ["", "-wal"] {
      if let data = FileManager.default.contents(atPath: path + suffix) { bytes += [UInt8](data) }
    }
    return bytes
  }

  /// Whether every row of `space`, decoded, comes to hold no field of `keys`.
  static func eventuallyRowsLack(
    _ keys: EntityKey..., relay: LiveRelay, space: String,
    isolation: isolated (any Actor)? = #isolation
  ) async -> Bool {
    await eventually {
      guard let rows = try? await StabilityRelayTests.decodedRows(relay.store, space: space),
        !rows.isEmpty
      else { return false }
      return rows.allSatisfy { row in keys.allSatisfy { row.fieldNames(of: $0).isEmpty } }
    }
  }
}

/// Devices that only use the HTTP pair are recorded and retired as socket devices are.
@MainActor
@Suite(.timeLimit(.minutes(2))) struct HTTPDeviceRecordTests {
  @Test(arguments: StoreKind.available)
  func aPullRecordsItsDeviceWhichHoldsTheCutBackUntilRetired(kind: StoreKind) async throws {
    let clock = StabilityRelayTests.TestWallClock()
    let relay = try await StabilityRelayTests.start(kind, now: { clock.now })
    let space = "http-\(UInt64.random(in: 0 ... .max))"
    let phone = try relay.device(0xA1, in: space)
    let phoneTask = Task { await phone.run() }
    let note = EntityKey(type: "note", id: "n")
    phone.transact { tx in tx.setValue(.string("secret"), for: "title", of: note) }
    #expect(await eventually { phone.pending.isEmpty })
    // A device that only pulls, stating what it holds: recorded like a socket's.
    let scriptID = ReplicaID(rawValue: 0xC3)
    let token = try await relay.token(space: space, replicas: [scriptID])
    let url = "http://127.0.0.1:\(relay.port)/v1/spaces/\(space)/pull"
    let held = phone.replica.context
    let pulled = try await Self.post(url, token: token, body: held.encoded())
    #expect(pulled.status == 200)
    let records = try await relay.store.devices(space: space)
    let record = try #require(records.first { $0.replica == scriptID })
    #expect(record.seen == held && !record.isRetired)
    // It has not seen the delete: the cut stays short of it while the phone reports.
    phone.transact { tx in tx.delete(note) }
    #expect(
      await StabilityRelayTests.eventuallyRecords(
        relay, space: space, replica: 0xA1, seeing: phone.replica.context))
    let cut = try await relay.store.stableCut(space: space)
    #expect(!cut.includes(phone.replica.context))
    // Past the horizon it is retired, the cut moves on, and its next pull is refused.
    clock.advance(200)
    phone.transact { tx in
      tx.setValue(.string("kept"), for: "title", of: EntityKey(type: "note", id: "k"))
    }
    #expect(await eventually { phone.replica.document.fieldNames(of: note).isEmpty })
    let again = try await Self.post(url, token: token, body: held.encoded())
    #expect(again.status == 403)
    let after = try await relay.store.devices(space: space)
    #expect(after.first { $0.replica == scriptID }?.isRetired == true)
    phoneTask.cancel()
    await phoneTask.value
    await relay.stop()
  }

  static func post(_ url: String, token: String, body: [UInt8]) async throws -> (
    status: Int, body: [UInt8]
  ) {
    guard let address = URL(string: url) else { throw RelayTestError("bad URL \(url)") }
    var request = URLRequest(url: address)
    request.httpMethod = "POST"
    request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
    if !body.isEmpty { request.httpBody = Data(body) }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, [UInt8](data))
  }
}
