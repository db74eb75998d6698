import Foundation

/// Writes diagnostics to standard error.
enum FileHandleOutput {
  static func error(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
  }

  /// The one-line JSON object every `--json` output prints: `fields` in order, each value
  /// already JSON (a number, `true`, or a quoted string).
  static func jsonObject(_ fields: [(String, String)]) -> String {
    "{" + fields.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}"
  }

  /// Prints a bench's rows: with `json`, one object of each key and its value's number
  /// (the value up to its unit); else a table of labels and values.
  static func printRows(_ rows: [(key: String, label: String, value: String)], json: Bool) {
    if json {
      print(
        jsonObject(
          rows.map { row in
            (row.key, row.value.split(separator: " ").first.map(String.init) ?? row.value)
          }))
    } else {
      for row in rows {
        print(row.label.padding(toLength: 40, withPad: " ", startingAt: 0) + row.value)
      }
    }
  }
}
