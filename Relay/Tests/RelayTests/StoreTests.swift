import Converge
import ConvergeRelay
import ConvergeRelayClient
import Foundation
import Testing

/// The stores every store test runs against: SQLite always, PostgreSQL when
/// `CONVERGE_POSTGRES_URL` names a database (`Relay/postgres.sh` starts one and sets it;
/// CI always runs through it).
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
  case sqlite, postgres

  static let postgresURL: String? = {
    let url = ProcessInfo.processInfo.environment["CONVERGE_POSTGRES_URL"]
    return url?.isEmpty == false ? url : nil
  }()

  static let available: [StoreKind] = {
    guard postgresURL != nil else {
      print(
        "⚠︎ PostgreSQL store tests SKIPPED: CONVERGE_POSTGRES_URL is not set "
          + "(run them with Relay/postgres.sh swift test --package-path Relay)")
      return [.sqlite]
    }
    return allCases
  }()

  var testDescription: String { rawValue }
}

/// One database of `kind`, opened as often as a test needs (each store is what one relay
/// process would open), with space names no other test uses: the PostgreSQL database is
/// shared by every test and every run.
final class StoreFixture: Sendable {
  let kind: StoreKind
  private let directory = temporaryDirectory()
  private let prefix = "t\(UInt64.random(in: 0 ... .max))-"

  init(_ kind: StoreKind) { self.kind = kind }

