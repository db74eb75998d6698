import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayNIO
import ConvergeRelayTestSupport
import ConvergeStore
import ConvergeTestSupport
import Foundation
import Testing

/// Relay nodes sharing one PostgreSQL database, with the faults a deployment meets: a
/// node killed mid-stream, the database restarted. They run when
/// `CONVERGE_POSTGRES_URL` is set (see ``StoreKind``) and are reported skipped otherwise;
/// the restart test also needs `CONVERGE_POSTGRES_CTL` (both set by `Relay/postgres.sh`).
@MainActor
@Suite(
  .timeLimit(.minutes(2)), .serialized,
  .enabled(
    if: StoreKind.postgresURL != nil,
    "CONVERGE_POSTGRES_URL is not set (run Relay/postgres.sh swift test --package-path Relay)"
  )
) struct PostgresRelayTests {
  nonisolated static var url: String? {
    StoreKind.available.contains(.postgres) ? StoreKind.postgresURL : nil
  }

  /// A fresh space name: the database is shared by every test and every run.
  nonisolated static func space(_ name: String) -> String {
    "\(name)-\(UInt64.random(in: 0 ... .max))"
  }

  /// The PostgreSQL client and the store are services of the relay's group: the server
  /// answers once the store's tables are in place, and a graceful shutdown stops the
  /// server, then the store (the streams of its events end), then the client.
  @Test func theStoreRunsInTheRelaysServiceGroup() async throws {
    let url = try #require(Self.url)
    let relay = try await LiveRelay.start(postgres: url)
    let store = try #require(relay.store as? PostgresRelayStore)
    try await store.ready()
    let events = try #require(store.events())
    let device = try relay.device(0xA1, in: Self.space("group"))
    let syncing = Task { await device.run() }
    #expect(await eventually { device.status == .upToDate })
    syncing.cancel()
    await relay.stop()
    // Ends only because the group stopped the store: nothing else closes it.
    for await _ in events {}
  }

  /// A relay whose store cannot reach its database does not start: the server waits for
  /// the store, and the store's failure stops the group with its reason.
  @Test func aRelayWhoseStoreCannotStartDoesNotStart() async throws {
    let store = try PostgresRelayStore(
      url: "postgres://relay@127.0.0.1:1/converge", startTimeout: .milliseconds(500))
    let authority = try await RelayTokenAuthority(secret: LiveRelay.secret)
    await #expect(throws: RelayStoreError.self) {
      _ = try await LocalRelay.start(
        store: store, services: store.services, authority: authority)
    }
    await #expect(throws: RelayStoreError.self) { try await store.ready() }
  }

  /// With polling off, a delta can reach the other node's device only through the
  /// store's notifications: small ones in the notification itself, one too large for
  /// it read from the database.
  @Test func aDevicePushingOnOneNodeReachesADeviceOnAnother() async throws {
    let url = try #require(Self.url)
    let space = Self.space("fan-out")
    let nodeA = try await LiveRelay.start(postgres: url) { $0.notifiedStorePollInterval = .zero }
    let nodeB = try await LiveRelay.start(postgres: url) { $0.notifiedStorePollInterval = .zero }
    let writer = try nodeA.device(0xA1, in: space)
    let reader = try nodeB.device(0xB1, in: space)
    let tasks = [Task { await writer.run() }, Task { await reader.run() }]
    #expect(await eventually { reader.status == .upToDate })
    let key = EntityKey(type: "note", id: "n")
    for index in 0..<20 {
      writer.transact { tx in tx.setValue(.int(Int64(index)), for: "i", of: key) }
    }
    #expect(await eventually { reader.replica.document == writer.replica.document })
    let page = String(repeating: "lorem ipsum ", count: 1_000)
    writer.transact { tx in tx.setValue(.string(page), for: "page", of: key) }
    writer.transact { tx in tx.setValue(.int(20), for: "i", of: key) }
    #expect(await eventually { reader.replica.document == writer.replica.document })
    #expect(reader.replica.context.includes(writer.replica.context))
    for task in tasks { task.cancel() }
    await nodeA.stop()
    await nodeB.stop()
  }

  /// Node A, a real `converge-relay serve --postgres` process, is killed with SIGKILL
  /// while its devices push; they come back through node B (as a load balancer would
  /// send them) from what their disks hold, and every device converges with nothing
  /// acknowledged missing from the database.
  @Test func devicesOfAKilledNodeReconnectToAnotherAndConverge() async throws {
    let url = try #require(Self.url)
    let seed: UInt64 = 22
    var random = SeededGenerator(seed: seed)
    let space = Self.space("kill")
    let data = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: data) }
    let nodeA = try RelayChildProcess.start(
      executable: BuiltProduct.directory.appendingPathComponent("converge-relay"), data: data,
      secret: LiveRelay.secret, postgres: url)
    let nodeB = try await LiveRelay.start(postgres: url)
    let key = EntityKey(type: "note", id: "n")
    // Two devices on each node; each keeps its owner, as an app keeps its disk.
    var clients: [RelayDevice] = []
    for index in 0..<4 {
      let owner = try RelayDevice.owner(0xD0 + UInt64(index))
      let url = index < 2 ? nodeA.url(space: space) : nodeB.url(space: space)
      let token = try await nodeB.token(space: space, replicas: [owner.id])
      clients.append(
        RelayDevice(owner: owner, client: RelayClient(url: url, token: { _ in token })))
    }
    var tasks = clients.map { client in Task { await client.run() } }
    for client in clients { #expect(await eventually { client.status == .upToDate }) }
    for step in 0..<60 {
      if step == 30 { nodeA.kill() }  // mid-stream: pushes to A may be in flight
      let client = clients[Int.random(in: 0..<clients.count, using: &random)]
      client.transact { tx in
        tx.insertText("\(step % 10)", at: 0, in: "body", of: key)
      }
      try await Task.sleep(for: .milliseconds(5))
    }
    // A's devices come back through B with their replicas and acknowledgements.
    for index in 0..<2 {
      tasks[index].cancel()
      await tasks[index].value
      let owner = clients[index].owner
      let token = try await nodeB.token(space: space, replicas: [owner.id])
      clients[index] = RelayDevice(
        owner: owner, client: RelayClient(url: nodeB.url(space: space), token: { _ in token }))
      let client = clients[index]
      tasks[index] = Task { await client.run() }
    }
    let all = clients
    let converged = await eventually {
      var documents: [Document] = []
      for client in all { documents.append(client.replica.document) }
      return documents.allSatisfy { $0 == documents[0] }
    }
    #expect(converged, "seed \(seed)")
    // A device can hold everything before its own last push is acknowledged: another
    // node may fan that push out before the acknowledgement reaches the pusher.
    for client in clients {
      #expect(await eventually { client.pending.isEmpty }, "seed \(seed)")
    }
    let stored = try await Self.storedContext(space: space, relay: nodeB)
    for client in clients {
      #expect(stored.includes(client.acknowledged), "seed \(seed)")
    }
    for task in tasks { task.cancel() }
    await nodeB.stop()
  }

  /// PostgreSQL restarts (fast shutdown: every connection is cut) while devices on two
  /// nodes push; with polling off, the nodes reconnect, LISTEN again and catch up, so
  /// deltas pushed after the restart reach the other node, and nothing acknowledged
  /// before it is lost.
  @Test(
    .enabled(
      if: ProcessInfo.processInfo.environment["CONVERGE_POSTGRES_CTL"] != nil,
      "CONVERGE_POSTGRES_CTL is not set (Relay/postgres.sh sets it)"))
  func nodesRecoverFromADatabaseRestart() async throws {
    let url = try #require(Self.url)
    let control = try #require(ProcessInfo.processInfo.environment["CONVERGE_POSTGRES_CTL"])
    let space = Self.space("restart")
    let nodeA = try await LiveRelay.start(postgres: url) { $0.notifiedStorePollInterval = .zero }
    let nodeB = try await LiveRelay.start(postgres: url) { $0.notifiedStorePollInterval = .zero }
    let writer = try nodeA.device(0xE1, in: space)
    let reader = try nodeB.device(0xE2, in: space)
    let tasks = [Task { await writer.run() }, Task { await reader.run() }]
    #expect(await eventually { reader.status == .upToDate })
    let key = EntityKey(type: "note", id: "n")
    for index in 0..<10 {
      writer.transact { tx in tx.insertText("a", at: index, in: "body", of: key) }
    }
    #expect(await eventually { writer.pending.isEmpty })
    let acknowledgedBefore = writer.acknowledged
    #expect(try await Self.run(control, ["restart", "-m", "fast", "-w", "-t", "60"]) == 0)
    for index in 0..<10 {
      writer.transact { tx in tx.insertText("b", at: index, in: "body", of: key) }
    }
    #expect(await eventually { reader.replica.document == writer.replica.document })
    #expect(await eventually { writer.pending.isEmpty })
    let stored = try await Self.storedContext(space: space, relay: nodeB)
    #expect(stored.includes(acknowledgedBefore))
    #expect(stored.includes(writer.acknowledged))
    for task in tasks { task.cancel() }
    await nodeA.stop()
    await nodeB.stop()
  }

  /// `simulate --postgres`: two stateless relay nodes on the PostgreSQL database the tests
  /// run against, devices retired and rejoining through either (issue #48, fifteenth
  /// session). In this serialized suite, so that the database restart above never cuts
  /// its nodes off mid-run (it did once, in the sixteenth session, when the two ran at
  /// once); off the main actor, which the other suites' relays use while it waits.
  @Test nonisolated func devicesSimulatedThroughTwoPostgresNodesConvergeWithRejoins() throws {
    let url = try #require(Self.url)
    let seed = 11
    let (status, printed) = try BuiltProduct.run(
      "converge-relay",
      [
        "simulate", "--devices", "4", "--operations", "1500", "--seed", "\(seed)",
        "--retirements", "0.004", "--postgres", url, "--json",
      ], timeLimit: .seconds(90))
    let text = String(decoding: printed, as: UTF8.self)
    #expect(status == 0, "seed \(seed): \(text)")
    let report = try JSONSerialization.jsonObject(with: printed) as? [String: Any]
    #expect(report?["store"] as? String == "postgres", "seed \(seed): \(text)")
    #expect(report?["converged"] as? Bool == true, "seed \(seed): \(text)")
    #expect((report?["rejoined"] as? Int ?? 0) > 0, "seed \(seed): \(text)")
    #expect(report?["stable_cut"] as? Bool == true, "seed \(seed): \(text)")
  }

  /// The bench's fault run, small: two node processes, the first killed mid-run; its
  /// devices reconnect, every device converges, nothing acknowledged is lost.
  @Test func aShortTwoNodeBenchSurvivesAKilledNode() throws {
    let url = try #require(Self.url)
    let (status, printed) = try BuiltProduct.run(
      "converge-relay",
      [
        "bench", "--nodes", "2", "--postgres", url, "--clients", "8", "--seconds", "4",
        "--kill-node-at", "2", "--json",
      ], timeLimit: .seconds(90))
    let text = String(decoding: printed, as: UTF8.self)
    #expect(status == 0, "\(text)")
    let report = try JSONSerialization.jsonObject(with: printed) as? [String: Any]
    #expect(report?["converged"] as? Bool == true, "\(text)")
    #expect(report?["lostAcknowledged"] as? Int == 0, "\(text)")
    #expect(report?["connected"] as? Int == 8, "\(text)")
    #expect((report?["reconnections"] as? Int ?? 0) >= 4, "\(text)")
    #expect(report?["convergedAfterKillMilliseconds"] as? Double != nil, "\(text)")
  }

  /// Runs `executable` and returns its exit status, without holding a thread of the
  /// cooperative pool while it runs.
  static func run(_ executable: String, _ arguments: [String]) async throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    return try await withCheckedThrowingContinuation { continuation in
      process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
      do {
        try process.run()
      } catch {
        process.terminationHandler = nil
        continuation.resume(throwing: error)
      }
    }
  }

  /// The space's context as the database holds it, rebuilt from snapshot and log.
  static func storedContext(space: String, relay: LiveRelay) async throws -> CausalContext {
    let log = try await relay.store.read(space: space, after: 0)
    var replica = Replica()
    if let snapshot = log.snapshot { replica = try Replica(restoring: snapshot.state) }
    for entry in log.entries { replica.apply(try DocumentDelta(decoding: entry.delta)) }
    return replica.context
  }
}
