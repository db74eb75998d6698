/// Runs `body` once per seed, for `fuzzIterations(count)` consecutive seeds starting at
/// `baseSeed(base)`, each with a fresh ``SeededGenerator``.
///
/// An error thrown by `body` stops the run and is rethrown with its seed and the command
/// that replays it (`CONVERGE_SEED=N swift test --filter <test>`): a ``LawViolation``
/// gets its `seed` and `test` filled in, any other error is wrapped in a
/// ``SeededFailure``.
///
/// ```swift
/// @Test func mergeIsAJoin() throws {
///   try forEachSeed(count: 1_000, base: 0x5E7) { random in
///     let network = ORSet.randomNetwork(using: &random) { UInt8.random(in: 0..<4, using: &$0) }
///     let states = network.replicas.map(\.state)
///     try checkJoinLaws(states[0], states[1], states[2])
///   }
/// }
/// ```
public func forEachSeed(
  count: Int, base: UInt64, test: String = #function,
  _ body: (inout SeededGenerator) throws -> Void
) throws {
  let name = String(test.prefix { $0 != "(" })
  let start = baseSeed(base)
  let iterations = fuzzIterations(count)
  var offset: UInt64 = 0
  for _ in 0..<iterations {
    let seed = start &+ offset
    offset &+= 1
    var generator = SeededGenerator(seed: seed)
    do {
      try body(&generator)
    } catch var violation as LawViolation {
      violation.seed = violation.seed ?? seed
      violation.test = violation.test ?? name
      throw violation
    } catch {
      throw SeededFailure(seed: seed, test: name, underlying: error)
    }
  }
}
