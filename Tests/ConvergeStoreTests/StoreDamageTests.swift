import Converge
import ConvergeTestSupport
import Testing

@testable import ConvergeStore

@Suite struct StoreDamageTests {
  /// A store whose log holds one record per typed character, its log bytes, and the
  /// document after each prefix of records.
  func loggedStore() throws -> (log: [UInt8], states: [Document], boundaries: [Int]) {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    var states = [store.replica.document]
    var boundaries = [0]
    for scalar in "héllo, wörld 🙂".unicodeScalars {
      type(String(scalar), into: store)
      try store.flush()
      states.append(store.replica.document)
      boundaries.append(store.logBytes)
    }
    return (fileSystem.bytes(directory + "/" + DocumentStore.logName(0)) ?? [], states, boundaries)
  }

  func open(log: [UInt8]) throws -> DocumentStore {
    let fileSystem = MemoryFileSystem()
    try fileSystem.write(log, to: directory + "/" + DocumentStore.logName(0))
    try fileSystem.sync(directory + "/" + DocumentStore.logName(0))
    try fileSystem.syncDirectory(directory)
    return try DocumentStore(directory: directory, configuration: configuration(fileSystem))
  }

  @Test func aLogCutAtEveryByteOpensToItsLastWholeRecord() throws {
    let (log, states, boundaries) = try loggedStore()
    #expect(boundaries.last == log.count)
    for offset in 0...log.count {
      let whole = boundaries.lastIndex { $0 <= offset } ?? 0
      let store = try open(log: Array(log.prefix(offset)))
      #expect(store.replica.document == states[whole], "offset \(offset)")
      let cut = boundaries[whole] < offset
      #expect(store.recovery.cutTails.count == (cut ? 1 : 0), "offset \(offset)")
      #expect(store.recovery.cutTails.first?.keptBytes ?? boundaries[whole] == boundaries[whole])
    }
  }

  @Test func everyBitFlipInTheLastRecordOpensToTheRecordsBeforeIt() throws {
    let (log, states, boundaries) = try loggedStore()
    let lastStart = boundaries[boundaries.count - 2]
    for bit in (lastStart * 8)..<(log.count * 8) {
      var damaged = log
      damaged[bit / 8] ^= 1 << (bit % 8)
      let store = try open(log: damaged)
      #expect(store.replica.document == states[states.count - 2], "bit \(bit)")
      #expect(store.recovery.cutTails.count == 1, "bit \(bit)")
      // The cut is durable: a second open finds nothing left to cut.
      try store.close()
    }
  }

  /// Fails the n-th write, sync or rename of a workload (typing, flushes, compactions,
  /// acknowledgements), for every n the workload reaches; then cuts the power and checks
  /// that every delta the store acknowledged is still there.
  @Test(arguments: MemoryFileSystem.Operation.allCases)
  func everyFailedOperationIsTypedAndLosesNothingAcknowledged(
    _ operation: MemoryFileSystem.Operation
  ) throws {
    var index = 0
    while true {
      let fileSystem = MemoryFileSystem()
      let clock = ManualClock()
      let store = try DocumentStore(
        directory: directory, configuration: configuration(fileSystem, clock))
      var acknowledged: [[UInt8]] = []
      store.onDurable = { acknowledged += $0 }
      fileSystem.fail(operation, at: index)
      var errors: [StoreError] = []
      for step in 1...30 {
        clock.now += .milliseconds(70)
        type(String(step % 10), into: store)
        if let error = store.lastError, errors.last != error { errors.append(error) }
        do {
          if step % 4 == 0 { try store.flush() }
          if step % 11 == 0 { try store.compact() }
          if step % 13 == 0 {
            try store.recordAcknowledgement(store.replica.context, from: "relay")
          }
        } catch {
          errors.append(error)
        }
        if let error = store.lastError, errors.last != error { errors.append(error) }
      }
      let reached = fileSystem.calls(operation) > index
      if reached {
        #expect(!errors.isEmpty, "\(operation) #\(index) failed silently")
        #expect(
          errors.allSatisfy { if case .fileSystem = $0 { true } else { false } },
          "\(operation) #\(index)")
      }
      fileSystem.crash()
      let reopened = try DocumentStore(
        directory: directory, configuration: configuration(fileSystem))
      for bytes in acknowledged {
        let delta = try DocumentDelta(decoding: bytes)
        #expect(
          reopened.replica.context.includes(delta.context),
          "\(operation) #\(index) lost an acknowledged delta")
      }
      #expect(acknowledged.count > 20, "\(operation) #\(index): the store did not recover")
      if !reached { break }
      index += 1
    }
    #expect(index > 3)
  }

  /// Cuts the power at every file operation of a compaction (the failed operation and
  /// everything after it never happen) and checks that each state opens whole.
  @Test func aCrashAtEveryStepOfACompactionRecovers() throws {
    var step = 0
    while true {
      let fileSystem = MemoryFileSystem()
      let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
      type("before", into: store)
      try store.flush()
      try store.compact()
      type(" after", into: store)
      try store.flush()
      let expected = store.replica.document
      fileSystem.failAnyOperation(at: step)
      // Done once the compaction also recorded its generation and removed the files it
      // superseded (a failure there is reported in `lastError`, not thrown).
      let completed = (try? store.compact()) != nil && store.lastError == nil
      fileSystem.crash()
      let reopened = try DocumentStore(
        directory: directory, configuration: configuration(fileSystem))
      #expect(reopened.replica.document == expected, "crash at operation \(step)")
      #expect(reopened.recovery.damagedSnapshots.isEmpty, "crash at operation \(step)")
      #expect(reopened.recovery.identityChange == nil, "crash at operation \(step)")
      #expect(reopened.recovery.losses.isEmpty, "crash at operation \(step)")
      if completed { break }
      step += 1
    }
    // Write and sync the snapshot, write and sync its tag, rename the snapshot, write
    // and sync the new log, sync the directory; then write, sync and rename the
    // generation record and sync the directory after removing the superseded files: a
    // crash at each of the twelve operations.
    #expect(step == 12)
  }
}
