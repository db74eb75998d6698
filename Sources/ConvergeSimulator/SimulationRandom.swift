import ConvergeTestSupport

/// The simulator's seedable random number generator: the test-support
/// ``SeededGenerator`` (xoshiro256**, seeded by SplitMix64). Each concern of a run (the
/// schedule, each replica's workload, the network) draws from its own stream derived
/// from the run's seed, so that shrinking one concern, such as the network's faults,
/// leaves the others' choices unchanged.
public typealias SimulationRandom = SeededGenerator

extension SeededGenerator {
  /// `true` with probability `probability`. Always draws one number, so a rate set to
  /// zero while shrinking leaves every later draw of the stream where it was.
  mutating func chance(_ probability: Double) -> Bool {
    Double.random(in: 0..<1, using: &self) < probability
  }
}
