import ConvergeTestSupport
import Foundation

/// `converge fuzz [--seconds N] [--workers N] [--seed S]`: the property-based fuzz runner.
/// Runs every law and replica-script property on random seeds on every core, shrinks a
/// failure and prints the command that replays it:
/// `converge fuzz --property NAME --seed S --size N`.
enum FuzzCommand {
  static func run(_ arguments: [String]) -> Int32 {
    var seconds = 60.0
    var workers = ProcessInfo.processInfo.activeProcessorCount
    var seed = UInt64(Date().timeIntervalSince1970 * 1000)
    var propertyName: String?
    var size: Int?
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      let value = rest.first
      switch argument {
      case "--seconds":
        guard let parsed = value.flatMap(Double.init), parsed > 0 else { return usage() }
        seconds = parsed
      case "--workers":
        guard let parsed = value.flatMap({ Int($0) }), parsed > 0 else { return usage() }
        workers = parsed
      case "--seed":
        guard let parsed = value.flatMap({ UInt64($0) }) else { return usage() }
        seed = parsed
      case "--property":
        guard let value else { return usage() }
        propertyName = value
      case "--size":
        guard let parsed = value.flatMap({ Int($0) }), parsed > 0 else { return usage() }
        size = parsed
      default:
        return usage()
      }
      rest = rest.dropFirst()
    }
    let properties = PropertyRunner.standardProperties
    if let propertyName {
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
      "fuzzing \(properties.count) properties for \(Int(seconds)) s on \(workers) workers, first seed \(seed)"
    )
    let summary = PropertyRunner.run(
      properties, seconds: seconds, workers: workers, firstSeed: seed)
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
