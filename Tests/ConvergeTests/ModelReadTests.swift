import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The typed reads (`all`, `get`) give what the document holds, field by field: a
/// projection model the same fields as the whole model, in the same order, after
/// concurrent edits, merges, deletes and undo.
@Suite struct ModelReadTests {
  /// The row of a whole note.
  static func row(of note: SampleNote) -> SampleNoteRow {
    SampleNoteRow(title: note.title, tags: note.tags, pinned: note.pinned)
  }

  /// Checks every read of `replica` against the others and against the raw field reads.
  static func expectReadsAgree(_ replica: Replica, seed: UInt64) {
    let notes = replica.all(SampleNote.self)
    let rows = replica.all(SampleNoteRow.self)
    let keys = replica.document.keys(ofType: SampleNote.entityType)
    let sorted = keys.map(\.id).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    #expect(keys.map(\.id) == sorted, "seed \(seed)")
    #expect(notes.map(\.id) == keys.map(\.id), "seed \(seed)")
    #expect(rows.map(\.id) == keys.map(\.id), "seed \(seed)")
    #expect(rows.map(\.value) == notes.map { row(of: $0.value) }, "seed \(seed)")
    for (key, (note, row)) in zip(keys, zip(notes, rows)) {
      let document = replica.document
      #expect(replica.get(SampleNote.self, id: key.id) == note.value, "seed \(seed)")
      #expect(replica.get(SampleNoteRow.self, id: key.id) == row.value, "seed \(seed)")
      #expect(note.value.body == document.text(of: "body", in: key), "seed \(seed)")
      let title = document.value(of: "title", in: key).flatMap { String(fieldValue: $0) } ?? ""
      let tags = Set(document.elements(of: "tags", in: key).compactMap { String(fieldValue: $0) })
      let pinned = document.value(of: "pinned", in: key).flatMap { Bool(fieldValue: $0) } ?? false
      #expect(row.value == SampleNoteRow(title: title, tags: tags, pinned: pinned), "seed \(seed)")
    }
  }

  /// Two devices create, edit, delete and undo notes (ids from their events and chosen
  /// ids out of order, fields written in different orders), merging now and then.
  @Test(arguments: [UInt64(0x45A), 0x45B, 0x45C])
  func aProjectionReadsTheFieldsOfTheWholeRead(seed: UInt64) throws {
    print("ModelReadTests seed \(seed)")
    var random = SeededGenerator(seed: seed)
    var devices = [
      Replica(id: ReplicaID(rawValue: 7), wallClock: .fixed(1)),
      Replica(id: ReplicaID(rawValue: 9), wallClock: .fixed(1)),
    ]
    var histories = [UndoHistory(groupingInterval: .zero), UndoHistory(groupingInterval: .zero)]
    let words = ["home", "work", "later", "é", "🥚"]
    for step in 0..<120 {
      let device = Int.random(in: 0..<2, using: &random)
      let ids = devices[device].document.keys(ofType: SampleNote.entityType).map(\.id)
      switch Int.random(in: 0..<9, using: &random) {
      case 0:
        devices[device].create(SampleNote(title: "t\(step)", body: "b\(step)", tags: ["home"]))
      case 1:
        // A chosen id, out of the order of creation; some with a field written by hand
        // before the create, so the entity's field names come in another order.
        let id = "x\(Int.random(in: 0..<30, using: &random))"
        devices[device].transact(recordingUndoIn: &histories[device]) { tx in
          let key = EntityKey(type: SampleNote.entityType, id: id)
          if step % 2 == 0 { tx.setValue(.bool(true), for: "pinned", of: key) }
          tx.create(SampleNote(title: id, tags: [words[step % words.count]]), id: id)
        }
      case 2, 3:
        guard let id = ids.randomElement(using: &random) else { continue }
        devices[device].transact(recordingUndoIn: &histories[device]) { tx in
          tx.update(SampleNote.self, id: id) {
            $0.title += "!"
            $0.tags.insert(words.randomElement(using: &random) ?? "")
            $0.pinned.toggle()
          }
        }
      case 4:
        guard let id = ids.randomElement(using: &random) else { continue }
        devices[device].transact(recordingUndoIn: &histories[device]) { tx in
          tx.update(SampleNoteRow.self, id: id) { $0.tags.removeAll() }
        }
      case 5:
        guard let id = ids.randomElement(using: &random) else { continue }
        devices[device].transact(recordingUndoIn: &histories[device]) {
          $0.delete(SampleNote.self, id: id)
        }
      case 6:
        devices[device].undo(&histories[device])
      case 7:
        guard let id = ids.randomElement(using: &random) else { continue }
        let body = try EntityText(\SampleNote.body, of: id)
        devices[device].transact { $0.insertText("+", at: 0, in: body) }
      default:
        let other = 1 - device
        devices[device].apply(devices[other].delta(since: devices[device].context))
      }
      if step % 10 == 9 {
        for replica in devices { Self.expectReadsAgree(replica, seed: seed) }
      }
    }
    devices[0].apply(devices[1].delta(since: devices[0].context))
    devices[1].apply(devices[0].delta(since: devices[1].context))
    #expect(devices[0].document == devices[1].document, "seed \(seed)")
    for replica in devices { Self.expectReadsAgree(replica, seed: seed) }
    #expect(devices[0].all(SampleNoteRow.self).count > 3, "seed \(seed)")
  }

