import Converge
import Foundation
import Testing

/// Replays the real editing traces in `<repo>/../shared/traces` through a `Text`.
///
/// Timings are not asserted here; the release benchmark is `converge replay`.
@Suite struct TraceReplayTests {
  static var tracesFolder: URL {
    URL(fileURLWithPath: #filePath)  // <repo>/Tests/ConvergeTests/TraceReplayTests.swift
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("shared/traces")
  }

  struct Patch {
    var position: Int
    var deleted: Int
    var inserted: [Unicode.Scalar]
  }

  static func load(_ name: String) throws -> (patches: [Patch], end: String) {
    let path = tracesFolder.appendingPathComponent(name).path
    guard FileManager.default.fileExists(atPath: path) else {
      throw TraceMissing(path: path)
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["gzip", "-dc", path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let end = try #require(root["endContent"] as? String)
    let transactions = try #require(root["txns"] as? [[String: Any]])
    var patches: [Patch] = []
    for transaction in transactions {
      for patch in try #require(transaction["patches"] as? [[Any]]) {
        patches.append(
          Patch(
            position: try #require((patch[0] as? NSNumber)?.intValue),
            deleted: try #require((patch[1] as? NSNumber)?.intValue),
            inserted: Array(try #require(patch[2] as? String).unicodeScalars)))
      }
    }
    return (patches, end)
  }

  struct TraceMissing: Error, CustomStringConvertible {
    var path: String
    var description: String { "trace not found at \(path): the shared traces folder is missing" }
  }

  @Test(arguments: ["automerge-paper.json.gz", "seph-blog1.json.gz"])
  func replaysToEndContent(name: String) throws {
    let (patches, end) = try Self.load(name)
    var text = Text(replica: ReplicaID(rawValue: 1))
    for patch in patches {
      text.edit(at: patch.position, deleting: patch.deleted, inserting: patch.inserted)
    }
    #expect(text.string == end, "\(name)")
    #expect(text.count == end.unicodeScalars.count)
    #expect(text.utf16Count == end.utf16.count)
    text.rga._checkInvariants()
    // The whole history travels as one delta and rebuilds an equal replica.
    let copy = RGA().merging(text.delta(since: CausalContext()))
    #expect(copy.string == end)
    #expect(Bool(copy == text.rga))
  }
}
