import Converge
import ConvergeSimulator
import Foundation
import Testing

/// The schedule shrinker: delta debugging over operations and sends, and the schedule
/// file that replays its result.
@Suite struct ScheduleShrinkTests {
  /// The injected bug: replica 1 ignores every delta that would remove an entity.
  static let replicaOneMissesDeletes = SimulationHooks { receiver, delta, document in
    guard receiver == 1 else { return true }
    var after = document
    after.apply(delta)
    let remaining = Set(after.keys)
    return document.keys.allSatisfy { remaining.contains($0) }
  }

  /// An injected bug, replica 1 ignoring every delta that deletes an entity, in a run of
  /// hundreds of operations over a hostile network with frames: the shrinker must bring
  /// it to at most 50 operations, and the schedule file must replay the failure.
  @Test func anInjectedBugShrinksToAFewOperations() throws {
    let hooks = Self.replicaOneMissesDeletes
    let original = SimulationConfiguration(
      seed: 9, replicas: 3, operations: 150, workload: .notes, faults: .hostile,
      framedPushes: true, antiEntropyInterval: 25)
    let report = Simulation(original, hooks: hooks).run()
    #expect(!report.converged, "seed \(original.seed) no longer deletes a note: pick another")
    let result = Shrinker(hooks: hooks, maximumRuns: 400).shrink(original)
    #expect(!result.report.converged, "seed \(original.seed)")
    #expect(result.report.operations <= 50, "seed \(original.seed): \(result.summary)")
    let replayed = try SimulationSchedule.configuration(parsing: result.schedule)
    #expect(replayed == result.shrunk)
    #expect(!Simulation(replayed, hooks: hooks).run().converged)
    #expect(Simulation(replayed).run().converged, "the shrunk schedule fails only by the bug")
  }

  /// A bug that needs a stale restore (backups rolled back in place keep the files'
  /// identities, so a store cannot tell and issues a dot twice): the shrinker keeps only
  /// the restarts the failure needs, at least one of them a stale restore, and the
  /// schedule file replays exactly that.
  @Test func restartsShrinkToThoseTheFailureNeeds() throws {
    let hooks = SimulationHooks(restoresInPlace: true)
    var found: SimulationConfiguration?
    for seed in UInt64(0x52_2000)..<0x52_2010 {
      var configuration = SimulationConfiguration(
        seed: seed, replicas: 3, operations: 300, workload: .notes, faults: .hostile)
      configuration.restarts = 0.05
      if !Simulation(configuration, hooks: hooks).run().converged {
        found = configuration
        break
      }
    }
    let original = try #require(found, "no seed from 0x522000 issued a dot twice")
    let before = Simulation(original, hooks: hooks).run()
    let result = Shrinker(hooks: hooks, maximumRuns: 200).shrink(original)
    #expect(!result.report.converged, "seed \(original.seed): \(result.summary)")
    #expect(result.report.staleRestores >= 1, "seed \(original.seed): \(result.summary)")
    #expect(
      result.report.restarts < before.restarts && result.report.restarts <= 4,
      "seed \(original.seed): \(before.restarts) restarts → \(result.summary)")
    let replayed = try SimulationSchedule.configuration(parsing: result.schedule)
    #expect(replayed == result.shrunk)
    let again = Simulation(replayed, hooks: hooks).run()
    #expect(!again.converged)
    #expect(again.restartNumbers == result.report.restartNumbers)
    #expect(again.staleRestoreNumbers == result.report.staleRestoreNumbers)
  }

  /// A schedule of version 1 (before restarts were cut) still reads, with every restart.
  @Test func aVersionOneScheduleStillReads() throws {
    let text = SimulationSchedule.text(of: SimulationConfiguration(seed: 3, restarts: 0.01))
      .replacingOccurrences(of: "converge-schedule 2", with: "converge-schedule 1")
      .split(separator: "\n").filter {
        !$0.hasPrefix("undo") && !$0.hasPrefix("restarts-kept") && !$0.hasPrefix("restores-plain")
      }.joined(separator: "\n")
    let configuration = try SimulationSchedule.configuration(parsing: text)
    #expect(configuration.cuts.keptRestarts == nil && configuration.restarts == 0.01)
  }

  @Test func ddminKeepsEachNeededStepAndNoOther() {
    let needed: Set = [3, 17, 18, 90]
    var calls = 0
    let result = DeltaDebugging.minimize(Array(0..<100)) { items in
      calls += 1
      return needed.isSubset(of: items)
    }
    #expect(result == [3, 17, 18, 90])
    // A spent budget ends the search with the best found so far.
    let cut = DeltaDebugging.minimize(Array(0..<100)) { _ in nil }
    #expect(cut == Array(0..<100))
    #expect(calls < 200)
  }

  @Test func schedulesRoundTripAndRefuseOtherVersions() throws {
    var configuration = SimulationConfiguration(
      seed: 42, replicas: 3, operations: 20, workload: .tasks, faults: .hostile,
      livePush: true, framedPushes: true, antiEntropyInterval: 7, messageLimit: 9)
    configuration.cuts = ScheduleCuts(
      skippedOperations: Set([0, 1, 2, 5, 6, 19]), droppedMessages: Set([4, 7, 8, 9]))
    let text = SimulationSchedule.text(of: configuration)
    #expect(text.contains("operations-kept 3-4,7-18\n"))
    #expect(text.contains("messages-dropped 4,7-9\n"))
    #expect(try SimulationSchedule.configuration(parsing: text) == configuration)
    let plain = SimulationConfiguration(seed: 3)
    #expect(
      try SimulationSchedule.configuration(parsing: SimulationSchedule.text(of: plain)) == plain)
    #expect(throws: ScheduleError.self) {
      try SimulationSchedule.configuration(
        parsing: text.replacingOccurrences(of: "converge-schedule 2", with: "converge-schedule 3"))
    }
    #expect(throws: ScheduleError.self) {
      try SimulationSchedule.configuration(
        parsing: text.replacingOccurrences(
          of: "messages-dropped 4,7-9", with: "messages-dropped 9-4"))
    }
  }
}
