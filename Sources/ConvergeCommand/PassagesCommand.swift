import ConvergeTestSupport

/// `converge passages [--cases N] [--seed S]`: the random passage cases (two to four
/// replicas typing one passage each at one position, forward or backward), counted as
/// interleaved or diverged through the public `SharedText` API and through the reference FugueMax.
enum PassagesCommand {
  struct Options {
    var cases = 2_000
    var seed: UInt64 = 0xFA6E
  }

  static func run(_ arguments: [String]) -> Int32 {
    guard
      let options = CommandOption.parse(
        arguments, into: Options(),
        [.value("--cases", \.cases, .positive), .value("--seed", \.seed, .number)]
      )?.options
    else { return usage() }
    let (cases, seed) = (options.cases, options.seed)
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
