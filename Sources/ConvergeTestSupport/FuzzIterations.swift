#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// How many random cases a property test runs.
///
/// The fast tier in `swift test` runs `base` cases. Setting the environment variable
/// `CONVERGE_FUZZ_ITERATIONS` to a number multiplies every property's count by it for long
/// runs (`CONVERGE_FUZZ_ITERATIONS=100 swift test`).
public func fuzzIterations(_ base: Int) -> Int {
  guard let text = ProcessInfo.processInfo.environment["CONVERGE_FUZZ_ITERATIONS"],
    let factor = Int(text), factor > 0
  else { return base }
  let (product, overflow) = base.multipliedReportingOverflow(by: factor)
  return overflow ? Int.max : product
}

/// The first seed of a property test's run: `CONVERGE_SEED` when set (to replay a failure
/// printed by a test), otherwise `fallback`.
public func baseSeed(_ fallback: UInt64) -> UInt64 {
  guard let text = ProcessInfo.processInfo.environment["CONVERGE_SEED"],
    let seed = UInt64(text)
  else { return fallback }
  return seed
}
