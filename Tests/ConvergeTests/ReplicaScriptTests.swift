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
      // Half the runs carry every delta through the codec, as a network would.
      if random.seed % 2 == 0 {
        try ReplicaScript.run(bytes)
      } else {
        try ReplicaScript.run(bytes) { try DocumentDelta(decoding: $0.encoded()) }
      }
    }
  }

  /// The same with list and tree edits among the edits: convergence, and one forest
  /// holding every visible node once, in no cycle.
  @Test func randomScriptsWithMovesConverge() throws {
    // How many scripts ended with a nested forest and a list: the checks must have met both.
    var nested = 0
    var listed = 0
    try forEachSeed(count: 300, base: 0x5C81_A0E) { random in
      let bytes = (0..<Int.random(in: 0..<400, using: &random)).map { _ in
        UInt8.random(in: 0...255, using: &random)
      }
      let replicas = try ReplicaScript.run(bytes, moves: true) {
        try DocumentDelta(decoding: $0.encoded())
      }
      let document = replicas[0].document
      if document.forest(of: "parent").edgeCount > 0 { nested += 1 }
      let notes = document.keys(ofType: "note")
      if notes.contains(where: { !document.list(of: "cards", in: $0).isEmpty }) { listed += 1 }
    }
    #expect(nested > 0 && listed > 0, "nested \(nested), listed \(listed)")
  }

  @Test func theGoldenFixturesSatisfyTheDecodeProperty() throws {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("Fixtures")
    let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    #expect(!files.isEmpty)
    for name in files where name.hasSuffix(".bin") {
      let bytes = [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
      #expect(throws: Never.self, "\(name)") { try DecodeProperty.check(bytes) }
      var random = SeededGenerator(seed: baseSeed(UInt64(bytes.count)))
      for _ in 0..<fuzzIterations(200) {
        let damaged = mutateBytes(bytes, splicingWith: bytes, using: &random)
        #expect(throws: Never.self, "\(name), seed \(random.seed)") {
          try DecodeProperty.check(damaged)
        }
      }
    }
  }

  /// Found by `converge fuzz` (seed 20271409, size 302, shrunk from 334) and, as
  /// `FailCases/replica-script-dominated-remove.bin`, by the FuzzReplicaScript libFuzzer
  /// target, on the code before the fix of `Presence.mayHaveEvents(unknownTo:)`: a
  /// remove dominated by a later add of its replica never reached a peer.
  @Test func theRunnersDivergenceStaysFixed() throws {
    let property = try #require(
      PropertyRunner.standardProperties.first { $0.name == "replica-script" })
    let failure = PropertyRunner.replay(property, seed: 20_271_409, size: 302)
    #expect(failure == nil, "\(failure.map(\.description) ?? "")")
  }

  @Test func everyKeptFailCaseNowPasses() throws {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("FailCases")
    let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    // Without its files this test would pass vacuously: the kept cases must be there.
    #expect(files.contains { $0.hasSuffix(".bin") }, "no fail cases found in \(folder.path)")
    for name in files.sorted() {
      let bytes = [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
      if name.hasPrefix("replica-script-") {
        #expect(throws: Never.self, "\(name)") {
          try ReplicaScript.run(bytes) { try DocumentDelta(decoding: $0.encoded()) }
        }
      } else if name.hasPrefix("decode-") {
        #expect(throws: Never.self, "\(name)") { try DecodeProperty.check(bytes) }
      }
    }
  }
}
