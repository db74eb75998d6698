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
  /// standard output (with standard error too when `includingStandardError`).
  public static func run(
    _ name: String, _ arguments: [String] = [], includingStandardError: Bool = false
  ) throws -> (status: Int32, output: Data) {
    let process = Process()
    process.executableURL = directory.appendingPathComponent(name)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    if includingStandardError { process.standardError = pipe }
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, data)
  }
}
