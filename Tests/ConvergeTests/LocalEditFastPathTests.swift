import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCRDTs
@testable import ConvergeCodec
@testable import ConvergeCore
@testable import ConvergeDocument

/// The fast paths of live local editing (one transaction per keystroke) against the
/// general code they shortcut, on seeded random typing by two replicas so that origins
/// and delete targets name either replica.
@Suite struct LocalEditFastPathTests {
  static let note = EntityKey(type: "note", id: "n1")
  static let alphabet: [Unicode.Scalar] = ["a", "b", " ", "é", "\u{1F600}", "\n", "ß", "中"]

  /// A random edit: an insert, a delete, a replacement, or an edit of another field.
  static func randomEdit(
    _ tx: inout DocumentTransaction, length: Int, using random: inout SeededGenerator
  ) {
    let position = Int.random(in: 0...length, using: &random)
    let string = String(
      String.UnicodeScalarView(
        (0..<Int.random(in: 1...4, using: &random)).map { _ in
          alphabet.randomElement(using: &random) ?? "a"
        }))
    switch Int.random(in: 0..<10, using: &random) {
    case 0..<5: tx.insertText(string, at: position, in: "body", of: note)
    case 5..<8:
      tx.deleteText(
        position..<position + Int.random(in: 1...3, using: &random), in: "body", of: note)
    case 8: tx.replaceText(position..<position + 2, with: string, in: "body", of: note)
    default: tx.insertText(string, at: 0, in: "title", of: note)
    }
  }

