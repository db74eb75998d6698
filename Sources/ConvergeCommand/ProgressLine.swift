import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A live progress line on standard error, for runs long enough to wonder about: shown
/// only when standard error is a terminal and only after a couple of seconds, so a pipe,
/// a log or `--json` output never sees it.
final class ProgressLine {
  private let enabled: Bool
  private let start = ContinuousClock.now
  private var shown = false

  init(enabled: Bool) {
    self.enabled = enabled && isatty(2) == 1
  }

  /// Rewrites the line with `status`, the rate of `operations` and the elapsed time.
  func update(_ status: String, operations: Int) {
    guard enabled else { return }
    let elapsed = (ContinuousClock.now - start).components
    let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    guard seconds >= 2 else { return }
    shown = true
    let rate = Int(Double(operations) / seconds)
    let text = "\r\(status), \(rate) operations/s, \(Int(seconds)) s elapsed\u{1B}[K"
    FileHandle.standardError.write(Data(text.utf8))
  }

  /// Erases the line if it was shown.
  func clear() {
    guard shown else { return }
    FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
  }
}
