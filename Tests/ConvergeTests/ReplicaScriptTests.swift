import Converge
import ConvergeTestSupport
import Foundation
import Testing

/// The replica-script property: any bytes, read as edits and a hostile delivery order for
/// three replicas, end in convergence. The fuzzers in `Fuzz/` search this space; every
/// input they ever found failing is kept in `FailCases/` and replayed here.
@Suite struct ReplicaScriptTests {
  @Test func randomScriptsConverge() throws {
    try forEachSeed(count: 300, base: 0x5C819) { random in
      let bytes = (0..<Int.random(in: 0..<400, using: &random)).map { _ in
        UInt8.random(in: 0...255, using: &random)
      }
      try ReplicaScript.run(bytes)
    }
  }

  @Test func everyKeptFailCaseNowConverges() throws {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("FailCases")
    let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    for name in files.sorted() where name.hasPrefix("replica-script-") {
      let data = try Data(contentsOf: folder.appendingPathComponent(name))
      #expect(throws: Never.self, "\(name)") { try ReplicaScript.run([UInt8](data)) }
    }
  }
}
