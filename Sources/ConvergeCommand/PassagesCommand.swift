import ConvergeTestSupport

/// `converge passages [--cases N] [--seed S]`: the random passage cases (two to four
/// replicas typing one passage each at one position, forward or backward), counted as
/// interleaved or diverged through the public `SharedText` API and through the reference FugueMax.
enum PassagesCommand {
  static func run(_ arguments: [String]) -> Int32 {
    var cases = 2_000
    var seed: UInt64 = 0xFA6E
    var index = 0
    while index < arguments.count {
      let value = index + 1 < arguments.count ? arguments[index + 1] : nil
      switch arguments[index] {
      case "--cases":
        guard let parsed = value.flatMap({ Int($0) }), parsed > 0 else { return usage() }
        cases = parsed
      case "--seed":
        guard let parsed = value.flatMap({ UInt64($0) }) else { return usage() }
        seed = parsed
      default:
        return usage()
      }
      index += 2
    }
    let text = PassageTally.run(count: cases, seed: seed) { $0.mergedWithText(using: &$1) }
    let reference = PassageTally.run(count: cases, seed: seed) {
      $0.mergedWithReference(using: &$1)
    }
    print("seed \(seed)")
    print("Text:                \(text)")
    print("reference FugueMax:  \(reference)")
    return text.interleaved == 0 && text.diverged == 0 && reference.diverged == 0 ? 0 : 1
  }

  private static func usage() -> Int32 {
    FileHandleOutput.error("usage: converge passages [--cases N] [--seed S]")
    return 2
  }
}
