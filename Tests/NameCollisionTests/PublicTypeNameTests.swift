import Foundation
import FrameworkNames
import Testing

/// No public type of a Converge library takes the name of a SwiftUI, SwiftData, CryptoKit
/// or Foundation type (`FrameworkTypeNames`): an app imports them side by side, and a
/// second type of the same name makes every unqualified use of it ambiguous.
///
/// The public types are read from the libraries' sources: every `public` or `open`
/// struct, class, enum, actor, protocol or typealias declared at the top level (a nested
/// type is qualified by its parent and collides with nothing). The frameworks' names are
/// the committed lists of `FrameworkTypeNames`, since Linux has no SwiftUI.
@Suite struct PublicTypeNameTests {
  /// The libraries an app imports: this package's products and the relay's client.
  static let libraries = [
    "Sources/Converge", "Sources/ConvergeCore", "Sources/ConvergeCRDTs",
    "Sources/ConvergeStore", "Sources/ConvergeSimulator",
    "Sources/ConvergeTestSupport", "Sources/ConvergeRelayClient",
    "Relay/Sources/ConvergeRelayNIO",
  ]

  static var root: URL {
    URL(fileURLWithPath: #filePath)  // <repo>/Tests/NameCollisionTests/<this file>
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
  }

  static var declaration: Regex<(Substring, Substring)> {
    #/
      ^ (?: @\w+ (?:\([^)]*\))? \s+ )*
      (?: public | open ) \s+ (?: final \s+ | indirect \s+ )?
      (?: struct | class | enum | actor | protocol | typealias ) \s+ (\w+)
    /#
  }

  /// The top-level public type names `source` declares.
  ///
  /// `swift format` (which CI enforces) indents every body by two spaces and the inside of
  /// `#if` blocks too, so a top-level declaration is indented by two spaces per `#if` it
  /// sits in and a nested one by more. Lines of multi-line strings are skipped. Looking at
  /// a line's indentation rather than at every byte keeps the scan quick in a debug build.
  static func publicTypeNames(in source: String) -> [String] {
    var names: [String] = []
    var conditionDepth = 0
    var inMultilineString = false
    for rawLine in source.components(separatedBy: "\n") {
      let indentation = rawLine.utf8.prefix { $0 == UInt8(ascii: " ") }.count
      let line = rawLine.dropFirst(indentation)
      if inMultilineString {
        if line.hasPrefix("\"\"\"") { inMultilineString = false }
        continue
      }
      if line.hasSuffix("\"\"\"") && !line.hasPrefix("\"\"\"") {
        inMultilineString = true
      } else if line.hasPrefix("#if") {
        conditionDepth += 1
      } else if line.hasPrefix("#endif") {
        conditionDepth -= 1
      } else if indentation == 2 * conditionDepth,
        line.hasPrefix("public ") || line.hasPrefix("open ") || line.hasPrefix("@"),
        let match = try? declaration.prefixMatch(in: line)
      {
        names.append(String(match.output.1))
      }
    }
    return names
  }

  /// Every library's public type names, with the file that declares each.
  static func publicTypes() throws -> [(name: String, file: String)] {
    var types: [(name: String, file: String)] = []
    for library in libraries {
      let folder = root.appendingPathComponent(library)
      let files = FileManager.default.enumerator(atPath: folder.path)?.allObjects ?? []
      for case let path as String in files where path.hasSuffix(".swift") {
        let source = try String(
          contentsOf: folder.appendingPathComponent(path), encoding: .utf8)
        for name in publicTypeNames(in: source) { types.append((name, "\(library)/\(path)")) }
      }
    }
    return types
  }

  @Test func noPublicTypeTakesAFrameworkTypeName() throws {
    let types = try Self.publicTypes()
    for (framework, names) in FrameworkTypeNames.all {
      for type in types where names.contains(type.name) {
        Issue.record("\(type.file): public type \(type.name) has the name of \(framework)'s")
      }
    }
    // The scan must find what the libraries declare, and only their top-level types.
    let found = Set(types.map(\.name))
    for name in ["SharedText", "DeviceReplica", "DocumentStore", "SimulationReport", "RelayClient"]
    {
      #expect(found.contains(name), "the scan misses \(name)")
    }
    #expect(!found.contains("Affinity"), "TextAnchor.Affinity is nested, not top-level")
  }

  @Test func theScanFindsOnlyTopLevelPublicTypes() {
    let source = #"""
      /// A doc comment: public struct InComment {}
      @MainActor public final class Store {
        public struct Nested {}
        #if DEBUG
          public enum NestedInCondition {}
        #endif
      }
      #if canImport(Observation)
        public enum InCondition {}
      #endif
      let usage = """
        public struct InString {}
        """
      extension Store { public typealias Alias = Int }
      struct Internal {}
      public typealias Top = Int
      """#
    #expect(Self.publicTypeNames(in: source) == ["Store", "InCondition", "Top"])
  }
}
