import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// Undo and redo take back this replica's own edits only, by issuing new operations that
/// converge like any other: the scenarios of Yjs's UndoManager tests (facts of behaviour,
/// re-derived here), the field kinds of a document, and seeded interleavings with remote
/// edits.
@Suite struct UndoTests {
  static let note = EntityKey(type: "note", id: "n1")

  /// A replica with a fixed id and clock, and a history that never groups on its own.
  static func device(_ id: UInt64) -> (Replica, UndoHistory) {
    (
      Replica(id: ReplicaID(rawValue: id), wallClock: .fixed(1_000 * id)),
      UndoHistory(groupingInterval: .zero)
    )
  }

  static func body(_ replica: Replica) -> String {
    replica.document.text(of: "body", in: note)
  }

  /// A phone that typed `text` into the note, recorded in `history`, and a laptop that
  /// synced with it since.
  static func typedOnPhoneThenSynced(_ text: String) -> (
    phone: Replica, laptop: Replica, history: UndoHistory
  ) {
    var (phone, history) = device(1)
    var (laptop, _) = device(2)
    phone.transact(recordingUndoIn: &history) {
      $0.insertText(text, at: 0, in: "body", of: note)
    }
    sync(&phone, &laptop)
    return (phone, laptop, history)
  }

  /// Sends each replica everything the other lacks.
  static func sync(_ a: inout Replica, _ b: inout Replica) {
    let toB = a.delta(since: b.context)
    let toA = b.delta(since: a.context)
    b.apply(toB)
    a.apply(toA)
  }

  /// The `UndoHistory` documentation's sample, verbatim.
  @Test func docCommentSampleUndoesTheSecondWord() {
    var replica = Replica()
    var history = UndoHistory()
    let note = EntityKey(type: "note", id: "n1")
    replica.transact(recordingUndoIn: &history) { tx in
      tx.insertText("Hello", at: 0, in: "body", of: note)
    }
    history.stopGrouping()  // or wait longer than the grouping interval
    replica.transact(recordingUndoIn: &history) { tx in
      tx.insertText(" world", at: 5, in: "body", of: note)
    }
    let undone = replica.undo(&history)  // "Hello"; send undone?.delta like any commit
    replica.redo(&history)  // "Hello world" again

    #expect(undone?.changes[note]?.textChanges["body"]?.first?.scalarRange == 5..<11)
    #expect(replica.document.text(of: "body", in: note) == "Hello world")
    replica.undo(&history)
    #expect(replica.document.text(of: "body", in: note) == "Hello")
  }

  /// Yjs `testUndoText`, first part: text typed and deleted in one transaction undoes to
  /// nothing; undo follows text that an earlier undo re-inserted.
  @Test func undoFollowsReinsertedText() {
    var (phone, history) = Self.device(1)
    phone.transact(recordingUndoIn: &history) { tx in
      tx.insertText("test", at: 0, in: "body", of: Self.note)
      tx.deleteText(0..<4, in: "body", of: Self.note)
    }
    phone.undo(&history)
    #expect(Self.body(phone) == "")

    phone.transact(recordingUndoIn: &history) {
      $0.insertText("a", at: 0, in: "body", of: Self.note)
    }
    phone.transact(recordingUndoIn: &history) { $0.deleteText(0..<1, in: "body", of: Self.note) }
    phone.undo(&history)
    #expect(Self.body(phone) == "a")
    phone.undo(&history)
    #expect(Self.body(phone) == "")
    phone.redo(&history)
    #expect(Self.body(phone) == "a")
    phone.redo(&history)
    #expect(Self.body(phone) == "")
  }

  /// Yjs `testUndoText`, second part: undo removes only local text; redo puts it back
  /// where it was; a remote delete of part of it stays deleted through undo and redo.
  @Test func undoRemovesOnlyLocalText() {
    var (phone, history) = Self.device(1)
    var (laptop, _) = Self.device(2)
    phone.transact(recordingUndoIn: &history) {
      $0.insertText("abc", at: 0, in: "body", of: Self.note)
    }
    laptop.transact { $0.insertText("xyz", at: 0, in: "body", of: Self.note) }
    Self.sync(&phone, &laptop)
    let merged = Self.body(phone)
    #expect(merged.count == 6)
    phone.undo(&history)
    #expect(Self.body(phone) == "xyz")
    phone.redo(&history)
    #expect(Self.body(phone) == merged)
    Self.sync(&phone, &laptop)
    // The laptop deletes the phone's "a".
    let position = Array(Self.body(laptop).unicodeScalars).firstIndex(of: "a") ?? 0
    laptop.transact { $0.deleteText(position..<position + 1, in: "body", of: Self.note) }
    Self.sync(&phone, &laptop)
    phone.undo(&history)
    #expect(Self.body(phone) == "xyz")
    phone.redo(&history)
    #expect(Self.body(phone) == merged.replacingOccurrences(of: "a", with: ""))
    Self.sync(&phone, &laptop)
    #expect(phone.document == laptop.document)
  }

