import Converge
import ConvergeTestSupport
import ConvergeTraces
import Foundation
import Testing

@Suite struct ConcurrentTraceTests {
  /// Two agents; the result does not depend on any CRDT's ordering rule because no two
  /// concurrent inserts share a position.
  static let knownAnswer = """
    { "kind": "concurrent", "endContent": "Oh, hello world!", "numAgents": 2,
      "txns": [
        { "parents": [], "numChildren": 2, "agent": 0, "time": "", "patches": [[0, 0, "hello"]] },
        { "parents": [0], "numChildren": 1, "agent": 1, "time": "", "patches": [[5, 0, " world"]] },
        { "parents": [0], "numChildren": 1, "agent": 0, "time": "", "patches": [[0, 0, "Oh, "]] },
        { "parents": [1, 2], "numChildren": 0, "agent": 0, "time": "",
          "patches": [[15, 0, "!!"], [16, 1, ""]] }
      ] }
    """

  @Test func aKnownConcurrentTraceReplaysToItsEndContent() throws {
    guard case .concurrent(let trace) = try EditingTrace.parse(Data(Self.knownAnswer.utf8)) else {
      Issue.record("parsed as sequential")
      return
    }
    let result = try trace.replay()
    #expect(result.finalTexts == ["Oh, hello world!", "Oh, hello world!"])
    #expect(result.matchesEndContent)
    #expect(result.replicas[0].document == result.replicas[1].document)
  }

  @Test func malformedTracesAreRejectedWithAReason() {
    let cases = [
      "[]", "{}", #"{"endContent": "", "txns": [{"patches": [[0, -1, ""]]}]}"#,
      #"{"kind": "concurrent", "endContent": "", "numAgents": 1, "txns": [{"parents": [0], "agent": 0, "patches": []}]}"#,
      #"{"kind": "concurrent", "endContent": "", "numAgents": 1, "txns": [{"parents": [], "agent": 3, "patches": []}]}"#,
    ]
    for text in cases {
      #expect(throws: TraceError.self, "\(text)") { try EditingTrace.parse(Data(text.utf8)) }
    }
  }

  @Test func randomConcurrentTracesReplayToTheMergeOfAllTheirTransactions() throws {
    try forEachSeed(count: 100, base: 0xC0C0) { random in
      let trace = Self.randomTrace(agents: 3, transactions: 25, using: &random)
      let result = try trace.replay()
      try ensure(
        result.matchesEndContent, "replay gave \(result.finalTexts), expected \(trace.endContent)")
    }
  }

  /// A random trace whose end content is computed by merging full snapshots, a different
  /// path from the replay's incremental deltas.
  static func randomTrace(agents: Int, transactions count: Int, using random: inout SeededGenerator)
    -> ConcurrentTrace
  {
    let key = ConcurrentTrace.documentKey
    let field = ConcurrentTrace.textField
    var snapshots: [Document] = []
    var lastOfAgent = [Int?](repeating: nil, count: agents)
    var transactions: [ConcurrentTrace.Transaction] = []
    for index in 0..<count {
      let agent = Int.random(in: 0..<agents, using: &random)
      var parents = lastOfAgent[agent].map { [$0] } ?? []
      if index > 0, Bool.random(using: &random) {
        parents.append(Int.random(in: 0..<index, using: &random))
      }
      parents = Array(Set(parents)).sorted()
      var base = Document()
      for parent in parents { base.merge(snapshots[parent]) }
      var replica = Replica(
        document: base, id: ReplicaID(rawValue: UInt64(agent) + 1), wallClock: .fixed(0))
      var patches: [TracePatch] = []
      replica.transact { tx in
        for _ in 0..<Int.random(in: 1...3, using: &random) {
          let length = tx.document.text(of: field, in: key).unicodeScalars.count
          let position = Int.random(in: 0...length, using: &random)
          let deleted = Int.random(in: 0...Swift.min(2, length - position), using: &random)
          let inserted = Array(
            (["ab", "x", "é", "🙂", ""].randomElement(using: &random) ?? "").unicodeScalars)
          if deleted > 0 { tx.deleteText(position..<position + deleted, in: field, of: key) }
          if !inserted.isEmpty {
            var text = String.UnicodeScalarView()
            text.append(contentsOf: inserted)
            tx.insertText(String(text), at: position, in: field, of: key)
          }
          patches.append(TracePatch(position: position, deleted: deleted, inserted: inserted))
        }
      }
      snapshots.append(replica.document)
      lastOfAgent[agent] = index
      transactions.append(.init(parents: parents, agent: agent, patches: patches))
    }
    var end = Document()
    for snapshot in snapshots { end.merge(snapshot) }
    return ConcurrentTrace(
      agentCount: agents, endContent: end.text(of: field, in: key), transactions: transactions)
  }
}