  /// A replica loaded from its saved state reads as the one saved, through the whole
  /// model and the projection, its ids created out of their order.
  @Test func aLoadedSnapshotReadsAsTheReplicaSaved() throws {
    var replica = Replica(id: ReplicaID(rawValue: 3), wallClock: .fixed(1))
    for index in 0..<20 {
      replica.create(
        SampleNote(title: "n\(index)", body: "body \(index) 🥚", tags: ["t\(index % 3)"]),
        id: "n\(19 - index)")
    }
    let loaded = try Replica(restoring: replica.encodedState())
    #expect(loaded.all(SampleNoteRow.self).map(\.id) == replica.all(SampleNoteRow.self).map(\.id))
    #expect(
      loaded.all(SampleNoteRow.self).map(\.value) == replica.all(SampleNoteRow.self).map(\.value))
    #expect(loaded.all(SampleNote.self).map(\.value) == replica.all(SampleNote.self).map(\.value))
    Self.expectReadsAgree(loaded, seed: 0)
  }

  /// A walk over a replica's own notes leaves the deleted ones out (the first, the last,
  /// two together): the rows are the visible ones in id order, before and after an id
  /// arrives out of the order of creation.
  /// A walk touches the field arrays of its rows a block ahead of reading them: at every
  /// count around a block's size (16), every row reads as a read by id does, in id order.
  @Test(arguments: [0, 1, 15, 16, 17, 31, 32, 33, 50])
  func aWalkReadsEveryRowAcrossItsBlocks(count: Int) {
    var replica = Replica(id: ReplicaID(rawValue: 5), wallClock: .fixed(1))
    for index in 0..<count {
      let tags: Set<String> = index % 3 == 0 ? ["a", "b"] : ["c"]
      replica.create(
        SampleNote(title: "n\(index)", body: "b\(index)", tags: tags, pinned: index % 2 == 0))
    }
    let rows = replica.all(SampleNoteRow.self)
    #expect(rows.map(\.value.title) == (0..<count).map { "n\($0)" })
    for row in rows { #expect(replica.get(SampleNoteRow.self, id: row.id) == row.value) }
    Self.expectReadsAgree(replica, seed: 0)
  }

  @Test func aWalkLeavesTheDeletedOut() throws {
    var replica = Replica(id: ReplicaID(rawValue: 4), wallClock: .fixed(1))
    var ids: [String] = []
    for index in 0..<8 {
      ids.append(
        replica.create(SampleNote(title: "n\(index)", tags: index % 2 == 0 ? ["a"] : [])).id)
    }
    for index in [0, 3, 4, 7] { replica.delete(SampleNote.self, id: ids[index]) }
    let visible = [1, 2, 5, 6].map { ids[$0] }
    #expect(replica.all(SampleNote.self).map(\.id) == visible)
    #expect(replica.all(SampleNoteRow.self).map(\.id) == visible)
    #expect(replica.all(SampleNoteRow.self).map(\.value.title) == ["n1", "n2", "n5", "n6"])
    Self.expectReadsAgree(replica, seed: 0)

    replica.create(SampleNote(title: "first"), id: "-")
    #expect(replica.all(SampleNoteRow.self).map(\.id) == ["-"] + visible)
    Self.expectReadsAgree(replica, seed: 0)
  }
}