  /// A remote insert inside a range being undone survives the undo, in place.
  @Test func aRemoteInsertInsideUndoneTextSurvives() {
    var (phone, laptop, history) = Self.typedOnPhoneThenSynced("hello")
    laptop.transact { $0.insertText("X", at: 2, in: "body", of: Self.note) }
    Self.sync(&phone, &laptop)
    #expect(Self.body(phone) == "heXllo")
    let undone = phone.undo(&history)
    #expect(Self.body(phone) == "X")
    laptop.apply(undone?.delta ?? DocumentDelta())
    #expect(Self.body(laptop) == "X")
    phone.redo(&history)
    #expect(Self.body(phone) == "heXllo")
  }

  /// Undo after a remote delete of the same text does nothing harmful: nothing is left
  /// to take back, so the step is dropped and nothing is sent.
  @Test func undoAfterARemoteDeleteOfTheSameTextDoesNothing() {
    var (phone, laptop, history) = Self.typedOnPhoneThenSynced("abc")
    laptop.transact { $0.deleteText(0..<3, in: "body", of: Self.note) }
    Self.sync(&phone, &laptop)
    #expect(phone.undo(&history) == nil)
    #expect(!history.canUndo)
    #expect(Self.body(phone) == "")
  }

  /// Undoing a delete re-inserts the text at the place its characters held, after remote
  /// edits around it.
  @Test func undoingADeleteReinsertsTheTextWhereItStood() {
    var (phone, history) = Self.device(1)
    var (laptop, _) = Self.device(2)
    phone.transact { $0.insertText("one two three", at: 0, in: "body", of: Self.note) }
    Self.sync(&phone, &laptop)
    phone.transact(recordingUndoIn: &history) { $0.deleteText(4..<8, in: "body", of: Self.note) }
    laptop.transact { $0.insertText("zero ", at: 0, in: "body", of: Self.note) }
    Self.sync(&phone, &laptop)
    #expect(Self.body(phone) == "zero one three")
    phone.undo(&history)
    #expect(Self.body(phone) == "zero one two three")
    phone.redo(&history)
    #expect(Self.body(phone) == "zero one three")
  }

  /// Undoing a tag added to an entity another device deleted since revives the entity
  /// (any field edit does); redo then puts the tag back and leaves the entity deleted, as
  /// it was before the undo.
  @Test func redoOfATagUndoneOnADeletedEntityLeavesItDeleted() {
    var (phone, history) = Self.device(1)
    var (laptop, _) = Self.device(2)
    phone.transact { $0.create(Self.note) }
    phone.transact(recordingUndoIn: &history) {
      $0.insert(.string("work"), into: "tags", of: Self.note)
    }
    Self.sync(&phone, &laptop)
    laptop.transact { $0.delete(Self.note) }
    Self.sync(&phone, &laptop)
    #expect(!phone.document.contains(Self.note))
    phone.undo(&history)
    #expect(phone.document.elements(of: "tags", in: Self.note).isEmpty)
    phone.redo(&history)
    #expect(phone.document.elements(of: "tags", in: Self.note) == [.string("work")])
    #expect(!phone.document.contains(Self.note))
  }

  /// A history bounded to three steps forgets the oldest: five words typed as five steps
  /// undo back to the first two, and a grouped step counts once.
  @Test func aBoundedHistoryForgetsItsOldestSteps() {
    var (phone, _) = Self.device(1)
    var history = UndoHistory(groupingInterval: .zero, maximumSteps: 3)
    for word in ["a", "b", "c", "d", "e"] {
      let end = Self.body(phone).unicodeScalars.count
      phone.transact(recordingUndoIn: &history) {
        $0.insertText(word, at: end, in: "body", of: Self.note)
      }
    }
    #expect(history.undoSteps.count == 3)
    while phone.undo(&history) != nil {}
    #expect(Self.body(phone) == "ab")
    while phone.redo(&history) != nil {}
    #expect(Self.body(phone) == "abcde")
    // Grouped keystrokes are one step, however many.
    var grouped = UndoHistory(groupingInterval: .seconds(3_600), maximumSteps: 1)
    for _ in 0..<4 {
      phone.transact(recordingUndoIn: &grouped) {
        $0.insertText("x", at: 0, in: "body", of: Self.note)
      }
    }
    phone.undo(&grouped)
    #expect(Self.body(phone) == "abcde")
    #expect(!grouped.canUndo)
  }

