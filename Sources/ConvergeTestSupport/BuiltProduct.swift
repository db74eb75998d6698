import Foundation

/// An executable this package built, run as a user would: for tests of the commands and
/// example programs.
public enum BuiltProduct {
  /// The folder holding the built products (a test bundle sits beside them).
  public static var directory: URL {
    #if os(macOS)
      for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
        return bundle.bundleURL.deletingLastPathComponent()
      }
    #endif
    return Bundle.main.bundleURL
  }

  /// Runs the product `name` with `arguments` until it exits and returns its status and
  /// standard output (with standard error too when `includingStandardError`). A run
  /// still going after `timeLimit` is terminated, so a hung product fails its test
  /// instead of blocking the suite (a bound, not a performance assertion).
  public static func run(
    _ name: String, _ arguments: [String] = [], includingStandardError: Bool = false,
    timeLimit: Duration = .seconds(300)
  ) throws -> (status: Int32, output: Data) {
    let process = Process()
    process.executableURL = directory.appendingPathComponent(name)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    if includingStandardError { process.standardError = pipe }
    try process.run()
    let limit = DispatchWorkItem { if process.isRunning { process.terminate() } }
    let seconds = Double(timeLimit.components.seconds)
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: limit)
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    limit.cancel()
    return (process.terminationStatus, data)
  }
}
