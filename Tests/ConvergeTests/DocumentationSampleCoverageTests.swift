import Foundation
import Testing

/// Every Swift sample the README, the DocC articles and the doc comments show is compiled:
/// it must appear verbatim in a test source of this target.
///
/// A sample is a ```` ```swift ```` block of `README.md`, of
/// `Sources/Converge/Converge.docc/*.md`, or of a `///` doc comment anywhere in `Sources`.
/// "Verbatim" ignores indentation, runs of spaces, blank lines and `import` lines (a test
/// file has its own imports); each paragraph of a sample (its lines between blank lines)
/// must appear as consecutive lines of one test file, the paragraphs in order, so that a
/// sample's declarations can sit at file level and its statements in a test.
///
/// The one exception: a block whose first line is `// In Package.swift:` is a manifest
/// excerpt, which no test target can compile. There are at most two.
@Suite struct DocumentationSampleCoverageTests {
  static let manifestMarker = "// In Package.swift:"

  static var root: URL {
    URL(fileURLWithPath: #filePath)  // <repo>/Tests/ConvergeTests/<this file>
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
  }

  struct Sample: CustomStringConvertible {
    var file: String
    var line: Int
    var lines: [String]
    var description: String {
      "\(file):\(line): `\(lines.first { !$0.isEmpty } ?? "")`"
    }
  }

  /// Lines without indentation or repeated spaces; blank lines kept as "".
  static func normalized(_ line: Substring) -> String {
    line.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
  }

  /// The ```` ```swift ```` blocks of `text`; for a Swift file, those of its `///` comments.
  static func samples(in text: String, file: String, docComments: Bool) -> [Sample] {
    var samples: [Sample] = []
    var current: Sample?
    for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false)
      .enumerated()
    {
      var line = raw.drop { $0 == " " || $0 == "\t" }
      if docComments {
        guard line.hasPrefix("///") else {
          current = nil
          continue
        }
        line = line.dropFirst(3)
      }
      let trimmed = normalized(line)
      if var sample = current {
        if trimmed == "```" {
          samples.append(sample)
          current = nil
        } else {
          sample.lines.append(trimmed)
          current = sample
        }
      } else if trimmed == "```swift" {
        current = Sample(file: file, line: index + 1, lines: [])
      }
    }
    return samples
  }

  static func allSamples() throws -> [Sample] {
    let files = FileManager.default
    var samples: [Sample] = []
    func read(_ relative: String, docComments: Bool) throws {
      let text = try String(
        contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
      samples += Self.samples(in: text, file: relative, docComments: docComments)
    }
    try read("README.md", docComments: false)
    let docc = "Sources/Converge/Converge.docc"
    for name in try files.contentsOfDirectory(atPath: root.appendingPathComponent(docc).path)
      .sorted() where name.hasSuffix(".md")
    {
      try read("\(docc)/\(name)", docComments: false)
    }
    let sources = root.appendingPathComponent("Sources").path
    for case let path as String in files.enumerator(atPath: sources)?.allObjects ?? []
    where path.hasSuffix(".swift") {
      try read("Sources/\(path)", docComments: true)
    }
    return samples
  }

  /// Every test file of this target, as normalized lines without blank ones.
  static func testSources() throws -> [[String]] {
    let folder = root.appendingPathComponent("Tests/ConvergeTests")
    return try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
      .filter { $0.hasSuffix(".swift") }
      .map { name in
        try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
          .split(separator: "\n").map { normalized($0) }.filter { !$0.isEmpty }
      }
  }

  /// Whether `sample`'s paragraphs appear in `source` as runs of consecutive lines, in order.
  static func appears(_ sample: Sample, in source: [String]) -> Bool {
    let code = sample.lines.filter { !$0.hasPrefix("import ") }
    let paragraphs = code.split(separator: "", omittingEmptySubsequences: true)
    var start = 0
    for paragraph in paragraphs {
      let length = paragraph.count
      guard
        let found = (start..<max(start, source.count - length + 1)).first(where: {
          source[$0..<$0 + length].elementsEqual(paragraph)
        })
      else { return false }
      start = found + length
    }
    return true
  }

  @Test func everySampleIsCompiledByATest() throws {
    let samples = try Self.allSamples()
    let sources = try Self.testSources()
    let manifests = samples.filter { $0.lines.first == Self.manifestMarker }
    #expect(manifests.count <= 2, "manifest excerpts: \(manifests)")
    for sample in samples where sample.lines.first != Self.manifestMarker {
      #expect(
        sources.contains { Self.appears(sample, in: $0) },
        "\(sample) does not appear verbatim in Tests/ConvergeTests")
    }
    // The scan itself must find what the documentation shows.
    let files = Set(samples.map(\.file))
    for file in [
      "README.md", "Sources/Converge/Converge.docc/GettingStarted.md",
      "Sources/ConvergeDocument/Replica/Replica.swift", "Sources/Converge/Sync/SyncSession.swift",
      "Sources/ConvergeStore/DeviceReplica.swift", "Sources/ConvergeSimulator/Simulation.swift",
    ] {
      #expect(files.contains(file), "no sample found in \(file)")
    }
  }

  @Test func theMatcherRejectsWhatIsNotThere() {
    let sample = Sample(
      file: "x", line: 1, lines: ["import Converge", "let a = 1", "", "let b = 2"])
    #expect(Self.appears(sample, in: ["func f() {", "let a = 1", "print(a)", "let b = 2", "}"]))
    #expect(!Self.appears(sample, in: ["let b = 2", "let a = 1"]))
    #expect(!Self.appears(sample, in: ["let a = 1", "let b = 3"]))
    let block = "/// ```swift\n///   let  a = 1\n/// ```\n// ```swift\n"
    let found = Self.samples(in: block, file: "f.swift", docComments: true)
    #expect(found.map(\.lines) == [["let a = 1"]] && found.first?.line == 1)
  }
}