  /// Text deleted in pieces within one step comes back in its order, each piece where it
  /// stood (re-inserting every piece at the first piece's place would give "acb").
  @Test func textDeletedInPiecesComesBackInOrder() {
    var (phone, _) = Self.device(1)
    phone.transact { $0.insertText("abcd", at: 0, in: "body", of: Self.note) }
    var grouped = UndoHistory(groupingInterval: .seconds(3_600))
    phone.transact(recordingUndoIn: &grouped) { $0.deleteText(1..<2, in: "body", of: Self.note) }
    phone.transact(recordingUndoIn: &grouped) { $0.deleteText(0..<2, in: "body", of: Self.note) }
    #expect(Self.body(phone) == "d")
    phone.undo(&grouped)
    #expect(Self.body(phone) == "abcd")
    phone.redo(&grouped)
    #expect(Self.body(phone) == "d")
    phone.undo(&grouped)
    #expect(Self.body(phone) == "abcd")
  }

  /// Yjs `testUndoMap`: a register gets its previous value back; a write another device
  /// made later is never overwritten by undo or redo.
  @Test func undoRestoresARegisterOnlyWhileItsWriteStillWins() {
    var (phone, history) = Self.device(1)
    var (laptop, _) = Self.device(2)
    phone.transact(recordingUndoIn: &history) { $0.setValue(.int(0), for: "a", of: Self.note) }
    phone.transact(recordingUndoIn: &history) { $0.setValue(.int(1), for: "a", of: Self.note) }
    phone.undo(&history)
    #expect(phone.document.value(of: "a", in: Self.note) == .int(0))
    phone.undo(&history)
    #expect(phone.document.value(of: "a", in: Self.note) == .null)
    #expect(!phone.document.contains(Self.note))
    phone.redo(&history)
    phone.redo(&history)
    #expect(phone.document.value(of: "a", in: Self.note) == .int(1))
    Self.sync(&phone, &laptop)
    laptop.transact { $0.setValue(.int(44), for: "a", of: Self.note) }
    Self.sync(&phone, &laptop)
    #expect(phone.undo(&history) == nil)
    #expect(phone.document.value(of: "a", in: Self.note) == .int(44))
    #expect(phone.redo(&history) == nil)
    #expect(phone.document.value(of: "a", in: Self.note) == .int(44))
  }

  /// A tag added here is removed by undo through this replica's adds alone: the same tag
  /// added concurrently on another device stays. A removed tag comes back.
  @Test func undoRemovesOnlyThisReplicasAddsOfATag() {
    var (phone, history) = Self.device(1)
    var (laptop, _) = Self.device(2)
    phone.transact { $0.create(Self.note) }
    Self.sync(&phone, &laptop)
    phone.transact(recordingUndoIn: &history) {
      $0.insert(.string("work"), into: "tags", of: Self.note)
      $0.insert(.string("home"), into: "tags", of: Self.note)
    }
    laptop.transact { $0.insert(.string("work"), into: "tags", of: Self.note) }
    Self.sync(&phone, &laptop)
    phone.undo(&history)
    #expect(phone.document.elements(of: "tags", in: Self.note) == [.string("work")])
    phone.redo(&history)
    #expect(
      Set(phone.document.elements(of: "tags", in: Self.note)) == [.string("work"), .string("home")])

