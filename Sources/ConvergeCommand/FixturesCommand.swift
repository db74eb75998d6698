import ConvergeTestSupport
import Foundation

/// `converge fixtures --write DIR` writes the codec's golden files (`CodecFixtures.files`)
/// into DIR, normally `Tests/ConvergeTests/Fixtures`; `converge fixtures --check DIR`
/// only compares them and exits with 1 when one differs.
///
/// Rewriting the golden files is for a deliberate format change, a new format version,
/// never an edit of an earlier one: the tests then check the new files against this
/// build's encoding and the version 1 files keep being refused by name.
enum FixturesCommand {
  static func run(_ arguments: [String]) -> Int32 {
    guard arguments.count == 2, ["--write", "--check"].contains(arguments[0]) else {
      FileHandleOutput.error("usage: converge fixtures --write DIR | --check DIR")
      return 2
    }
    let write = arguments[0] == "--write"
    let directory = URL(fileURLWithPath: arguments[1], isDirectory: true)
    var differing = 0
    for (name, bytes) in CodecFixtures.files {
      let url = directory.appendingPathComponent(name)
      let current = FileManager.default.contents(atPath: url.path).map { Array($0) }
      let state = current == nil ? "new" : current == bytes ? "unchanged" : "changed"
      if write {
        do {
          try Data(bytes).write(to: url, options: .atomic)
        } catch {
          FileHandleOutput.error("error: cannot write \(url.path): \(error)")
          return 73
        }
      } else if state != "unchanged" {
        differing += 1
      }
      print("\(name): \(bytes.count) bytes, \(state)")
    }
    return differing == 0 ? 0 : 1
  }
}
