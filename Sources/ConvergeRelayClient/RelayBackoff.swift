/// Delays between retries: `base · 2^attempt`, at most `maximum`, each scaled by a random
/// factor in 0.5…1 so that devices (or relay nodes) retrying after one outage do not
/// come back in step. Every retry loop of the relay and its client waits with it: the
/// client's reconnection, the relay's LISTEN connection to PostgreSQL, a SQLite write
/// refused by a concurrent writer, the bench's devices.
///
/// ```swift
/// var attempt = 0
/// while !Task.isCancelled {
///   if (try? await connect()) != nil {
///     attempt = 0
///     continue
///   }
///   try? await Task.sleep(for: backoff.delay(attempt: attempt))
///   attempt += 1
/// }
/// ```
///
/// A caller resets its attempt count once a try got an answer, so the next failure
/// starts from `base` again.
public struct RelayBackoff: Sendable, Equatable {
  /// The delay before the first retry, before jitter.
  public var base: Duration
  /// The longest delay, before jitter.
  public var maximum: Duration

  public init(base: Duration = .milliseconds(200), maximum: Duration = .seconds(30)) {
    self.base = base
    self.maximum = maximum
  }

  /// The delay before retry `attempt` (0 for the first): `min(maximum, base · 2^attempt)`
  /// times `0.5 + jitter / 2`, so `jitter` 0 gives half the ceiling and 1 all of it (it is
  /// clamped to 0…1). A negative attempt counts as 0; the doubling stops at 2^20.
  public func delay(attempt: Int, jitter: Double) -> Duration {
    min(maximum, ceiling(attempt: attempt)) * (0.5 + min(max(jitter, 0), 1) / 2)
  }

  /// ``delay(attempt:jitter:)`` with a jitter drawn from `generator` (a seeded one makes
  /// the schedule reproducible).
  public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
    delay(attempt: attempt, jitter: Double.random(in: 0...1, using: &generator))
  }

  /// ``delay(attempt:using:)`` with the system's generator.
  public func delay(attempt: Int) -> Duration {
    var generator = SystemRandomNumberGenerator()
    return delay(attempt: attempt, using: &generator)
  }

  /// `base · 2^attempt`, the exponent clamped to 0…20 so the product cannot overflow a
  /// `Duration` for any sensible base.
  private func ceiling(attempt: Int) -> Duration {
    base * (1 << min(max(attempt, 0), 20))
  }
}