  /// Runs seeded random typing on two replicas, passing each transaction's delta to `check`.
  static func typeRandomly(seed: UInt64, edits: Int, _ check: (DocumentDelta) -> Void) {
    var random = SeededGenerator(seed: seed)
    var replicas = [
      Replica(id: ReplicaID(rawValue: 0xB2), wallClock: .fixed(0)),
      Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(0)),
    ]
    for _ in 0..<edits {
      let writer = Int.random(in: 0..<2, using: &random)
      let length = replicas[writer].document.text(of: "body", in: note).unicodeScalars.count
      let commit = replicas[writer].transact { randomEdit(&$0, length: length, using: &random) }
      check(commit.delta)
      // Usually deliver, so later edits name the other replica's characters.
      if Int.random(in: 0..<4, using: &random) > 0 { replicas[1 - writer].apply(commit.delta) }
    }
  }

  /// The compact-form test as it was before its single-run shortcut.
  static func generalTextEdit(of delta: DocumentDelta) -> DocumentDelta.TextEditBody? {
    guard delta.entities.count == 1, let (key, entity) = delta.entities.first,
      entity.fields.count == 1, let field = entity.fields.keys.first,
      let fieldDelta = entity.fields.values.first,
      case .text(let runs) = fieldDelta, entity.presence.removed.isEmpty,
      entity.presence.added.count == 1, delta.context.replicaCount == 1,
      let (replica, counters) = DocumentDelta.events(of: runs),
      entity.presence.added[replica] == counters.maximum,
      delta.context.counters(of: replica) == counters
    else { return nil }
    return DocumentDelta.TextEditBody(key: key, field: field, runs: runs)
  }

  @Test func singleRunTextEditsTakeTheRunsTheGeneralPathTakes() {
    for seed in UInt64(1)...20 {
      var shortcuts = 0
      var unbuilt = 0
      Self.typeRandomly(seed: seed, edits: 200) { delta in
        // A keystroke's delta is kept as a text edit; its tables must not differ.
        if delta.storedTextEdit != nil { unbuilt += 1 }
        var stored = delta
        stored.entities = delta.entities
        #expect(stored.storedTextEdit == nil)
        #expect(stored == delta, "seed \(seed)")
        #expect(stored.encoded() == delta.encoded(), "seed \(seed)")
        // Its context too is kept as one range until read.
        var storedContext = delta
        storedContext.context = delta.context
        #expect(storedContext.storedTextEdit == nil)
        #expect(storedContext == delta, "seed \(seed)")
        #expect(storedContext.encoded() == delta.encoded(), "seed \(seed)")
        #expect(storedContext.isEmpty == delta.isEmpty, "seed \(seed)")
        #expect(storedContext.textEditBody?.runs == delta.textEditBody?.runs, "seed \(seed)")
        let other = DocumentDelta(
          textEdit: .init(
            key: Self.note, field: "x", runs: RGADelta(), replica: ReplicaID(rawValue: 9),
            counters: 1...1))
        var merged = other
        merged.merge(delta)
        var mergedStored = storedContext
        mergedStored.merge(other)
        #expect(merged == mergedStored, "seed \(seed)")
        #expect(merged.context.contains(Dot(replica: ReplicaID(rawValue: 9), counter: 1)))
        #expect(stored.isEmpty == delta.isEmpty, "seed \(seed)")
        #expect(stored.latestTimestamp == delta.latestTimestamp, "seed \(seed)")
        let general = Self.generalTextEdit(of: stored)
        let fast = delta.textEditBody
        #expect(fast?.key == general?.key, "seed \(seed)")
        #expect(fast?.field == general?.field, "seed \(seed)")
        #expect(fast?.runs == general?.runs, "seed \(seed)")
        guard let edit = fast else { return }
        // The message's runs: the keystroke's own when it is one run, else the canonical
        // ones; either way, what the general path makes.
        let inGeneral = DocumentDelta.messageRunsInGeneral(of: edit.runs)
        let runs = DocumentDelta.messageRuns(of: edit.runs)
        #expect(runs == inGeneral, "seed \(seed)")
        if let runs, edit.runs.inserts.count + edit.runs.deletes.count == 1 {
          shortcuts += 1
          let ids = runs.inserts.map { $0.id }
          #expect(ids == (inGeneral?.inserts.map { $0.id } ?? []), "seed \(seed)")
          #expect(runs.deletes == (inGeneral?.deletes ?? []), "seed \(seed)")
        }
      }
      #expect(shortcuts > 50, "seed \(seed): the single-run shortcut was hardly taken")
      #expect(unbuilt > 50, "seed \(seed): keystroke deltas were hardly kept unbuilt")
    }
  }

  /// A transaction's in-place text edit must leave the document exactly as applying its
  /// delta through the general ``Document/apply(_:)`` does, and report the same entities,
  /// kinds and fields; on a deleted entity too, which the edit revives.
  @Test func localTextEditsEqualApplyingTheirDelta() {
    for seed in UInt64(1)...20 {
      var random = SeededGenerator(seed: seed, stream: 1)
      var replica = Replica(id: ReplicaID(rawValue: 0xC3), wallClock: .fixed(0))
      for step in 0..<150 {
        let before = replica.document
        if Int.random(in: 0..<25, using: &random) == 0 {
          replica.transact { $0.delete(Self.note) }
          continue
        }
        let snapshot = before.text(of: "body", in: Self.note)
        let length = snapshot.unicodeScalars.count
        let commit = replica.transact { tx in
          for _ in 0..<Int.random(in: 1...2, using: &random) {
            Self.randomEdit(&tx, length: length, using: &random)
          }
        }
        // The edit happens in place, but never in a copy of the document.
        #expect(before.text(of: "body", in: Self.note) == snapshot, "seed \(seed), step \(step)")
        // A lone edit's UTF-16 range is that of the text it applies to (the shortcut for
        // texts without scalars above U+FFFF included).
        let reported = commit.changes.entities.flatMap { $0.textChanges["body"] ?? [] }
        if reported.count == 1, let change = reported.first,
          let text = (change.kind == .insert ? replica.document : before).sequence(
            of: "body", in: Self.note)
        {
          let expected =
            text.utf16Offset(
              ofScalarOffset: change.scalarRange.lowerBound)..<text.utf16Offset(
              ofScalarOffset: change.scalarRange.upperBound)
          #expect(change.utf16Range == expected, "seed \(seed), step \(step)")
        }
        var general = before
        let changes = general.apply(commit.delta)
        #expect(general == replica.document, "seed \(seed), step \(step)")
        #expect(
          changes.entities.map { "\($0.key) \($0.kind) \($0.fields)" }
            == commit.changes.entities.map { "\($0.key) \($0.kind) \($0.fields)" },
          "seed \(seed), step \(step)")
        #expect(
          changes.entities.map { $0.textChanges.keys.sorted() }
            == commit.changes.entities.map { $0.textChanges.keys.sorted() },
          "seed \(seed), step \(step)")
      }
    }
  }

  /// Register and set writes apply in place (no delta of their own is built): the
  /// document must be that of applying the transaction's delta, for transactions that mix
  /// them with creates, deletes and text on several entities. A transaction reports every
  /// field an edit changed, so it reports at least what the net delta changes (an add
  /// and a remove of one tag in one transaction is reported; the delta's net is nothing).
  @Test func localFieldWritesEqualApplyingTheirDelta() {
    let keys = (0..<3).map { EntityKey(type: "note", id: "n\($0)") }
    let tags: [FieldValue] = [.string("a"), .string("b"), .int(3)]
    for seed in UInt64(1)...20 {
      var random = SeededGenerator(seed: seed, stream: 2)
      var replica = Replica(id: ReplicaID(rawValue: 0xD4), wallClock: .fixed(0))
      for step in 0..<100 {
        let before = replica.document
        let commit = replica.transact { tx in
          for _ in 0..<Int.random(in: 1...4, using: &random) {
            let key = keys.randomElement(using: &random) ?? keys[0]
            let tag = tags.randomElement(using: &random) ?? tags[0]
            switch Int.random(in: 0..<12, using: &random) {
            case 0: tx.create(key)
            case 1: tx.delete(key)
            case 2..<5: tx.setValue(.int(Int64(step)), for: "rank", of: key)
            case 5: tx.setValue(.string("t\(step)"), for: "title", of: key)
            case 6..<8: tx.insert(tag, into: "tags", of: key)
            case 8..<10: tx.remove(tag, from: "tags", of: key)
            case 10: tx.insertText("x", at: 0, in: "title", of: key)
            default: tx.insertText("y", at: 0, in: "body", of: key)
            }
          }
        }
        var general = before
        let changes = general.apply(commit.delta)
        #expect(general == replica.document, "seed \(seed), step \(step)")
        let reported = Dictionary(
          commit.changes.entities.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        for change in changes.entities {
          #expect(reported[change.key]?.kind == change.kind, "seed \(seed), step \(step)")
          #expect(
            Set(change.fields).isSubset(of: reported[change.key]?.fields ?? []),
            "seed \(seed), step \(step)")
        }
      }
    }
  }

  /// A keystroke's changes keep their one entity unbuilt; they must read exactly as the
  /// recorder's general path builds them, for every visibility before and after.
  @Test func singleTextChangesReadAsTheGeneralRecorderBuildsThem() {
    var random = SeededGenerator(seed: 0x5EC)
    print("singleTextChangesReadAsTheGeneralRecorderBuildsThem seed 0x5EC")
    let other = EntityKey(type: "note", id: "other")
    for step in 0..<200 {
      let wasVisible = Bool.random(using: &random)
      let isVisible = Bool.random(using: &random)
      let lower = Int.random(in: 0..<50, using: &random)
      let change = TextChange(
        kind: Bool.random(using: &random) ? .insert : .delete,
        scalarRange: lower..<lower + Int.random(in: 1...3, using: &random),
        utf16Range: lower..<lower + Int.random(in: 1...6, using: &random))
      let field = Bool.random(using: &random) ? "body" : "title"
      var fast = ChangeRecorder()
      fast.noteSingleTextEdit(
        of: Self.note, field: field, wasVisible: wasVisible, isVisible: isVisible,
        change: change)
      var general = ChangeRecorder()
      general.noteChange(of: Self.note, wasVisible: wasVisible, isVisible: isVisible)
      general.noteField(field, of: Self.note, text: change)
      let document = Document()
      let unbuilt = fast.finish(in: document)
      let built = general.finish(in: document)
      #expect(unbuilt == built, "step \(step)")
      #expect(unbuilt.entities == built.entities, "step \(step)")
      #expect(unbuilt.isEmpty == built.isEmpty, "step \(step)")
      #expect(unbuilt[Self.note] == built[Self.note], "step \(step)")
      #expect(unbuilt[other] == nil, "step \(step)")
      #expect(unbuilt.created == built.created, "step \(step)")
      #expect(unbuilt.deleted == built.deleted, "step \(step)")
      #expect(unbuilt.updated == built.updated, "step \(step)")
      var modified = unbuilt
      modified.entities.append(contentsOf: built.entities)
      #expect(modified.entities == built.entities + built.entities, "step \(step)")
      // A second edit after the first goes through the general path for both.
      let second = TextChange(kind: .insert, scalarRange: 0..<1, utf16Range: 0..<1)
      fast.noteSingleTextEdit(
        of: Self.note, field: "body", wasVisible: isVisible, isVisible: true, change: second)
      general.noteChange(of: Self.note, wasVisible: isVisible, isVisible: true)
      general.noteField("body", of: Self.note, text: second)
      #expect(fast.finish(in: document) == general.finish(in: document), "step \(step)")
    }
  }

  /// A frame's checksum covers its stream id and sequence number without their bytes.
  @Test func prefixedChecksumEqualsTheChecksumOfTheConcatenation() {
    var random = SeededGenerator(seed: 0xF4A)
    print("prefixedChecksumEqualsTheChecksumOfTheConcatenation seed 0xF4A")
    for length in 0..<70 {
      let first = UInt64.random(in: 0 ... .max, using: &random)
      let second = UInt64.random(in: 0 ... .max, using: &random)
      let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
      var whole = ByteWriter()
      whole.writeUInt64(first)
      whole.writeUInt64(second)
      whole.writeBytes(bytes)
      let expected = CRC32C.checksum(whole.bytes)
      #expect(CRC32C.checksum(prefixedBy: first, second, bytes) == expected, "length \(length)")
      #expect(
        CRC32C.checksum(prefixedBy: first, second, bytes.lazy.map { $0 }) == expected,
        "length \(length)")
    }
  }

  /// A keystroke's delta, as made, as decoded or as read from a frame, is one text edit
  /// that applies in place to an existing text;
  /// the document and the changes must be those of the general apply of the same delta
  /// in its built form, on a peer that has or lacks what the delta depends on.
  @Test func textEditDeltasApplyAsTheGeneralPathDoes() throws {
    for seed in UInt64(1)...20 {
      print("textEditDeltasApplyAsTheGeneralPathDoes seed \(seed)")
      var random = SeededGenerator(seed: seed, stream: 2)
      var peer = Document()
      var fastApplies = 0
      var pending: [DocumentDelta] = []
      var sending = SessionStream(streamID: seed)
      var receiving = SessionStream()
      Self.typeRandomly(seed: seed, edits: 150) { delta in
        let bytes = delta.encoded()
        guard let decoded = try? DocumentDelta(decoding: bytes) else {
          Issue.record("seed \(seed): a delta did not decode")
          return
        }
        // Runs may be joined on the wire, so the decoded delta is compared by its bytes.
        #expect(decoded.encoded() == bytes, "seed \(seed)")
        // The decoders make the form the transaction makes.
        if delta.storedTextEdit != nil {
          #expect(decoded.storedTextEdit != nil, "seed \(seed): a text edit decoded as tables")
        }
        let framed: DocumentDelta
        do {
          framed = try receiving.decode(sending.encode(delta)[...])
        } catch {
          Issue.record("seed \(seed): a frame did not decode: \(error)")
          return
        }
        #expect(framed.encoded() == bytes, "seed \(seed)")
        if delta.storedTextEdit != nil {
          #expect(framed.storedTextEdit != nil, "seed \(seed): a text edit framed as tables")
        }
        // Sometimes held back, so that later deltas wait for their origins.
        pending.append([delta, decoded, framed][Int.random(in: 0..<3, using: &random)])
        if Int.random(in: 0..<4, using: &random) == 0 { return }
        for next in pending {
          var built = next
          built.entities = next.entities
          built.context = next.context
          var general = peer
          let generalChanges = general.apply(built)
          if next.storedTextEdit != nil { fastApplies += 1 }
          let changes = peer.apply(next)
          #expect(peer == general, "seed \(seed)")
          #expect(changes == generalChanges, "seed \(seed)")
          #expect(changes.isEmpty == generalChanges.isEmpty, "seed \(seed)")
        }
        pending = []
      }
      #expect(fastApplies > 20, "seed \(seed): the in-place apply was hardly taken")
    }
  }

  /// `normalize()` as it was before its shortcut for a single run of each kind.
  static func generalNormalized(_ delta: RGADelta) -> RGADelta {
    var result = delta
    result.normalizeInGeneral()
    return result
  }

  /// Runs with at most one of each kind, empty ones included, normalize as before.
  @Test func normalizingSmallDeltasMatchesTheGeneralPath() {
    var random = SeededGenerator(seed: 0x0A11)
    print("normalizingSmallDeltasMatchesTheGeneralPath seed 0x0A11")
    let replicas = [ReplicaID(rawValue: 1), ReplicaID(rawValue: 2)]
    for step in 0..<500 {
      var delta = RGADelta()
      for _ in 0..<Int.random(in: 0...2, using: &random) {
        let id = Dot(
          replica: replicas.randomElement(using: &random) ?? replicas[0],
          counter: UInt64.random(in: 1...6, using: &random))
        let length = Int.random(in: 0...3, using: &random)
        let lamport = UInt64.random(in: 1...6, using: &random)
        let origin: Dot? = Bool.random(using: &random) ? nil : Dot(replica: replicas[0], counter: 1)
        if Int.random(in: 0..<4, using: &random) == 0 {
          delta.inserts.append(
            RGADelta.Insert(
              id: id, lamport: lamport, origin: origin, rightOrigin: nil, droppedLength: length))
        } else {
          delta.inserts.append(
            RGADelta.Insert(
              id: id, lamport: lamport, origin: origin, rightOrigin: nil,
              scalars: Array(repeating: "a", count: length)))
        }
      }
      for _ in 0..<Int.random(in: 0...2, using: &random) {
        delta.deletes.append(
          RGADelta.Delete(
            dot: Dot(replica: replicas[1], counter: UInt64.random(in: 1...6, using: &random)),
            target: Dot(replica: replicas[0], counter: UInt64.random(in: 1...6, using: &random)),
            count: UInt64.random(in: 0...2, using: &random), isDescending: false))
      }
      var normalized = delta
      normalized.normalize()
      let expected = Self.generalNormalized(delta)
      #expect(normalized.inserts == expected.inserts, "step \(step)")
      #expect(normalized.deletes == expected.deletes, "step \(step)")
    }
  }

  /// A text typed and edited by one replica at random, and the delta of all its edits,
  /// in normal form.
  static func typedDelta(
    by replica: ReplicaID, using random: inout SeededGenerator
  ) -> RGADelta {
    var text = RGA()
    var counter: UInt64 = 1
    for _ in 0..<Int.random(in: 5...40, using: &random) {
      if text.count > 0, Int.random(in: 0..<3, using: &random) == 0 {
        let lower = Int.random(in: 0..<text.count, using: &random)
        let upper = Swift.min(text.count, lower + Int.random(in: 1...4, using: &random))
        text.delete(lower..<upper, firstDot: Dot(replica: replica, counter: counter))
        counter += UInt64(upper - lower)
      } else {
        let scalars = (0..<Int.random(in: 1...3, using: &random)).map { _ in
          alphabet.randomElement(using: &random) ?? "a"
        }
        let position = Int.random(in: 0...text.count, using: &random)
        text.insert(scalars, at: position, firstDot: Dot(replica: replica, counter: counter))
        counter += UInt64(scalars.count)
      }
    }
    return text.delta(of: replica, counters: 1...counter - 1)
  }

  /// `delta`'s runs cut in two at a random place, maybe within a run (then the two
  /// pieces must join again): both halves in normal form.
  static func cut(_ delta: RGADelta, using random: inout SeededGenerator) -> (
    RGADelta, RGADelta
  ) {
    var first = RGADelta()
    var second = RGADelta()
    (first.inserts, second.inserts) = cut(
      delta.inserts, length: \.length, slice: { $0.slice(from: $1, length: $2) },
      using: &random)
    (first.deletes, second.deletes) = cut(
      delta.deletes, length: { Int($0.count) },
      slice: { $0.slice(from: UInt64($1), count: UInt64($2)) }, using: &random)
    return (first, second)
  }

  /// `runs` cut in two at a random place, maybe within a run (`slice(run, offset,
  /// length)` its pieces).
  static func cut<Run>(
    _ runs: [Run], length: (Run) -> Int, slice: (Run, Int, Int) -> Run,
    using random: inout SeededGenerator
  ) -> ([Run], [Run]) {
    let at = Int.random(in: 0...runs.count, using: &random)
    var first = Array(runs[..<at])
    var second = Array(runs[at...])
    if let split = second.first, length(split) > 1, Bool.random(using: &random) {
      let offset = Int.random(in: 1..<length(split), using: &random)
      first.append(slice(split, 0, offset))
      second[0] = slice(split, offset, length(split) - offset)
    }
    return (first, second)
  }

  /// A transaction adds a run of edits' runs to the ones before them through
  /// `appendKeepingNormalForm`, which checks the two ends only: whenever it says the
  /// result is in normal form, it is the general normalization of the two appended, run
  /// for run; when it does not, normalizing the result gives that. Halves of one typed
  /// delta (the second follows the first: always in normal form, the delta itself, the
  /// pieces of a cut run joined again) and two unrelated deltas.
  @Test func appendingRunsKeepsNormalFormExactlyWhenItSays() {
    var joins = 0
    for seed in UInt64(0xA9E0)..<0xA9E0 + 200 {
      print("appendingRunsKeepsNormalFormExactlyWhenItSays seed \(seed)")
      var random = SeededGenerator(seed: seed)
      let whole = Self.typedDelta(by: ReplicaID(rawValue: 1), using: &random)
      let (first, second) = Self.cut(whole, using: &random)
      var appended = first
      let isNormal = appended.appendKeepingNormalForm(second)
      #expect(isNormal, "seed \(seed): halves of one delta in normal form")
      #expect(appended.inserts == whole.inserts, "seed \(seed)")
      #expect(appended.deletes == whole.deletes, "seed \(seed)")
      if appended.inserts.count < first.inserts.count + second.inserts.count
        || appended.deletes.count < first.deletes.count + second.deletes.count
      {
        joins += 1
      }

      let other = Self.typedDelta(
        by: ReplicaID(rawValue: UInt64.random(in: 1...2, using: &random)), using: &random)
      for (earlier, later) in [(whole, other), (other, whole), (second, first)] {
        var raw = earlier
        raw.inserts.append(contentsOf: later.inserts)
        raw.deletes.append(contentsOf: later.deletes)
        let expected = Self.generalNormalized(raw)
        var result = earlier
        if result.appendKeepingNormalForm(later) {
          #expect(result.inserts == expected.inserts, "seed \(seed)")
          #expect(result.deletes == expected.deletes, "seed \(seed)")
        } else {
          let normalized = Self.generalNormalized(result)
          #expect(normalized.inserts == expected.inserts, "seed \(seed)")
          #expect(normalized.deletes == expected.deletes, "seed \(seed)")
        }
      }
    }
    #expect(joins > 40, "the halves' ends were hardly joined: \(joins)")
  }

  /// A transaction's delta is in normal form: a delete over two pieces of the text whose
  /// ids continue each other (an item deleted before lies between them) is one run, and
  /// undo still restores both pieces where they were.
  @Test func aDeleteAcrossADeletedItemIsOneRunInTheDelta() {
    let me = ReplicaID(rawValue: 1)
    var replica = Replica(id: me, wallClock: .fixed(0))
    var undo = UndoHistory()
    replica.transact { $0.create(Self.note) }  // the dot 1
    replica.transact { $0.insertText("abcd", at: 0, in: "body", of: Self.note) }  // 2...5
    replica.transact { $0.insertText("X", at: 2, in: "body", of: Self.note) }  // 6
    replica.transact { $0.deleteText(2..<3, in: "body", of: Self.note) }  // 7, the X
    let commit = replica.transact(recordingUndoIn: &undo) {
      $0.deleteText(1..<3, in: "body", of: Self.note)  // 8 and 9, the b and the c
    }
    let runs = commit.delta.storedTextEdit?.runs
    #expect(
      runs?.deletes == [
        RGADelta.Delete(
          dot: Dot(replica: me, counter: 8), target: Dot(replica: me, counter: 3), count: 2,
          isDescending: false)
      ])
    #expect(replica.document.text(of: "body", in: Self.note) == "ad")
    replica.undo(&undo)
    #expect(replica.document.text(of: "body", in: Self.note) == "abcd")
  }
}
