import Converge
import ConvergeTestSupport
import Testing

/// `hasPendingChanges` is kept beside the entities rather than found by visiting every
/// field: it must still say exactly whether some text waits for missing events, after
/// every way a text changes (a decoded keystroke, a grouped delta, a decoded state).
@Suite struct PendingChangesTests {
  static let notes = (0..<3).map { EntityKey(type: "note", id: "n\($0)") }
  static let fields = ["body", "summary"]

  /// Whether some text of `document` holds inserts or deletes that wait, read field by
  /// field.
  static func anyTextWaits(_ document: Document) -> Bool {
    notes.contains { key in
      fields.contains { (document.sequence(of: $0, in: key)?.pendingCount ?? 0) > 0 }
    }
  }

  /// One writer's random typing and deleting in a few texts, a commit at a time.
  static func randomCommits(
    using random: inout SeededGenerator
  ) -> (writer: Replica, commits: [DocumentDelta]) {
    var writer = Replica.seeded(using: &random)
    var commits: [DocumentDelta] = []
    for _ in 0..<Int.random(in: 4...24, using: &random) {
      let key = notes.randomElement(using: &random) ?? notes[0]
      let field = fields.randomElement(using: &random) ?? "body"
      let length = writer.document.text(of: field, in: key).unicodeScalars.count
      let commit = writer.transact { transaction in
        if length > 2 && Bool.random(using: &random) {
          let start = Int.random(in: 0..<(length - 1), using: &random)
          transaction.deleteText(start..<(start + 1), in: field, of: key)
        } else {
          let at = Int.random(in: 0...length, using: &random)
          transaction.insertText("ab", at: at, in: field, of: key)
        }
      }
      commits.append(commit.delta)
    }
    return (writer, commits)
  }

  /// Per note and field, how many changes the text holds waiting.
  static func waitingCounts(_ document: Document) -> [[Int]] {
    notes.map { key in fields.map { document.sequence(of: $0, in: key)?.pendingCount ?? 0 } }
  }

  @Test func answersWhetherSomeTextWaitsAfterEveryDelivery() throws {
    try forEachSeed(count: 60, base: 0x9E4D) { random in
      var (writer, commits) = Self.randomCommits(using: &random)
      // Delivered shuffled, some decoded (a keystroke's compact form), some grouped.
      commits.shuffle(using: &random)
      var reader = Replica.seeded(using: &random)
      var index = 0
      while index < commits.count {
        var delta = commits[index]
        index += 1
        if Int.random(in: 0..<3, using: &random) == 0, index < commits.count {
          delta.merge(commits[index])
          index += 1
        } else if Bool.random(using: &random) {
          delta = try DocumentDelta(decoding: delta.encoded())
        }
        reader.apply(delta)
        let expected = Self.anyTextWaits(reader.document)
        guard reader.document.hasPendingChanges == expected else {
          throw ExpectationFailure("hasPendingChanges is not \(expected) after \(index)")
        }
        let decoded = try Document(decoding: reader.document.encoded())
        guard decoded.hasPendingChanges == expected else {
          throw ExpectationFailure("a decoded state's hasPendingChanges is not \(expected)")
        }
      }
      guard !reader.document.hasPendingChanges, reader.document == writer.document else {
        throw ExpectationFailure("every delta arrived, yet text waits or the replicas differ")
      }
    }
  }

  /// A copy of a replica keeps its waiting changes while the original integrates them
  /// or adds to them: what waits is held out of line, and copied before it changes.
  @Test func aCopyKeepsItsWaitingChanges() throws {
    var waited = 0
    try forEachSeed(count: 40, base: 0x9E4F) { random in
      var (writer, commits) = Self.randomCommits(using: &random)
      commits.shuffle(using: &random)
      var reader = Replica.seeded(using: &random)
      for (step, delta) in commits.enumerated() {
        let copy = reader
        let state = copy.encodedState()
        let waiting = Self.waitingCounts(copy.document)
        waited += waiting.joined().reduce(0, +)
        reader.apply(delta)
        guard copy.encodedState() == state, Self.waitingCounts(copy.document) == waiting else {
          throw ExpectationFailure("step \(step): the copy changed with the original")
        }
      }
      guard reader.document == writer.document else {
        throw ExpectationFailure("every delta arrived, yet the replicas differ")
      }
    }
    #expect(waited > 100, "texts hardly waited: \(waited)")
  }

  /// The check above could pass if texts never waited: show that they do.
  @Test func aKeystrokeBeforeItsOriginWaitsUntilTheOriginArrives() throws {
    var random = SeededGenerator(seed: 0x9E4E)
    var writer = Replica.seeded(using: &random)
    let key = Self.notes[0]
    let first = writer.transact { $0.insertText("a", at: 0, in: "body", of: key) }
    let second = writer.transact { $0.insertText("b", at: 1, in: "body", of: key) }
    var reader = Replica.seeded(using: &random)
    reader.apply(try DocumentDelta(decoding: second.delta.encoded()))
    #expect(reader.document.hasPendingChanges)
    #expect(try Document(decoding: reader.document.encoded()).hasPendingChanges)
    reader.apply(first.delta)
    #expect(!reader.document.hasPendingChanges)
    #expect(reader.document.text(of: "body", in: key) == "ab")
  }
}
