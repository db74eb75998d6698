import ConvergeRelayClient
import Testing

/// ``RelayBackoff``'s doc comment sample, compiled and run: the attempt count grows with
/// each refused try and starts again from zero once a try got an answer. (The backoff's
/// schedule itself is tested in the relay package, `RelayBackoffTests`.)
@Suite struct RelayBackoffSampleTests {
  struct Refused: Error {}

  @Test func theRetryLoopResetsItsAttemptsOnceATryIsAnswered() async {
    let backoff = RelayBackoff(base: .milliseconds(1), maximum: .milliseconds(2))
    let outcome = await Task { () -> (tries: Int, attempt: Int) in
      var tries = 0
      // Refused twice, then answered; the answer ends the loop by cancelling its task.
      func connect() async throws {
        tries += 1
        if tries < 3 { throw Refused() }
        withUnsafeCurrentTask { $0?.cancel() }
      }
      var attempt = 0
      while !Task.isCancelled {
        if (try? await connect()) != nil {
          attempt = 0
          continue
        }
        try? await Task.sleep(for: backoff.delay(attempt: attempt))
        attempt += 1
      }
      return (tries, attempt)
    }.value
    #expect(outcome.tries == 3)
    #expect(outcome.attempt == 0)
  }
}
