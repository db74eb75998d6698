import Converge
import ConvergeRelay
import Testing

@Suite(.timeLimit(.minutes(1))) struct SQLiteStoreTests {
  @Test func appendsAreGapFreeAndReadBack() async throws {
    let directory = temporaryDirectory()
    let store = try await SQLiteRelayStore.open(path: directory + "/s.sqlite")
    var positions: [UInt64] = []
    for index in 0..<5 {
      positions.append(try await store.append(space: "a", delta: [UInt8(index)]))
    }
    _ = try await store.append(space: "b", delta: [9])
    #expect(positions == [1, 2, 3, 4, 5])
    let log = try await store.read(space: "a", after: 2)
    #expect(log.snapshot == nil)
    #expect(log.entries.map(\.position) == [3, 4, 5])
    #expect(log.entries.map(\.delta) == [[2], [3], [4]])
    #expect(try await store.read(space: "b", after: 0).entries.map(\.position) == [1])
    // Past the last position SQLite can hold there is nothing (and no overflow).
    for position in [UInt64(Int64.max) - 1, UInt64(Int64.max), .max] {
      #expect(try await store.read(space: "a", after: position).entries.isEmpty)
    }
    try await store.close()
  }

  @Test func concurrentAppendsTakeDistinctConsecutivePositions() async throws {
    let directory = temporaryDirectory()
    let store = try await SQLiteRelayStore.open(path: directory + "/s.sqlite")
    let positions = try await withThrowingTaskGroup(of: UInt64.self) { group in
      for index in 0..<50 {
        group.addTask { try await store.append(space: "a", delta: [UInt8(index)]) }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(positions.sorted() == Array(1...50))
    try await store.close()
  }

  @Test func compactionReplacesThePrefixAndKeepsTheHead() async throws {
    let directory = temporaryDirectory()
    let store = try await SQLiteRelayStore.open(path: directory + "/s.sqlite")
    for index in 0..<4 { _ = try await store.append(space: "a", delta: [UInt8(index)]) }
    try await store.compact(space: "a", state: [42], through: 3)
    // An older snapshot never replaces a newer one.
    try await store.compact(space: "a", state: [7], through: 2)
    let behind = try await store.read(space: "a", after: 1)
    #expect(behind.snapshot?.through == 3)
    #expect(behind.snapshot?.state == [42])
    #expect(behind.entries.map(\.position) == [4])
    let current = try await store.read(space: "a", after: 3)
    #expect(current.snapshot == nil)
    #expect(current.entries.map(\.position) == [4])
    // Positions continue after the compacted prefix.
    #expect(try await store.append(space: "a", delta: [5]) == 5)
    try await store.close()
    // And after a reopen.
    let reopened = try await SQLiteRelayStore.open(path: directory + "/s.sqlite")
    #expect(try await reopened.append(space: "a", delta: [6]) == 6)
    try await reopened.close()
  }
}
