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

/// `converge replay --through-handle`: the trace typed into a typed model's text by field
/// name and through an `EntityText` gives the same document, in one transaction and in one
/// transaction per edit. A prefix of automerge-paper, so that a debug build stays quick.
@Suite struct HandleReplayTests {
  @Test func theHandleReplaysAreTheReplaysByName() throws {
    let path = TraceReplayTests.tracesFolder.appendingPathComponent("automerge-paper.json.gz")
    guard case .sequential(let full) = try EditingTrace.load(path: path.path) else {
      Issue.record("automerge-paper is not a sequential trace")
      return
    }
    var text = SharedText(replica: ReplicaID(rawValue: 1))
    let patches = Array(full.patches.prefix(4_000))
    for patch in patches {
      text.edit(at: patch.position, deleting: patch.deleted, inserting: patch.inserted)
    }
    let trace = SequentialTrace(endContent: text.string, patches: patches)
    let times = try trace.timeHandleReplays(handleFirst: false)
    #expect(times.matches)
    let handle = try EntityText(\TraceDocument.text, of: SequentialTrace.benchKey.id)
    for perEdit in [false, true] {
      let byName = trace.replayByName(perEdit: perEdit)
      let byHandle = trace.replayThroughHandle(handle, perEdit: perEdit)
      #expect(byName.document == byHandle.document)
      #expect(byHandle.document.string(of: handle) == text.string)
      #expect(byHandle.encodedState() == byName.encodedState())
    }
  }
}
