import Converge
import ConvergeTestSupport
import Testing

@testable import ConvergeSimulator

/// Users who press Undo and Redo on their own edits while remote edits keep arriving over
/// a hostile network, through their devices' stores (restarts included): every run
/// converges, and the presses really took steps back.
@Suite struct SimulatorUndoTests {
  @Test(arguments: WorkloadKind.allCases)
  func undoInterleavedWithRemoteEditsConverges(workload: WorkloadKind) throws {
    var presses = 0
    try forEachSeed(count: 3, base: 0x0D_0000) { random in
      let seed = random.next()
      var configuration = SimulatorTests.small(seed: seed, workload: workload, operations: 1_200)
      configuration.undo = 0.15
      configuration.restarts = 0.005
      let report = Simulation(configuration).run()
      #expect(report.converged, "seed \(seed): \(report.text)")
      presses += report.undoPresses
    }
    #expect(presses > 100)
  }

  @Test func theUndoRateReplaysFromItsArguments() {
    var configuration = SimulatorTests.small(seed: 3, workload: .notes, operations: 10)
    configuration.undo = 0.25
    #expect(configuration.arguments.suffix(2) == ["--undo", "0.25"])
  }
}
