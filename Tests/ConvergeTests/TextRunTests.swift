import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// A transaction's run of text edits in one field (`DocumentTransaction.TextRun`): the
/// edits after the first make no delta or change record of their own, and the run reads
/// their runs from the text when it closes. Against the same edits with the run closed
/// after each (`closeTextRun()`, so that every edit makes its own delta and change, as a
/// lone keystroke does), on seeded random typing: the same delta bytes, the same changes,
/// the same document, the same undo, and the same document read mid-transaction.
@Suite struct TextRunTests {
  static let note = EntityKey(type: "note", id: "n1")
  static let other = EntityKey(type: "note", id: "n2")
  static let alphabet: [Unicode.Scalar] = ["a", "b", " ", "é", "\u{1F600}", "\n", "ß", "中"]

  /// One random step of a transaction: mostly text edits of the body, sometimes of
  /// another field or entity, a register write, or a read of the document.
  static func randomStep(
    _ tx: inout DocumentTransaction, using random: inout SeededGenerator
  ) {
    let length = tx.document.text(of: "body", in: note).unicodeScalars.count
    let position = Int.random(in: 0...length + 1, using: &random)
    let string = String(
      String.UnicodeScalarView(
        (0..<Int.random(in: 0...4, using: &random)).map { _ in
          alphabet.randomElement(using: &random) ?? "a"
        }))
    switch Int.random(in: 0..<40, using: &random) {
    case 0..<18: tx.insertText(string, at: position, in: "body", of: note)
    case 18..<28:
      tx.deleteText(
        position..<position + Int.random(in: 0...4, using: &random), in: "body", of: note)
    case 28..<33:
      tx.replaceText(
        position..<position + Int.random(in: 0...3, using: &random), with: string, in: "body",
        of: note)
    case 33..<35: tx.insertText(string, at: 0, in: "title", of: note)
    case 35: tx.insertText(string, at: position, in: "body", of: other)
    case 36: tx.setValue(.string(string), for: "tag", of: note)
    case 37: _ = tx.document.text(of: "body", in: note)
    case 38: tx.delete(note)
    default: tx.create(note)
    }
  }

