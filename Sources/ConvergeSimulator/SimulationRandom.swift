/// The simulator's seedable random number generator (xoshiro256**, seeded by SplitMix64).
///
/// The simulator depends on `Converge` only, so it carries its own generator rather than
/// the test-support one. Each concern of a run (the schedule, each replica's workload,
/// the network) draws from its own stream derived from the run's seed, so that shrinking
/// one concern, such as the network's faults, leaves the others' choices unchanged.
public struct SimulationRandom: RandomNumberGenerator, Sendable {
  private var state: (UInt64, UInt64, UInt64, UInt64)

  /// A generator for `seed`, optionally one of several independent streams of it.
  public init(seed: UInt64, stream: UInt64 = 0) {
    var splitMix = seed ^ (stream &* 0xD1B5_4A32_D192_ED03)
    func nextSplitMix() -> UInt64 {
      splitMix &+= 0x9E37_79B9_7F4A_7C15
      var z = splitMix
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    state = (nextSplitMix(), nextSplitMix(), nextSplitMix(), nextSplitMix())
  }

  public mutating func next() -> UInt64 {
    let result = ((state.1 &* 5) << 7 | (state.1 &* 5) >> 57) &* 9
    let shifted = state.1 << 17
    state.2 ^= state.0
    state.3 ^= state.1
    state.1 ^= state.2
    state.0 ^= state.3
    state.2 ^= shifted
    state.3 = state.3 << 45 | state.3 >> 19
    return result
  }

  /// `true` with probability `probability`. Always draws one number, so a rate set to
  /// zero while shrinking leaves every later draw of the stream where it was.
  mutating func chance(_ probability: Double) -> Bool {
    return Double.random(in: 0..<1, using: &self) < probability
  }
}
