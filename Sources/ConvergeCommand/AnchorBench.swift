import Converge
import ConvergeTraces

/// Anchors in the trace's final text: the median time to resolve one (its scalar and its
/// UTF-16 offset), over anchors bound to characters spread through the text.
enum AnchorBench {
  static func resolveNanoseconds(_ trace: SequentialTrace, runs: Int) -> Double {
    let text = trace.replayLocally()
    let count = text.count
    guard count > 0 else { return 0 }
    let anchors = (0..<1_000).map { text.anchor(at: ($0 &* 7_919) % count) }
    let clock = ContinuousClock()
    var samples: [Double] = []
    var checksum = 0
    for _ in 0..<max(1, runs) {
      let start = clock.now
      for anchor in anchors {
        checksum &+= (text.position(of: anchor) ?? 0) &+ (text.utf16Offset(of: anchor) ?? 0)
      }
      let elapsed = clock.now - start
      let seconds =
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
      samples.append(seconds * 1e9 / Double(anchors.count * 2))
    }
    // Keeps the loop from being optimized away.
    if checksum == .min { print(checksum) }
    return samples.sorted()[samples.count / 2]
  }
}
