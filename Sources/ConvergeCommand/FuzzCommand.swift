import ConvergeTestSupport
import Foundation

/// `converge fuzz [--seconds N] [--workers N] [--seed S]`: the property-based fuzz runner.
/// Runs every law and replica-script property on random seeds on every core, shrinks a
/// failure and prints the command that replays it:
/// `converge fuzz --property NAME --seed S --size N`.
enum FuzzCommand {
  struct Options {
    var seconds = 60.0
    var workers = ProcessInfo.processInfo.activeProcessorCount
    var seed = UInt64(Date().timeIntervalSince1970 * 1000)
    var propertyName: String?
    var size: Int?
  }

  static func run(_ arguments: [String]) -> Int32 {
    guard
      let options = CommandOption.parse(
        arguments, into: Options(),
        [
          .value("--seconds", \.seconds, .seconds),
          .value("--workers", \.workers, .positive),
          .value("--seed", \.seed, .number),
          .value("--property", \.propertyName, .text),
          .value("--size", \.size, .positive),
        ])?.options
    else { return usage() }
    let (seed, size) = (options.seed, options.size)
    let properties = PropertyRunner.standardProperties
    if let propertyName = options.propertyName {
      guard let property = properties.first(where: { $0.name == propertyName }) else {
        FileHandleOutput.error("unknown property \(propertyName); known: \(properties.map(\.name))")
        return 2
      }
      if let failure = PropertyRunner.replay(
        property, seed: seed, size: size ?? property.maximumSize)
      {
        print(failure)
        return 1
      }
      print("property \(propertyName) holds for seed \(seed), size \(size ?? property.maximumSize)")
      return 0
    }
    print(
      "fuzzing \(properties.count) properties for \(Int(options.seconds)) s on \(options.workers) workers, first seed \(seed)"
    )
    let summary = PropertyRunner.run(
      properties, seconds: options.seconds, workers: options.workers, firstSeed: seed)
    for (name, count) in summary.cases.sorted(by: { $0.key < $1.key }) {
      print("  \(name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(count) cases")
    }
    let total = summary.cases.values.reduce(0, +)
    print(
      "\(total) cases in \(String(format: "%.1f", summary.seconds)) s, \(summary.failures.count) failures"
    )
    for failure in summary.failures { print(failure) }
    return summary.failures.isEmpty ? 0 : 1
  }

  private static func usage() -> Int32 {
    FileHandleOutput.error(
      "usage: converge fuzz [--seconds N] [--workers N] [--seed S] | --property NAME --seed S [--size N]"
    )
    return 2
  }
}
