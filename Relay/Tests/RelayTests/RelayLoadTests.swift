import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeRelayNIO
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOCore
import Synchronization
import Testing

/// A store that counts its reads, around another, and makes each wait `readDelay` first
/// (a relay slower than its clients).
struct CountingRelayStore: ForwardingRelayStore {
  let inner: any RelayStore
  var readDelay: Duration = .zero
  let reads = Counter()

  final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
  }

  func read(space: String, after position: UInt64) async throws -> SpaceLog {
    reads.add()
    if readDelay > .zero { try await Task.sleep(for: readDelay) }
    return try await inner.read(space: space, after: position)
  }
}

/// Bounded memory, free idle, and overload that ends (issue #43).
@MainActor
@Suite(.timeLimit(.minutes(1))) struct RelayLoadTests {
  let hello = SyncMessage(context: CausalContext(), delta: nil).encoded()

  /// Opens a socket to `space`, handshakes, and returns the store's read count right
  /// after the answer and again after `idle` with the socket open and silent.
  func readsWhileIdle(
    _ relay: LiveRelay, _ reads: CountingRelayStore.Counter, space: String, idle: Duration
  ) async throws -> (before: Int, after: Int) {
    let token = try await relay.token(space: space, replicas: [ReplicaID(rawValue: 1)])
    var headers = HTTPFields()
    headers[.authorization] = "Bearer \(token)"
    let counts = Mutex((0, 0))
    let hello = self.hello
    _ = try await WebSocketClient.connect(
      url: relay.url(space: space), configuration: .init(additionalHeaders: headers),
      logger: Logger(label: "relay-test-client")
    ) { inbound, outbound, _ in
      try await outbound.write(.binary(ByteBuffer(bytes: hello)))
      var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
      _ = try await messages.next()
      let before = reads.value
      try await Task.sleep(for: idle)
      counts.withLock { $0 = (before, reads.value) }
      try await outbound.close(.normalClosure, reason: nil)
    }
    return counts.withLock { (before: $0.0, after: $0.1) }
  }

  /// One relay process over SQLite learns of every append itself: a space with an open,
  /// silent socket never reads the store (the old default read it every 250 ms). The
  /// same socket on a relay told to poll does read it: the count sees polls.
  @Test func aSingleRelayDoesNotPollItsStore() async throws {
    let quiet = try await LiveRelay.start(countingReads: true)
    let quietReads = try #require(quiet.store as? CountingRelayStore).reads
    let idle = try await readsWhileIdle(quiet, quietReads, space: "s", idle: .milliseconds(600))
    #expect(idle.before == idle.after)
    await quiet.stop()

    let polling = try await LiveRelay.start(countingReads: true) {
      $0.storePollInterval = .milliseconds(20)
    }
    let polledReads = try #require(polling.store as? CountingRelayStore).reads
    let polled = try await readsWhileIdle(
      polling, polledReads, space: "s", idle: .milliseconds(600))
    #expect(polled.after > polled.before)
    await polling.stop()
  }

  /// A space's replica is held while a socket uses it and dropped after the last one
  /// closes; a device that comes later gets the space back from the store.
  @Test func anIdleSpaceIsDroppedAfterItsLastSocketCloses() async throws {
    let relay = try await LiveRelay.start()
    let phone = try relay.device(1, in: "notes")
    let phoneTask = Task { await phone.run() }
    let key = EntityKey(type: "note", id: "kept")
    phone.transact { tx in
      tx.create(key)
      tx.insertText("still here", at: 0, in: "body", of: key)
    }
    #expect(await eventually { phone.pending.isEmpty })
    #expect(await relay.servedSpaces() == 1)
    phoneTask.cancel()
    await phoneTask.value
    #expect(await eventually { await relay.servedSpaces() == 0 })

    let laptop = try relay.device(2, in: "notes")
    let laptopTask = Task { await laptop.run() }
    #expect(
      await eventually {
        laptop.replica.document.text(of: "body", in: key) == "still here"
      })
    laptopTask.cancel()
    await relay.stop()
  }

  /// Stores a space "big" whose every handshake answer is about 200 KB, and returns a
  /// read token for it.
  func bigSpace(in relay: LiveRelay, test: String) async throws -> String {
    // Letters that do not compress, so that every answer is about 200 KB.
    let seed: UInt64 = 43
    print("\(test) seed \(seed)")
    var random = SeededLetters(seed: seed)
    let text = String((0..<200_000).map { _ in random.next() })
    var writer = Replica(id: ReplicaID(rawValue: 1))
    let key = EntityKey(type: "note", id: "big")
    let commit = writer.transact { tx in
      tx.create(key)
      tx.setValue(.string(text), for: "body", of: key)
    }
    _ = try await relay.store.append(space: "big", delta: commit.delta.encoded())
    return try await relay.token(space: "big", scope: .read, replicas: [])
  }

  /// A read token that asks for a large space again and again without reading the
  /// answers is closed with `slowConsumer` once its answers pass the socket's byte
  /// budget, long before the 600th: the relay stops reading it instead of growing. The
  /// client is a raw socket with a small receive buffer that reads its first answer (so
  /// that the relay holds the space before the baseline), writes 599 more handshakes and
  /// reads nothing for 10 s (a wait, not a timed assertion: the relay only needs to answer
  /// enough of them meanwhile to fill the loopback buffers), then reads everything.
  /// Meanwhile the process's resident size stays within a budget that 600 queued answers
  /// of 200 KB (120 MB) would break: with the queue unbounded it grew by 193 MiB, with
  /// the budget by 1 to 2 MiB.
  @Test func aSlowReaderIsCutOffWithItsCloseCode() async throws {
    let relay = try await LiveRelay.start {
      $0.queueByteLimit = 256 << 10
      $0.closeGracePeriod = .seconds(50)
    }
    let token = try await bigSpace(in: relay, test: "aSlowReaderIsCutOffWithItsCloseCode")
    let socket = try await RawWebSocket.connect(
      port: relay.port, path: "/v1/spaces/big/sync", token: token, receiveBuffer: 16 << 10)
    let handshake = RawWebSocket.frame(hello)
    try await socket.send(handshake)
    let first = try #require(try await socket.nextFrame())
    #expect(first.payload.count > 200_000)

    let baseline = residentBytes()
    let peak = Mutex(baseline)
    let sampling = Task {
      while !Task.isCancelled {
        let now = residentBytes()
        peak.withLock { $0 = max($0, now) }
        try? await Task.sleep(for: .milliseconds(50))
      }
    }
    try await socket.send(Array([[UInt8]](repeating: handshake, count: 599).joined()))
    try await Task.sleep(for: .seconds(10))
    sampling.cancel()
    await sampling.value
    let growth = peak.withLock { $0 } - baseline
    let (answers, close) = try await socket.readUntilClose()
    print(
      "aSlowReaderIsCutOffWithItsCloseCode resident growth \(growth >> 10) KiB,"
        + " \(answers.count) more answers")
    #expect(close?.closeCode == RelayCloseReason.slowConsumer.rawValue)
    #expect(answers.count < 599)
    #expect(growth < 48 << 20)
    await relay.stop()
  }

  /// The process's budget for outgoing queues is summed over its sockets. A socket that
  /// has not spoken yet holds what is pushed to its space unwritten (its writer starts
  /// when the client speaks): seven pushes of 200 KB fill a budget of 1 MiB with it, under
  /// its own 8 MiB. A reader that comes next is refused with `relayBusy` before anything
  /// is queued for it; once the first socket is gone, its bytes leave the budget and a
  /// reader gets its answer.
  @Test func outgoingQueuesShareAProcessBudget() async throws {
    let relay = try await LiveRelay.start {
      $0.processQueueByteLimit = 1 << 20
      $0.closeGracePeriod = .seconds(50)
    }
    let path = "/v1/spaces/s/sync"
    let reader = try await relay.token(space: "s", scope: .read, replicas: [])
    let silent = try await RawWebSocket.connect(port: relay.port, path: path, token: reader)
    let pusher = try await RawWebSocket.connect(
      port: relay.port, path: path,
      token: try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)]))
    // Each push replaces one 200 KB value, so that the space stays about 200 KB.
    let seed: UInt64 = 44
    print("outgoingQueuesShareAProcessBudget seed \(seed)")
    var random = SeededLetters(seed: seed)
    var writer = Replica(id: ReplicaID(rawValue: 1))
    let key = EntityKey(type: "note", id: "big")
    for index in 0..<7 {
      let text = String((0..<200_000).map { _ in random.next() })
      let commit = writer.transact { tx in
        if index == 0 { tx.create(key) }
        tx.setValue(.string(text), for: "body", of: key)
      }
      try await pusher.send(RawWebSocket.frame(commit.delta.encoded()))
      let acknowledgement = try #require(try await pusher.nextFrame())
      #expect(acknowledgement.opcode == 0x2)
    }
    // No room left for another answer, and none made: nothing of it is written.
    #expect(await eventually { await relay.queuedBytes() > (1 << 20) - 200_000 })

    let handshake = RawWebSocket.frame(hello)
    let refused = try await RawWebSocket.connect(port: relay.port, path: path, token: reader)
    try await refused.send(handshake)
    let (answers, close) = try await refused.readUntilClose()
    #expect(answers.isEmpty)
    #expect(close?.closeCode == RelayCloseReason.relayBusy.rawValue)

    silent.disconnect()
    #expect(await eventually { await relay.queuedBytes() == 0 })
    let served = try await RawWebSocket.connect(port: relay.port, path: path, token: reader)
    try await served.send(handshake)
    let answer = try #require(try await served.nextFrame())
    #expect(answer.opcode == 0x2 && answer.payload.count > 200_000)
    await relay.stop()
  }

  /// The rate limit counts frames as they come off the socket, not as the relay gets to
  /// them: a relay that answers a handshake every 100 ms (its store is slow) would read a
  /// flood of 200 handshakes at 10 a second, under a limit of 20, and never cut it off.
  /// The client writes them all at once and reads nothing until it has.
  @Test func aFloodIsLimitedAsItArrivesNotAsItIsRead() async throws {
    let relay = try await LiveRelay.start(readDelay: .milliseconds(100)) {
      $0.messagesPerSecond = 20
    }
    let token = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)])
    let socket = try await RawWebSocket.connect(
      port: relay.port, path: "/v1/spaces/s/sync", token: token)
    let frame = RawWebSocket.frame(hello)
    try await socket.send(Array([[UInt8]](repeating: frame, count: 200).joined()))
    let (answers, close) = try await socket.readUntilClose()
    #expect(close?.closeCode == RelayCloseReason.rateLimited.rawValue)
    #expect(answers.count <= 20)
    await relay.stop()
  }

  /// Past the process's socket limit or a space's, a socket is refused with its own
  /// retryable code; a device refused that way backs off, retries, and converges once
  /// room is made.
  @Test func overloadIsRefusedWithATypedCodeAndTheDeviceConvergesAfterBackoff() async throws {
    let relay = try await LiveRelay.start { $0.maxSocketsPerSpace = 1 }
    let phone = try relay.device(1, in: "notes")
    let phoneTask = Task { await phone.run() }
    let fromPhone = EntityKey(type: "note", id: "from-phone")
    phone.transact { tx in tx.create(fromPhone) }
    #expect(await eventually { phone.status == .upToDate })

    let token = try await relay.token(space: "notes", replicas: [ReplicaID(rawValue: 3)])
    let refused = try await exchange(
      url: relay.url(space: "notes"), token: token, messages: [hello])
    #expect(refused.closeReason == .spaceBusy)
    #expect(RelayCloseReason.spaceBusy.isRetryable)

    // The laptop edits while the space is full: refused, it keeps retrying.
    let laptopOwner = try RelayDevice.owner(2)
    let fromLaptop = EntityKey(type: "note", id: "from-laptop")
    laptopOwner.transact { tx in tx.create(fromLaptop) }
    let laptop = RelayDevice(
      owner: laptopOwner,
      client: relay.client(
        for: laptopOwner, in: "notes",
        backoff: .init(base: .milliseconds(20), maximum: .milliseconds(200))))
    let laptopTask = Task { await laptop.run() }
    try await Task.sleep(for: .milliseconds(300))
    #expect(laptop.status != .upToDate)

    phoneTask.cancel()
    await phoneTask.value
    #expect(
      await eventually {
        let document = laptop.replica.document
        let pending = laptop.pending
        return document.contains(fromPhone) && pending.isEmpty
      })
    laptopTask.cancel()
    let log = try await relay.store.read(space: "notes", after: 0)
    var stored = Replica()
    for entry in log.entries { stored.apply(try DocumentDelta(decoding: entry.delta)) }
    #expect(stored.document.contains(fromLaptop) && stored.document.contains(fromPhone))
    await relay.stop()

    let full = try await LiveRelay.start { $0.maxConnections = 0 }
    let busy = try await exchange(url: full.url(space: "notes"), token: token, messages: [hello])
    #expect(busy.closeReason == .relayBusy)
    await full.stop()
  }
}

/// Lowercase letters from a seeded SplitMix64.
struct SeededLetters {
  private var state: UInt64
  init(seed: UInt64) { state = seed }

  mutating func next() -> Character {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    z ^= z >> 31
    return Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8(z % 26)))
  }
}

/// This process's resident size in bytes (0 where `/proc` is missing).
func residentBytes() -> Int {
  guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else {
    return 0
  }
  let fields = statm.split(separator: " ")
  guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
  return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
