import Converge
import Foundation

/// Measures the encoded size of a document holding a trace's final text:
/// `converge state-size <trace.json[.gz]>` once wired into the command.
///
/// The trace is replayed through a ``Replica`` (one transaction per patch) into the
/// `body` field of one note; the report gives the document state's bytes, a breakdown of
/// what the text holds, and the size of a one-character delta typed afterwards.
enum StateSizeProbe {
  struct Report {
    var stateBytes: Int
    var insertRuns: Int
    var deleteRuns: Int
    var insertedScalars: Int
    /// UTF-8 bytes of every inserted scalar, tombstones included.
    var contentBytes: Int
    var visibleScalars: Int
    var oneCharacterDeltaBytes: Int
    /// The best of five runs of `encodedState()` and of `Replica(restoring:)`.
    var encodeMilliseconds: Double
    var loadMilliseconds: Double
    /// Of those, the text's own work: `delta(since:)` of the whole text, and applying
    /// that delta to an empty `RGA`.
    var textDeltaMilliseconds: Double
    var textApplyMilliseconds: Double
    var matchesEndContent: Bool

    var summary: String {
      """
      state bytes:            \(stateBytes)
        text content (UTF-8): \(contentBytes) bytes for \(insertedScalars) scalars \
      (\(visibleScalars) visible)
        insert runs:          \(insertRuns)
        delete runs:          \(deleteRuns)
        everything else:      \(stateBytes - contentBytes) bytes
      one-character delta:    \(oneCharacterDeltaBytes) bytes
      encode state:           \(String(format: "%.2f", encodeMilliseconds)) ms (best of 5)
      decode + load state:    \(String(format: "%.2f", loadMilliseconds)) ms (best of 5)
        of which RGA.delta(since:) \(String(format: "%.2f", textDeltaMilliseconds)) ms \
      (in encode), RGA.apply \(String(format: "%.2f", textApplyMilliseconds)) ms (in load)
      matches endContent:     \(matchesEndContent)
      """
    }
  }

  static func measure(_ trace: Trace) throws -> Report {
    let note = EntityKey(type: "note", id: "paper")
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_700_000_000_000))
    replica.transact { tx in
      tx.create(note)
      if !trace.startContent.isEmpty {
        tx.insertText(trace.startContent, at: 0, in: "body", of: note)
      }
    }
    for patch in trace.patches {
      replica.transact { tx in
        if patch.deleted > 0 {
          tx.deleteText(patch.position..<patch.position + patch.deleted, in: "body", of: note)
        }
        if patch.insertEnd > patch.insertStart {
          var inserted = String.UnicodeScalarView()
          inserted.append(contentsOf: trace.scalars[patch.insertStart..<patch.insertEnd])
          tx.insertText(String(inserted), at: patch.position, in: "body", of: note)
        }
      }
    }
    let state = replica.encodedState()
    var restored = replica
    var encodeMilliseconds = Double.infinity
    var loadMilliseconds = Double.infinity
    for _ in 0..<5 {
      encodeMilliseconds = min(encodeMilliseconds, milliseconds { _ = replica.encodedState() })
      loadMilliseconds = min(
        loadMilliseconds, try milliseconds { restored = try Replica(restoring: state) })
    }
    let text = replica.document.sequence(of: "body", in: note) ?? RGA()
    let all = text.delta(since: CausalContext())
    var textDeltaMilliseconds = Double.infinity
    var textApplyMilliseconds = Double.infinity
    for _ in 0..<5 {
      textDeltaMilliseconds = min(
        textDeltaMilliseconds, milliseconds { _ = text.delta(since: CausalContext()) })
      textApplyMilliseconds = min(
        textApplyMilliseconds,
        milliseconds {
          var fresh = RGA()
          fresh.apply(all)
        })
    }
    var contentBytes = 0
    var insertedScalars = 0
    for insert in all.inserts {
      insertedScalars += insert.scalars.count
      for scalar in insert.scalars { contentBytes += UTF8.width(scalar) }
    }
    let commit = replica.transact { tx in
      tx.insertText("!", at: text.count / 2, in: "body", of: note)
    }
    return Report(
      stateBytes: state.count, insertRuns: all.inserts.count, deleteRuns: all.deletes.count,
      insertedScalars: insertedScalars, contentBytes: contentBytes, visibleScalars: text.count,
      oneCharacterDeltaBytes: commit.delta.encoded().count,
      encodeMilliseconds: encodeMilliseconds, loadMilliseconds: loadMilliseconds,
      textDeltaMilliseconds: textDeltaMilliseconds, textApplyMilliseconds: textApplyMilliseconds,
      matchesEndContent: restored.document.text(of: "body", in: note) == trace.endContent)
  }

  private static func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    let elapsed = (clock.now - start).components
    return Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15
  }

  /// `state-size <trace>`: prints the report; 1 if the trace cannot be read.
  static func run(_ arguments: [String]) -> Int32 {
    guard arguments.count == 1, let path = arguments.first else {
      FileHandleOutput.error("usage: converge state-size <trace.json[.gz]>")
      return 2
    }
    do {
      let report = try measure(try TraceLoader.load(path: path))
      print(report.summary)
      return report.matchesEndContent ? 0 : 1
    } catch {
      FileHandleOutput.error("error: \(error)")
      return 1
    }
  }
}
