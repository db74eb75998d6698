import Converge
import Foundation

/// `converge inspect FILE`: opens a stored or captured Converge message, decodes it by
/// its kind (version vector, causal context, document state, document delta) and prints
/// a summary. Bad input prints the typed decoding error to standard error and exits
/// with 65 (`EX_DATAERR`); nothing in the file can crash it.
enum InspectCommand {
  static func run(_ arguments: [String]) -> Int32 {
    guard arguments.count == 1, let path = arguments.first else {
      FileHandleOutput.error("usage: converge inspect <file>")
      return 2
    }
    guard let data = FileManager.default.contents(atPath: path) else {
      FileHandleOutput.error("error: cannot read \(path)")
      return 66
    }
    do {
      print(try summary(of: Array(data)))
      return 0
    } catch {
      FileHandleOutput.error("error: \(error)")
      return 65
    }
  }

  /// The summary `inspect` prints for `bytes`, or the decoding error.
  static func summary(of bytes: [UInt8]) throws -> String {
    try MessageSummary(decoding: bytes).text
  }
}