    phone.transact(recordingUndoIn: &history) {
      $0.remove(.string("home"), from: "tags", of: Self.note)
    }
    #expect(phone.document.elements(of: "tags", in: Self.note) == [.string("work")])
    phone.undo(&history)
    #expect(
      Set(phone.document.elements(of: "tags", in: Self.note)) == [.string("work"), .string("home")])
    Self.sync(&phone, &laptop)
    #expect(phone.document == laptop.document)
  }

  /// Undoing the delete of an entity brings it back with all its fields; undoing its
  /// creation hides it, unless another device edited it concurrently.
  @Test func undoRestoresADeletedEntityWhole() {
    var (phone, history) = Self.device(1)
    var (laptop, _) = Self.device(2)
    phone.transact(recordingUndoIn: &history) { tx in
      tx.create(Self.note)
      tx.setValue(.string("Groceries"), for: "title", of: Self.note)
      tx.insert(.string("home"), into: "tags", of: Self.note)
      tx.insertText("milk", at: 0, in: "body", of: Self.note)
    }
    phone.transact(recordingUndoIn: &history) { $0.delete(Self.note) }
    #expect(!phone.document.contains(Self.note))
    phone.undo(&history)
    #expect(phone.document.contains(Self.note))
    #expect(phone.document.value(of: "title", in: Self.note) == .string("Groceries"))
    #expect(phone.document.elements(of: "tags", in: Self.note) == [.string("home")])
    #expect(Self.body(phone) == "milk")
    phone.undo(&history)
    #expect(!phone.document.contains(Self.note))
    phone.redo(&history)
    #expect(phone.document.value(of: "title", in: Self.note) == .string("Groceries"))
    #expect(Self.body(phone) == "milk")

    // The creation undone again, while the laptop edits the note: the laptop's edit keeps
    // it, with the laptop's field.
    Self.sync(&phone, &laptop)
    laptop.transact { $0.setValue(.bool(true), for: "pinned", of: Self.note) }
    phone.undo(&history)
    Self.sync(&phone, &laptop)
    #expect(phone.document.contains(Self.note))
    #expect(phone.document.value(of: "pinned", in: Self.note) == .bool(true))
    #expect(phone.document == laptop.document)
  }

  /// Transactions recorded within the grouping interval form one step; `stopGrouping()`
  /// ends a step; a new edit clears the redo stack.
  @Test func groupingMakesOneStepOfAWord() {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    var history = UndoHistory(groupingInterval: .seconds(3_600))
    for (offset, letter) in "hello".enumerated() {
      replica.transact(recordingUndoIn: &history) {
        $0.insertText(String(letter), at: offset, in: "body", of: Self.note)
      }
    }
    history.stopGrouping()
    replica.transact(recordingUndoIn: &history) {
      $0.insertText("!", at: 5, in: "body", of: Self.note)
    }
    replica.undo(&history)
    #expect(Self.body(replica) == "hello")
    replica.undo(&history)
    #expect(Self.body(replica) == "")
    #expect(!history.canUndo)
    #expect(history.canRedo)
    replica.transact(recordingUndoIn: &history) {
      $0.insertText("x", at: 0, in: "body", of: Self.note)
    }
    #expect(!history.canRedo)
  }

  /// Seeded interleavings of local edits (recorded), undo, redo and deliveries on three
  /// replicas: an undo or redo never takes back another replica's text, tags or later
  /// register writes, and once every delta has arrived every replica holds the same
  /// document.
  @Test func undoInterleavedWithRemoteEditsConverges() throws {
    try forEachSeed(count: 60, base: 0x0DD0) { random in
      var replicas = (1...3).map {
        Replica(id: ReplicaID(rawValue: UInt64($0)), wallClock: .fixed(UInt64($0)))
      }
      var histories = (1...3).map { _ in UndoHistory(groupingInterval: .zero) }
      var deltas: [DocumentDelta] = []
      for _ in 0..<Int.random(in: 20...60, using: &random) {
        let at = Int.random(in: 0..<3, using: &random)
        let choice = Int.random(in: 0..<10, using: &random)
        if choice < 2, let delta = deltas.randomElement(using: &random) {
          replicas[at].apply(delta)
          continue
        }
        if choice < 5 {
          let before = replicas[at].document
          let commit =
            choice < 4 ? replicas[at].undo(&histories[at]) : replicas[at].redo(&histories[at])
          if let commit {
            deltas.append(commit.delta)
            try Self.checkOnlyOwnEditsChanged(
              before: before, after: replicas[at].document, by: replicas[at].id)
          }
          continue
        }
        let commit = replicas[at].transact(recordingUndoIn: &histories[at]) { tx in
          Self.randomEdit(&tx, using: &random)
        }
        deltas.append(commit.delta)
      }
      for index in replicas.indices {
        for delta in deltas.shuffled(using: &random) { replicas[index].apply(delta) }
      }
      guard replicas.allSatisfy({ $0.document == replicas[0].document }) else {
        throw LawViolation(
          law: "replicas differ after undo: \(replicas.map { Self.body($0) })", witnesses: [])
      }
    }
  }

  /// On one replica, undoing step after step retraces the texts before each step, and
  /// redoing them retraces the texts after each, whatever the edits.
  @Test func undoAndRedoRetraceEveryStep() throws {
    try forEachSeed(count: 300, base: 0x7E7) { random in
      var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
      var history = UndoHistory(groupingInterval: .seconds(3_600))
      var texts = [Self.body(replica)]
      var script: [String] = []
      for _ in 0..<Int.random(in: 1...6, using: &random) {
        history.stopGrouping()
        for _ in 0..<Int.random(in: 1...4, using: &random) {
          let count = replica.document.sequence(of: "body", in: Self.note)?.count ?? 0
          let position = Int.random(in: 0...count, using: &random)
          replica.transact(recordingUndoIn: &history) { tx in
            if count > 0, Bool.random(using: &random) {
              let start = Swift.min(position, count - 1)
              let end = Swift.min(count, start + Int.random(in: 1...3, using: &random))
              script.append("delete \(start)..<\(end)")
              tx.deleteText(start..<end, in: "body", of: Self.note)
            } else {
              let letters = String("abcdefghijklmnop".prefix(Int.random(in: 1...3, using: &random)))
              script.append("insert \(letters) at \(position)")
              tx.insertText(letters, at: position, in: "body", of: Self.note)
            }
          }
        }
        script.append("step")
        texts.append(Self.body(replica))
      }
      for step in texts.indices.dropFirst().reversed() {
        replica.undo(&history)
        guard Self.body(replica) == texts[step - 1] else {
          throw LawViolation(
            law: "undo of step \(step) gave \(Self.body(replica)), not \(texts[step - 1]); "
              + script.joined(separator: "; "), witnesses: [])
        }
      }
      for step in texts.indices.dropFirst() {
        replica.redo(&history)
        guard Self.body(replica) == texts[step] else {
          throw LawViolation(
            law: "redo of step \(step) gave \(Self.body(replica)), not \(texts[step]); "
              + script.joined(separator: "; "), witnesses: [])
        }
      }
    }
  }

  static func randomEdit(_ tx: inout DocumentTransaction, using random: inout SeededGenerator) {
    let count = tx.document.sequence(of: "body", in: note)?.count ?? 0
    switch Int.random(in: 0..<7, using: &random) {
    case 0, 1:
      let letters = (0..<Int.random(in: 1...4, using: &random)).map { _ in
        "abcdéfgh😀".randomElement(using: &random).map(String.init) ?? "a"
      }
      tx.insertText(
        letters.joined(), at: Int.random(in: 0...count, using: &random), in: "body", of: note)
    case 2 where count > 0:
      let start = Int.random(in: 0..<count, using: &random)
      tx.deleteText(
        start..<Swift.min(count, start + Int.random(in: 1...3, using: &random)), in: "body",
        of: note)
    case 3:
      tx.setValue(.int(Int64.random(in: 0..<5, using: &random)), for: "title", of: note)
    case 4:
      tx.insert(.int(Int64.random(in: 0..<3, using: &random)), into: "tags", of: note)
    case 5:
      tx.remove(.int(Int64.random(in: 0..<3, using: &random)), from: "tags", of: note)
    default:
      if Bool.random(using: &random) { tx.delete(note) } else { tx.create(note) }
    }
  }

  /// Checks that an undo or redo by `replica` left every other replica's characters, tags
  /// and winning register writes as they were.
  static func checkOnlyOwnEditsChanged(
    before: Document, after: Document, by replica: ReplicaID
  ) throws {
    func characters(_ document: Document) -> Set<Dot> {
      guard let text = document.sequence(of: "body", in: note) else { return [] }
      return Set((0..<text.count).compactMap { text.anchor(at: $0).character })
    }
    let kept = characters(after)
    for character in characters(before) where character.replica != replica {
      guard kept.contains(character) else {
        throw LawViolation(law: "undo by \(replica) deleted \(character)", witnesses: [])
      }
    }
    let oldFields = before.entities[note]?.fields
    let newFields = after.entities[note]?.fields
    if case .set(let oldTags)? = oldFields?["tags"] {
      for (element, presence) in oldTags {
        let othersAdd = presence.added.containsEntry { id, counter in
          id != replica && counter > presence.removed[id]
        }
        guard othersAdd, case .set(let newTags)? = newFields?["tags"],
          newTags[element]?.isPresent != true
        else { continue }
        throw LawViolation(law: "undo by \(replica) removed \(element)", witnesses: [])
      }
    }
    if case .register(let old)? = oldFields?["title"], let stamp = old.stamp,
      stamp.dot.replica != replica, case .register(let new)? = newFields?["title"],
      new.stamp != stamp
    {
      throw LawViolation(law: "undo by \(replica) overwrote \(stamp)", witnesses: [])
    }
  }
}