  /// Two replicas with the same history: some text typed by each and exchanged, so
  /// that origins and delete targets name either replica.
  static func startingPair(using random: inout SeededGenerator) -> (Replica, Replica) {
    var mine = Replica(id: ReplicaID(rawValue: 0xB2), wallClock: .fixed(0))
    var theirs = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(0))
    for _ in 0..<Int.random(in: 0...6, using: &random) {
      let writer = Bool.random(using: &random)
      let commit =
        writer
        ? mine.transact { randomStep(&$0, using: &random) }
        : theirs.transact { randomStep(&$0, using: &random) }
      mine.apply(commit.delta)
      theirs.apply(commit.delta)
    }
    return (mine, mine)  // two copies of one replica: the same dots for the same edits
  }

  @Test func aRunsDeltaAndChangesAreTheEditByEditOnes() {
    for seed in UInt64(0x7E4700)..<0x7E4700 + 300 {
      var random = SeededGenerator(seed: seed)
      var (batched, editByEdit) = Self.startingPair(using: &random)
      let steps = Int.random(in: 1...40, using: &random)
      let script = random.next()
      var scriptRandom = SeededGenerator(seed: script)
      let runs = batched.transact { tx in
        for _ in 0..<steps { Self.randomStep(&tx, using: &scriptRandom) }
      }
      scriptRandom = SeededGenerator(seed: script)
      let lone = editByEdit.transact { tx in
        for _ in 0..<steps {
          Self.randomStep(&tx, using: &scriptRandom)
          tx.closeTextRun()
        }
      }
      #expect(runs.delta.encoded() == lone.delta.encoded(), "seed \(seed)")
      #expect(runs.delta == lone.delta, "seed \(seed)")
      #expect(runs.changes == lone.changes, "seed \(seed)")
      #expect(batched.document == editByEdit.document, "seed \(seed)")
    }
  }

  @Test func aRunRecordedForUndoUndoesAsTheEditByEditOne() {
    for seed in UInt64(0x7E4800)..<0x7E4800 + 150 {
      var random = SeededGenerator(seed: seed)
      var (batched, editByEdit) = Self.startingPair(using: &random)
      var batchedHistory = UndoHistory()
      var editByEditHistory = UndoHistory()
      let script = random.next()
      let steps = Int.random(in: 1...30, using: &random)
      var scriptRandom = SeededGenerator(seed: script)
      let runs = batched.transact(recordingUndoIn: &batchedHistory) { tx in
        for _ in 0..<steps { Self.randomStep(&tx, using: &scriptRandom) }
      }
      scriptRandom = SeededGenerator(seed: script)
      let lone = editByEdit.transact(recordingUndoIn: &editByEditHistory) { tx in
        for _ in 0..<steps {
          Self.randomStep(&tx, using: &scriptRandom)
          tx.closeTextRun()
        }
      }
      #expect(runs.delta.encoded() == lone.delta.encoded(), "seed \(seed)")
      #expect(runs.changes == lone.changes, "seed \(seed)")
      // The undo replays the inverses of many text edits in one transaction: a run too.
      let undone = batched.undo(&batchedHistory)
      let undoneByEdit = editByEdit.undo(&editByEditHistory)
      #expect(undone?.delta.encoded() == undoneByEdit?.delta.encoded(), "seed \(seed)")
      #expect(undone?.changes == undoneByEdit?.changes, "seed \(seed)")
      #expect(batched.document == editByEdit.document, "seed \(seed)")
    }
  }

  /// The run's later edits note their events (context, presence, event index) only when
  /// it closes; a read of `tx.document` closes it first, so a reader mid-transaction sees
  /// the document the edit-by-edit transaction has at the same step: equal, and handing
  /// out the same delta since the start (which finds entities through the event index).
  @Test func aReadMidRunSeesTheEditByEditDocument() {
    for seed in UInt64(0x7E4A00)..<0x7E4A00 + 200 {
      var random = SeededGenerator(seed: seed)
      var (batched, editByEdit) = Self.startingPair(using: &random)
      let start = batched.document.context
      let steps = Int.random(in: 1...40, using: &random)
      let script = random.next()
      let reads = Set((0..<steps).filter { _ in Int.random(in: 0..<4, using: &random) == 0 })
      func transact(_ replica: inout Replica, closingEachStep: Bool) -> [Document] {
        var seen: [Document] = []
        var scriptRandom = SeededGenerator(seed: script)
        replica.transact { tx in
          for step in 0..<steps {
            Self.randomStep(&tx, using: &scriptRandom)
            if closingEachStep { tx.closeTextRun() }
            if reads.contains(step) { seen.append(tx.document) }
          }
        }
        return seen
      }
      let runs = transact(&batched, closingEachStep: false)
      let lone = transact(&editByEdit, closingEachStep: true)
      #expect(runs == lone, "seed \(seed)")
      #expect(
        runs.map { $0.delta(since: start).encoded() }
          == lone.map { $0.delta(since: start).encoded() }, "seed \(seed)")
      #expect(batched.document == editByEdit.document, "seed \(seed)")
    }
  }

  /// A received delta's text can hold ids of this replica that its context lacks (a
  /// decoded message's registers are checked against its context, its text runs are
  /// not), so the dots a transaction takes from the context are not fresh by
  /// construction. The run asks the text once whether it holds any id of the run's
  /// replica from its next dot on, and if it does, every edit looks its ids up as a lone
  /// edit does: one whose ids the text holds is refused, and no id is ever given to two
  /// items. Stale ids ahead of the typing and among it; the same document as typing
  /// edit by edit.
  @Test func aRunRefusesIdsTheTextAlreadyHolds() {
    for (stale, expected) in [(UInt64(5), "xyzaaaaa"), (UInt64(30), "xyzaaaaaaaa")] {
      var forged = RGA()
      let runs = forged.insert(
        "xyz".unicodeScalars, at: 0, firstDot: Dot(replica: Self.me, counter: stale))
      // The dots 2 through 9; with stale ids from 5, the dots 5, 6 and 7 are taken.
      let documents = Self.documentsAfterEditsOverForgedText(
        runs, edits: 8, expecting: expected, "stale from \(stale)"
      ) { $0.insertText("a", at: .max, in: "body", of: Self.note) }
      #expect(documents[0] == documents[1], "stale from \(stale)")
    }
  }

  /// The same for delete dots: a received delta's text can hold a delete with a dot of
  /// this replica that its context lacks, and a delete whose dot the text's log holds
  /// deletes nothing. The run asks the text once whether it holds any delete dot of its
  /// replica from its next dot on too (the run's deletes skip the log's lookup), and if
  /// it does, every delete looks its dot up as a lone one does. A stale dot among the
  /// run's dots and one after them; the same document as deleting edit by edit.
  @Test func aRunRefusesDeleteDotsTheTextAlreadyHolds() {
    let other = ReplicaID(rawValue: 0xC3)
    for (stale, expected) in [(UInt64(5), "5678"), (UInt64(30), "678")] {
      var forged = RGA()
      var runs = forged.insert(
        "0123456789".unicodeScalars, at: 0, firstDot: Dot(replica: other, counter: 1))
      runs.merge(forged.delete(9..<10, firstDot: Dot(replica: Self.me, counter: stale)))
      // The dots 2 through 7, one scalar each; a stale dot 5 deletes nothing.
      let documents = Self.documentsAfterEditsOverForgedText(
        runs, context: CausalContext(replica: other, counters: 1...10), edits: 6,
        expecting: expected, "stale from \(stale)"
      ) { $0.deleteText(0..<1, in: "body", of: Self.note) }
      #expect(documents[0] == documents[1], "stale from \(stale)")
    }
  }

  static let me = ReplicaID(rawValue: 0xB2)

  /// The documents of a replica `me` that made the note (its dot 1), then received
  /// `forged` as the body's runs with `context` (lacking those of `me`), and then made
  /// `edits` edits with `edit` in one transaction: with the run left open, and closed
  /// after every edit (as edit by edit). Checks the context and the text (`expected`).
  static func documentsAfterEditsOverForgedText(
    _ forged: RGADelta, context: CausalContext = CausalContext(), edits: Int,
    expecting expected: String, _ comment: String,
    edit: (inout DocumentTransaction) -> Void
  ) -> [Document] {
    var documents: [Document] = []
    for closingEachStep in [false, true] {
      var replica = Replica(id: me, wallClock: .fixed(0))
      replica.transact { $0.create(note) }  // the dot 1
      var delta = DocumentDelta()
      delta.context = context
      delta.entities[note] = EntityDelta(fields: ["body": .text(forged)])
      replica.apply(delta)
      #expect(replica.document.context.nextDot(for: me)?.counter == 2, "\(comment)")
      replica.transact { tx in
        for _ in 0..<edits {
          edit(&tx)
          if closingEachStep { tx.closeTextRun() }
        }
      }
      let text = replica.document.text(of: "body", in: note)
      #expect(text == expected, "\(comment), closing each step: \(closingEachStep)")
      replica.document.sequence(of: "body", in: note)?._checkInvariants()
      documents.append(replica.document)
    }
    return documents
  }

  /// A long run in a text of many leaves (its ids found through the index, its runs split
  /// among leaves and out of counter order in them): the run's delta, read from the text
  /// in counter order and joined as it is read, is the edit-by-edit one, byte for byte,
  /// and so are its changes.
  @Test func aLongRunOverManyLeavesReadsBackTheEditByEditDelta() {
    for seed in UInt64(0x7E4B00)..<0x7E4B00 + 12 {
      var random = SeededGenerator(seed: seed)
      var (batched, editByEdit) = Self.startingPair(using: &random)
      let start = batched.document.count(of: EntityText("body", of: Self.note))
      let script = random.next()
      func type(_ tx: inout DocumentTransaction, closingEachStep: Bool) {
        var random = SeededGenerator(seed: script)
        var length = start  // kept here: reading the document would close the run
        for _ in 0..<600 {
          let position = Int.random(in: 0...length, using: &random)
          if Int.random(in: 0..<3, using: &random) == 0 {
            let end = Swift.min(length, position + Int.random(in: 1...3, using: &random))
            tx.deleteText(position..<end, in: "body", of: Self.note)
            length -= end - position
          } else {
            let scalars = (0..<Int.random(in: 1...3, using: &random)).map { _ in
              Self.alphabet.randomElement(using: &random) ?? "a"
            }
            tx.insertText(
              String(String.UnicodeScalarView(scalars)), at: position, in: "body", of: Self.note)
            length += scalars.count
          }
          if closingEachStep { tx.closeTextRun() }
        }
      }
      let runs = batched.transact { type(&$0, closingEachStep: false) }
      let lone = editByEdit.transact { type(&$0, closingEachStep: true) }
      #expect(runs.delta.encoded() == lone.delta.encoded(), "seed \(seed)")
      #expect(runs.delta == lone.delta, "seed \(seed)")
      #expect(runs.changes == lone.changes, "seed \(seed)")
      #expect(batched.document == editByEdit.document, "seed \(seed)")
      #expect((batched.document.sequence(of: "body", in: Self.note)?.leaves.count ?? 0) > 1)
    }
  }

  /// A peer that receives a run's delta ends with the writer's text.
  @Test func aRunsDeltaRebuildsTheText() {
    for seed in UInt64(0x7E4900)..<0x7E4900 + 100 {
      var random = SeededGenerator(seed: seed)
      var (writer, _) = Self.startingPair(using: &random)
      var peer = Replica(id: ReplicaID(rawValue: 0xC3), wallClock: .fixed(0))
      peer.apply(writer.document.delta(since: CausalContext()))
      let steps = Int.random(in: 1...60, using: &random)
      let commit = writer.transact { tx in
        for _ in 0..<steps { Self.randomStep(&tx, using: &random) }
      }
      peer.apply(commit.delta)
      #expect(peer.document == writer.document, "seed \(seed)")
    }
  }
}
