import ConvergeRelayClient
import ConvergeTestSupport
import Testing

/// The one retry schedule of the relay and its client (``RelayBackoff``).
@Suite struct RelayBackoffTests {
  /// With no jitter the schedule is exactly half of `base · 2^attempt`, capped at half of
  /// `maximum`; with full jitter, all of it. A negative attempt counts as the first, an
  /// attempt far past the cap neither overflows nor grows, and a jitter out of 0…1 is
  /// clamped.
  @Test func theScheduleDoublesFromItsBaseUpToItsMaximum() {
    let backoff = RelayBackoff(base: .milliseconds(200), maximum: .seconds(30))
    let ceilings: [Duration] = [
      .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1_600),
      .milliseconds(3_200), .milliseconds(6_400), .milliseconds(12_800),
      .milliseconds(25_600), .seconds(30), .seconds(30), .seconds(30),
    ]
    #expect((0..<11).map { backoff.delay(attempt: $0, jitter: 1) } == ceilings)
    #expect((0..<11).map { backoff.delay(attempt: $0, jitter: 0) } == ceilings.map { $0 / 2 })
    #expect(backoff.delay(attempt: 3, jitter: 0.5) == .milliseconds(1_200))
    #expect(backoff.delay(attempt: -3, jitter: 0) == .milliseconds(100))
    #expect(backoff.delay(attempt: .max, jitter: 1) == .seconds(30))
    #expect(backoff.delay(attempt: 0, jitter: -1) == .milliseconds(100))
    #expect(backoff.delay(attempt: 0, jitter: 7) == .milliseconds(200))
  }

  /// Every delay lies between half its ceiling and its ceiling, and a seed replays the
  /// same schedule.
  @Test func theJitterStaysInItsBoundsAndASeedReplaysIt() {
    let seed = UInt64.random(in: 0 ... .max)
    print("RelayBackoffTests seed \(seed)")
    let backoff = RelayBackoff(base: .milliseconds(50), maximum: .seconds(1))
    var generator = SeededGenerator(seed: seed)
    var replay = SeededGenerator(seed: seed)
    var delays: [Duration] = []
    for attempt in 0..<200 {
      let ceiling = min(.seconds(1), .milliseconds(50) * (1 << min(attempt % 25, 20)))
      let delay = backoff.delay(attempt: attempt % 25, using: &generator)
      #expect(delay >= ceiling / 2 && delay <= ceiling, "seed \(seed), attempt \(attempt)")
      #expect(delay == backoff.delay(attempt: attempt % 25, using: &replay), "seed \(seed)")
      delays.append(delay)
    }
    // Jittered: 200 draws are not all the same fraction of their ceilings.
    #expect(Set(delays.suffix(100)).count > 1, "seed \(seed)")
  }
}
