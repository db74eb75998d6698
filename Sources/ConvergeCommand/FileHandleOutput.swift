import Foundation

/// Writes diagnostics to standard error.
enum FileHandleOutput {
  static func error(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
  }
}
