import Converge

/// A small, fast, seedable random number generator (xoshiro256**, seeded by SplitMix64).
///
/// Every random test draws from one of these, so a failure is replayed by its seed alone.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
  private var state: (UInt64, UInt64, UInt64, UInt64)

  /// The seed this generator started from.
  public let seed: UInt64

  /// A generator whose whole sequence is determined by `seed`.
  /// A generator for `seed`, or for one of several independent streams of it (stream 0
  /// is the plain seed), so that separate concerns of a run draw independently.
  public init(seed: UInt64, stream: UInt64 = 0) {
    self.seed = seed
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

  /// The next 64 random bits.
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
}
