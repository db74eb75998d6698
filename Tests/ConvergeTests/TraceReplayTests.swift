import Converge
import ConvergeTraces
import Foundation
import Testing

/// Replays the real editing traces in `Tests/Traces` (CC BY 4.0, see its README) through a
/// `SharedText`.
///
/// Timings are not asserted here; the release benchmark is `converge replay`.
@Suite struct TraceReplayTests {
  static var tracesFolder: URL {
    URL(fileURLWithPath: #filePath)  // <repo>/Tests/ConvergeTests/TraceReplayTests.swift
      .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Traces")
  }

  static func load(_ name: String) throws -> (patches: [TracePatch], end: String) {
    let path = tracesFolder.appendingPathComponent(name).path
    guard FileManager.default.fileExists(atPath: path) else {
      throw TraceMissing(path: path)
    }
    guard case .sequential(let trace) = try EditingTrace.load(path: path) else {
      throw TraceMissing(path: path + " (not a sequential trace)")
    }
    return (trace.patches, trace.endContent)
  }

  struct TraceMissing: Error, CustomStringConvertible {
    var path: String
    var description: String { "trace not found at \(path): Tests/Traces is incomplete" }
  }

  @Test(arguments: ["automerge-paper.json.gz", "seph-blog1.json.gz"])
  func replaysToEndContent(name: String) throws {
    let (patches, end) = try Self.load(name)
    var text = SharedText(replica: ReplicaID(rawValue: 1))
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
