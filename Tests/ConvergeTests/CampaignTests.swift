import Converge
import ConvergeSimulator
import ConvergeTestSupport
import Foundation
import Testing

/// Campaigns of random configurations: a fast tier of seeds in every `swift test`, a long
/// tier behind `CONVERGE_CAMPAIGN_RUNS=N`, and a campaign that finds and shrinks a bug.
@Suite struct CampaignTests {
  /// Fixed campaign seeds, a few small runs each: every workload and fault mix the
  /// draws reach, frames and live pushes on and off.
  @Test(arguments: [UInt64(1), 2, 3])
  func fastTier(seed: UInt64) {
    let campaign = Campaign(seed: seed, maximumOperations: 300)
    let report = campaign.run(shouldStop: { $0.runs >= 3 })
    #expect(report.failures == 0, "campaign seed \(seed): \(report.text)")
    #expect(report.runs == 3 && report.operations >= 300)
  }

  /// The long tier: `CONVERGE_CAMPAIGN_RUNS=N swift test --filter CampaignTests`.
  @Test func longTier() {
    let runs = environmentCount("CONVERGE_CAMPAIGN_RUNS")
    guard runs > 0 else { return }
    let seed = UInt64(environmentCount("CONVERGE_CAMPAIGN_SEED"))
    let report = Campaign(seed: seed).run(shouldStop: { $0.runs >= runs })
    #expect(report.failures == 0, "campaign seed \(seed): \(report.text)")
  }

  @Test func configurationsCoverTheSpaceAndReplay() {
    let campaign = Campaign(seed: 9)
    let configurations = (0..<200).map(campaign.configuration)
    #expect(configurations == (0..<200).map(Campaign(seed: 9).configuration))
    #expect(Set(configurations.map(\.replicas)) == Set(2...16))
    #expect(Set(configurations.map(\.workload)) == Set(WorkloadKind.allCases))
    #expect(configurations.contains { $0.framedPushes } && configurations.contains { !$0.livePush })
    #expect(configurations.allSatisfy { $0.faults.loss <= 0.5 && $0.antiEntropyInterval <= 200 })
    // The store's path as hard as the network's: at least a third of the runs restart
    // devices, at rates up to 0.05, over every group-commit interval; some hold a library.
    let restarting = configurations.filter { $0.restarts > 0 }
    #expect(restarting.count * 3 >= configurations.count)
    #expect(restarting.allSatisfy { $0.restarts <= 0.05 })
    #expect(restarting.contains { $0.restarts >= 0.01 })
    #expect(Set(restarting.map(\.syncInterval)) == [0, 50, 200])
    #expect(configurations.contains { $0.library > 0 && $0.restarts > 0 })
  }

  /// A broken merge (every replica but the first ignores deltas that delete an entity)
  /// is found by a campaign, which stops there and returns a shrunk reproduction.
  @Test func aCampaignStopsAtTheFirstFailureShrunk() throws {
    let hooks = SimulationHooks { receiver, delta, document in
      guard receiver != 0 else { return true }
      var after = document
      after.apply(delta)
      return after.keys.count >= document.keys.count
    }
    let report = Campaign(seed: 4, maximumOperations: 300, hooks: hooks, shrinkRuns: 12)
      .run(shouldStop: { $0.runs >= 20 })
    let failure = try #require(report.failure, "\(report.text)")
    #expect(report.failures == 1)
    #expect(!failure.converged)
    let shrunk = try #require(report.shrunk)
    #expect(!shrunk.report.converged)
    #expect(shrunk.shrunk.operations <= failure.operations)
    #expect(report.text.contains("replay: converge simulate --seed"))
  }
}

/// The value of an environment variable as a count, 0 when unset or not a number.
private func environmentCount(_ name: String) -> Int {
  guard let value = getenv(name) else { return 0 }
  return Int(String(cString: value)) ?? 0
}