  func open() async throws -> any RelayStore {
    switch kind {
    case .sqlite: try await SQLiteRelayStore.open(path: directory + "/s.sqlite")
    case .postgres:
      try await PostgresRelayStore.connect(url: try #require(StoreKind.postgresURL))
    }
  }

  /// `count` stores on the database, as `count` relay processes would open it.
  func open(_ count: Int) async throws -> [any RelayStore] {
    var stores: [any RelayStore] = []
    for _ in 0..<count { stores.append(try await open()) }
    return stores
  }

  func space(_ name: String) -> String { prefix + name }

  func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

@Suite(.timeLimit(.minutes(1))) struct StoreTests {
  @Test func postgresRunsInCI() {
    // CI goes through Relay/postgres.sh: a CI run without the database would pass with
    // half the store tests skipped.
    if ProcessInfo.processInfo.environment["CI"] == "true" {
      #expect(StoreKind.postgresURL != nil, "CI must run the PostgreSQL tests")
    }
  }

  @Test(arguments: StoreKind.available) func appendsAreGapFreeAndReadBack(kind: StoreKind)
    async throws
  {
    let fixture = StoreFixture(kind)
    defer { fixture.remove() }
    let store = try await fixture.open()
    let (a, b) = (fixture.space("a"), fixture.space("b"))
    var positions: [UInt64] = []
    for index in 0..<5 {
      positions.append(try await store.append(space: a, delta: [UInt8(index)]))
    }
    _ = try await store.append(space: b, delta: [9])
    #expect(positions == [1, 2, 3, 4, 5])
    let log = try await store.read(space: a, after: 2)
    #expect(log.snapshot == nil)
    #expect(log.entries.map(\.position) == [3, 4, 5])
    #expect(log.entries.map(\.delta) == [[2], [3], [4]])
    #expect(try await store.read(space: b, after: 0).entries.map(\.position) == [1])
    // Past the last position the database can hold there is nothing (and no overflow).
    for position in [UInt64(Int64.max) - 1, UInt64(Int64.max), .max] {
      #expect(try await store.read(space: a, after: position).entries.isEmpty)
    }
    await closeStore(store)
  }

  /// Appenders at once through four stores (four relay processes' worth of
  /// connections): 100 to one space, or 400 to eight spaces, where each store writes many
  /// spaces in one transaction and its batches contend with the others' for the same
  /// spaces' rows (a batch that took them in another order would deadlock). Every space's
  /// positions are 1…n, each returned once, and its log reads back gap-free with the
  /// delta written at each position.
  @Test(arguments: StoreKind.available, [1, 8])
  func concurrentAppendersLeaveGapFreeSequences(kind: StoreKind, spaceCount: Int) async throws {
    let fixture = StoreFixture(kind)
    defer { fixture.remove() }
    let stores = try await fixture.open(4)
    let spaces = (0..<spaceCount).map { fixture.space("s\($0)") }
    let perSpace = spaceCount == 1 ? 100 : 50
    let written = try await withThrowingTaskGroup(of: (String, UInt64, [UInt8]).self) {
      group in
      for index in 0..<perSpace * spaceCount {
        group.addTask {
          let space = spaces[index % spaceCount]
          let delta = [UInt8(index % 256), UInt8(index / 256)]
          let position = try await stores[(index / 3) % stores.count].append(
            space: space, delta: delta)
          return (space, position, delta)
        }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    for space in spaces {
      let mine = written.filter { $0.0 == space }
      #expect(mine.map(\.1).sorted() == Array(1...UInt64(perSpace)))
      let log = try await stores[2].read(space: space, after: 0)
      #expect(log.entries.map(\.position) == Array(1...UInt64(perSpace)))
      let byPosition = Dictionary(uniqueKeysWithValues: mine.map { ($0.1, $0.2) })
      #expect(log.entries.allSatisfy { byPosition[$0.position] == $0.delta })
    }
    for store in stores { await closeStore(store) }
  }

  @Test(arguments: StoreKind.available) func compactionReplacesThePrefixAndKeepsTheHead(
    kind: StoreKind
  ) async throws {
    let fixture = StoreFixture(kind)
    defer { fixture.remove() }
    let store = try await fixture.open()
    let a = fixture.space("a")
    for index in 0..<4 { _ = try await store.append(space: a, delta: [UInt8(index)]) }
    try await store.compact(space: a, state: [42], through: 3)
    // An older snapshot never replaces a newer one.
    try await store.compact(space: a, state: [7], through: 2)
    let behind = try await store.read(space: a, after: 1)
    #expect(behind.snapshot?.through == 3)
    #expect(behind.snapshot?.state == [42])
    #expect(behind.entries.map(\.position) == [4])
    let current = try await store.read(space: a, after: 3)
    #expect(current.snapshot == nil)
    #expect(current.entries.map(\.position) == [4])
    // Positions continue after the compacted prefix.
    #expect(try await store.append(space: a, delta: [5]) == 5)
    await closeStore(store)
    // And after a reopen.
    let reopened = try await fixture.open()
    #expect(try await reopened.append(space: a, delta: [6]) == 6)
    await closeStore(reopened)
  }

  /// A touch moves a device's time last heard later, never earlier, and changes nothing
  /// else: not what it has seen, not its retirement, and no record for a replica the
  /// space has none of.
  @Test(arguments: StoreKind.available) func aTouchMovesOnlyTheTimeLastHeard(kind: StoreKind)
    async throws
  {
    let fixture = StoreFixture(kind)
    defer { fixture.remove() }
    let store = try await fixture.open()
    let space = fixture.space("touch")
    let (phone, retired, stranger) = (
      ReplicaID(rawValue: 1), ReplicaID(rawValue: 2), ReplicaID(rawValue: 3)
    )
    var seen = CausalContext()
    seen.insert(Dot(replica: phone, counter: 7))
    try await store.record(
      space: space,
      devices: [
        RelayDeviceRecord(replica: phone, seen: seen, lastHeard: 10, expiry: 99, isRetired: false),
        RelayDeviceRecord(
          replica: retired, seen: seen, lastHeard: 10, expiry: 99, isRetired: true),
      ])
    try await store.touch(space: space, replicas: [phone, retired, stranger], lastHeard: 20)
    try await store.touch(space: space, replicas: [phone], lastHeard: 15)
    let records = try await store.devices(space: space).sorted {
      $0.replica.rawValue < $1.replica.rawValue
    }
    #expect(records.map(\.replica) == [phone, retired])
    #expect(records.map(\.lastHeard) == [20, 20])
    #expect(records.map(\.isRetired) == [false, true])
    #expect(records.allSatisfy { $0.seen == seen && $0.expiry == 99 })
    await closeStore(store)
  }

  /// Processes recording cuts at once (each cut one no other includes) lose none of them:
  /// the stored cut is the union, read, merged and written as one compare-and-swap. Before
  /// #48's fourteenth session the last write replaced the row, and a cut one process had
  /// forgotten by could vanish from the store. A smaller cut recorded later changes
  /// nothing.
  @Test(arguments: StoreKind.available) func cutsRecordedAtOnceAreMergedNeverReplaced(
    kind: StoreKind
  ) async throws {
    let fixture = StoreFixture(kind)
    defer { fixture.remove() }
    let stores = try await fixture.open(4)
    let space = fixture.space("cuts")
    let perStore = 12
    do {
      try await withThrowingTaskGroup(of: Void.self) { group in
        for (index, store) in stores.enumerated() {
          group.addTask {
            for step in 0..<perStore {
              // Each cut grows its own replica's counter: no two are comparable.
              var stable = CausalContext()
              stable.insert(
                replica: ReplicaID(rawValue: UInt64(index + 1)), counters: 1...UInt64(step + 1))
              var covering = stable
              covering.insert(
                Dot(replica: ReplicaID(rawValue: UInt64(100 + index)), counter: UInt64(step + 1)))
              try await store.recordStableCut(
                space: space, cut: RelayStableCut(stable: stable, covering: covering))
            }
          }
        }
        try await group.waitForAll()
      }
      let recorded = try #require(try await stores[0].recordedCut(space: space))
      for index in stores.indices {
        let replica = ReplicaID(rawValue: UInt64(index + 1))
        #expect(recorded.stable.counters(of: replica).contains(1...UInt64(perStore)))
        #expect(
          recorded.covering.counters(of: ReplicaID(rawValue: UInt64(100 + index)))
            .contains(UInt64(perStore)...UInt64(perStore)))
      }
      // A smaller cut (another process's older view) leaves the stored one as it is.
      let kept = try await stores[1].recordStableCut(
        space: space,
        cut: RelayStableCut(
          stable: CausalContext(dots: [Dot(replica: ReplicaID(rawValue: 1), counter: 1)]),
          covering: CausalContext(dots: [Dot(replica: ReplicaID(rawValue: 1), counter: 1)])))
      #expect(kept == recorded)
      #expect(try await stores[2].recordedCut(space: space) == recorded)
    } catch {
      for store in stores { await closeStore(store) }
      throw error
    }
    for store in stores { await closeStore(store) }
  }

  /// Several processes compacting while others append and read: the largest snapshot
  /// wins, and every read, whenever it runs, is a gap-free view (the store checks and
  /// throws on a gap) that ends at or past what it read before.
  @Test(arguments: StoreKind.available) func compactionsFromSeveralProcessesLoseNothing(
    kind: StoreKind
  ) async throws {
    try await Self.compact(kind: kind, processes: 2, steps: 30, every: 5)
  }

  /// Four processes writing at once, each compacting every other append: every write
  /// succeeds. (With SQLite, a statement that reads before it writes is refused with
  /// `SQLITE_BUSY_SNAPSHOT` when another process commits first, which no busy timeout
  /// waits out; the store runs it again. CI once failed on that refusal.)
  @Test(arguments: StoreKind.available) func writersContendingForOneSpaceAllSucceed(
    kind: StoreKind
  ) async throws {
    try await Self.compact(kind: kind, processes: 4, steps: 60, every: 2)
  }

  /// Opens `processes` stores on one database, each appending `steps` deltas to one space
  /// and compacting after every `every`-th of them while a reader per store checks the
  /// log; then checks that the log holds every position after the winning snapshot.
  private static func compact(kind: StoreKind, processes: Int, steps: Int, every: Int)
    async throws
  {
    let fixture = StoreFixture(kind)
    defer { fixture.remove() }
    var stores: [any RelayStore] = []
    // The stores close on every path: an error then fails the test with its reason,
    // where a connection left open would abort the whole test process (SQLiteNIO checks).
    do {
      for _ in 0..<processes { stores.append(try await fixture.open()) }
      try await compact(stores, space: fixture.space("a"), steps: steps, every: every)
    } catch {
      for store in stores { await closeStore(store) }
      throw error
    }
    for store in stores { await closeStore(store) }
  }

  private static func compact(
    _ stores: [any RelayStore], space: String, steps: Int, every: Int
  ) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
      for (index, store) in stores.enumerated() {
        group.addTask {
          for step in 0..<steps {
            let position = try await store.append(space: space, delta: [UInt8(step)])
            if step % every == index % every {
              // The state "through" a position is only a marker here: what matters is
              // which snapshot wins and which rows go.
              try await store.compact(space: space, state: [UInt8(index)], through: position)
            }
          }
        }
        group.addTask {
          var end: UInt64 = 0
          for _ in 0..<steps {
            let log = try await store.read(space: space, after: 0)
            #expect(log.end(after: 0) >= end)
            end = log.end(after: 0)
          }
        }
      }
      try await group.waitForAll()
    }
    let log = try await stores[0].read(space: space, after: 0)
    let through = try #require(log.snapshot?.through)
    #expect(log.entries.map(\.position) == Array(through + 1..<UInt64(stores.count * steps + 1)))
  }

  /// A node that cannot reach its database at start fails with a reason (the pool alone
  /// would retry for good), and a URL that is not PostgreSQL's is refused.
  @Test func anUnreachableDatabaseFailsTheStart() async throws {
    await #expect(throws: RelayStoreError.self) {
      // Port 1 on loopback: nothing listens there.
      _ = try await PostgresRelayStore.connect(
        url: "postgres://relay@127.0.0.1:1/converge", startTimeout: .milliseconds(500))
    }
    await #expect(throws: (any Error).self) {
      _ = try await PostgresRelayStore.connect(url: "mysql://relay@127.0.0.1/converge")
    }
  }

  /// A store that reports appends reports every process's, with the position and, when
  /// the report has room for it, the entry; one that cannot (SQLite) says so, and its
  /// relays poll.
  @Test(arguments: StoreKind.available) func appendsAreReportedToEveryProcess(kind: StoreKind)
    async throws
  {
    let fixture = StoreFixture(kind)
    defer { fixture.remove() }
    let (listener, appender) = (try await fixture.open(), try await fixture.open())
    guard let events = listener.events() else {
      #expect(kind == .sqlite)
      await closeStore(listener)
      await closeStore(appender)
      return
    }
    // A space name with a blank in it, as the payload separates its fields by blanks.
    let space = fixture.space("a b")
    var iterator = events.makeAsyncIterator()
    // The listener is ready once it reports that it (re)started listening.
    #expect(await iterator.next() == .resumed)
    let small: [UInt8] = [1, 0, 255]
    let large = [UInt8](repeating: 7, count: 8_000)
    let first = try await appender.append(space: space, delta: small)
    let second = try await appender.append(space: space, delta: large)
    var seen: [RelayStoreEvent] = []
    while seen.count < 2, let event = await iterator.next() {
      if case .appended(space, _, _) = event { seen.append(event) }
    }
    // A delta too large for a notification is left for the reader to read.
    #expect(
      seen == [
        .appended(space: space, position: first, delta: small),
        .appended(space: space, position: second, delta: nil),
      ])
    await closeStore(listener)
    await closeStore(appender)
  }
}
