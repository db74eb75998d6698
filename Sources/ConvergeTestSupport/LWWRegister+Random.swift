import Converge

extension LWWRegister: RandomlyMutable {
  /// A random write by `replica`, which returns its delta.
  ///
  /// Most writers first observe the current stamp's timestamp, as a replica's clock does
  /// when it merges; the others write with whatever their skewed clock says, so some
  /// writes lose on arrival and are ignored. Rarely, the clock observes a forged
  /// ``Timestamp/max`` and saturates, so stamps then order by their dots alone.
  public static func randomMutation(
    by replica: inout SimulatedReplica<LWWRegister>, using generator: inout SeededGenerator,
    content value: (inout SeededGenerator) -> Value
  ) -> LWWRegister {
    if let stamp = replica.state.stamp, Int.random(in: 0..<10, using: &generator) < 8 {
      replica.clock.observe(stamp.timestamp)
    }
    if Int.random(in: 0..<300, using: &generator) == 0 { replica.clock.observe(.max) }
    let stamp = Stamp(timestamp: replica.tick(), dot: replica.nextDot())
    return replica.state.set(value(&generator), stamp: stamp)
  }
}
