import Converge
import ConvergeTestSupport
import Testing

/// List fields of a document: edits through transactions, change events carrying a
/// remote move's indices, the concurrent cases through replicas that exchange encoded
/// deltas, and the wire form.
@Suite struct DocumentListTests {
  let board = EntityKey(type: "column", id: "todo")

  private func cards(_ names: String...) -> [FieldValue] { names.map { .string($0) } }

  /// Two replicas holding the cards `names` in the list `cards` of `board`, the second
  /// having received the first's encoded delta.
  private func twoReplicas(_ names: [String]) throws -> (Replica, Replica) {
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(1_000))
    let created = phone.transact { tx in
      for (index, name) in names.enumerated() {
        tx.insert(.string(name), at: index, intoList: "cards", of: board)
      }
    }
    laptop.apply(try DocumentDelta(decoding: created.delta.encoded()))
    return (phone, laptop)
  }

  /// Each replica applies the other's delta, through the wire.
  private func exchange(_ a: inout Replica, _ b: inout Replica, _ fromA: Commit, _ fromB: Commit)
    throws -> (DocumentChanges, DocumentChanges)
  {
    let onA = a.apply(try DocumentDelta(decoding: fromB.delta.encoded()))
    let onB = b.apply(try DocumentDelta(decoding: fromA.delta.encoded()))
    return (onA, onB)
  }

  @Test func transactionsEditAList() throws {
    var (phone, _) = try twoReplicas(["A", "B", "C"])
    #expect(phone.document.list(of: "cards", in: board) == cards("A", "B", "C"))
    #expect(phone.document.fieldKind("cards", of: board) == .list)
    #expect(phone.document.contains(board))
    let moved = phone.transact { $0.move(from: 0, to: 2, inList: "cards", of: board) }
    #expect(phone.document.list(of: "cards", in: board) == cards("B", "C", "A"))
    #expect(moved.changes[board]?.listChanges["cards"] == [.move(.string("A"), from: 0, to: 2)])
    phone.transact { $0.remove(at: 1, fromList: "cards", of: board) }
    #expect(phone.document.list(of: "cards", in: board) == cards("B", "A"))
    // A field of another kind is left alone.
    phone.transact { $0.setValue(.string("Todo"), for: "title", of: board) }
    let ignored = phone.transact { $0.insert(.string("X"), at: 0, intoList: "title", of: board) }
    #expect(ignored.delta.isEmpty)
    #expect(phone.document.value(of: "title", in: board) == .string("Todo"))
  }

  /// A remote move reaches the other device's change events with both indices, so a
  /// SwiftUI list animates it as a move.
  @Test func aRemoteMoveIsReportedAsAMove() throws {
    var (phone, laptop) = try twoReplicas(["A", "B", "C", "D"])
    let moved = phone.transact { $0.move(from: 3, to: 0, inList: "cards", of: board) }
    let changes = laptop.apply(try DocumentDelta(decoding: moved.delta.encoded()))
    #expect(changes[board]?.kind == .updated)
    #expect(changes[board]?.fields == ["cards"])
    #expect(changes[board]?.listChanges["cards"] == [.move(.string("D"), from: 3, to: 0)])
    #expect(laptop.document == phone.document)
  }

  @Test func theSameCardMovedOnTwoDevicesEndsInOnePlace() throws {
    var (phone, laptop) = try twoReplicas(["A", "B", "C", "D", "E"])
    let onPhone = phone.transact { $0.move(from: 0, to: 2, inList: "cards", of: board) }
    let onLaptop = laptop.transact { $0.move(from: 0, to: 4, inList: "cards", of: board) }
    _ = try exchange(&phone, &laptop, onPhone, onLaptop)
    let list = phone.document.list(of: "cards", in: board)
    #expect(list.filter { $0 == .string("A") }.count == 1)
    #expect(list.count == 5)
    #expect(laptop.document.list(of: "cards", in: board) == list)
    #expect(phone.document.encoded() == laptop.document.encoded())
  }

  @Test func aMoveConcurrentWithADeleteKeepsTheCard() throws {
    var (phone, laptop) = try twoReplicas(["A", "B", "C"])
    let onPhone = phone.transact { $0.remove(at: 0, fromList: "cards", of: board) }
    let onLaptop = laptop.transact { $0.move(from: 0, to: 2, inList: "cards", of: board) }
    _ = try exchange(&phone, &laptop, onPhone, onLaptop)
    #expect(phone.document.list(of: "cards", in: board) == cards("B", "C", "A"))
    #expect(phone.document.encoded() == laptop.document.encoded())
  }

  @Test func cardsInsertedIntoOneGapStayTogether() throws {
    var (phone, laptop) = try twoReplicas(["X", "Y"])
    let onPhone = phone.transact { tx in
      for (offset, name) in ["p1", "p2", "p3"].enumerated() {
        tx.insert(.string(name), at: 1 + offset, intoList: "cards", of: board)
      }
    }
    let onLaptop = laptop.transact { tx in
      for (offset, name) in ["l1", "l2", "l3"].enumerated() {
        tx.insert(.string(name), at: 1 + offset, intoList: "cards", of: board)
      }
    }
    _ = try exchange(&phone, &laptop, onPhone, onLaptop)
    #expect(
      phone.document.list(of: "cards", in: board)
        == cards("X", "p1", "p2", "p3", "l1", "l2", "l3", "Y"))
    #expect(phone.document.encoded() == laptop.document.encoded())
  }

  /// A state with lists decodes to an equal document and encodes to the same bytes; a
  /// handshake's delta brings a peer up to date.
  @Test func listsRoundTripThroughTheWire() throws {
    var (phone, laptop) = try twoReplicas(["A", "B", "C", "D"])
    phone.transact { tx in
      tx.move(from: 0, to: 3, inList: "cards", of: board)
      tx.remove(at: 1, fromList: "cards", of: board)
      tx.insert(.string("E"), at: 0, intoList: "cards", of: board)
    }
    let bytes = phone.document.encoded()
    let decoded = try Document(decoding: bytes)
    #expect(decoded == phone.document)
    #expect(decoded.encoded() == bytes)
    #expect(decoded.list(of: "cards", in: board) == phone.document.list(of: "cards", in: board))
    let missing = phone.delta(since: laptop.document.context)
    laptop.apply(try DocumentDelta(decoding: missing.encoded()))
    #expect(laptop.document == phone.document)
  }

  /// Hand-made list fields that no replica makes are refused with typed errors.
  @Test func hostileListFieldsAreRefused() throws {
    var (phone, _) = try twoReplicas(["A", "B"])
    let moved = phone.transact { $0.move(from: 0, to: 1, inList: "cards", of: board) }
    let bytes = moved.delta.encoded()
    // Every prefix is refused, and no mutation traps (checked by the robustness suites
    // over random networks with lists); here, every single-byte change of a move.
    for index in bytes.indices {
      for delta: UInt8 in [1, 0x80, 0xFF] {
        var mutated = bytes
        mutated[index] &+= delta
        if let decoded = try? DocumentDelta(decoding: mutated) {
          #expect(decoded.encoded() == mutated, "byte \(index) + \(delta)")
        }
      }
    }
  }

  /// Seeded random histories with list edits on every replica: every replica that has
  /// seen the same edits shows the same lists, no card twice.
  @Test func randomHistoriesConverge() throws {
    try forEachSeed(count: 100, base: 0x4C15_7D0C) { random in
      var network = DocumentNetwork(replicaCount: 3, rounds: 12, using: &random)
      for index in network.replicas.indices {
        for delta in network.deltas.shuffled(using: &random) {
          network.replicas[index].apply(try DocumentDelta(decoding: delta.encoded()))
        }
      }
      let first = network.replicas[0].document
      for replica in network.replicas {
        #expect(replica.document.encoded() == first.encoded(), "seed \(random.seed)")
        for key in replica.document.keys {
          let list = replica.document.list(of: "cards", in: key)
          #expect(Set(list).count == list.count, "seed \(random.seed)")
        }
      }
    }
  }

  /// Undo takes back this device's insert, move and remove, and redo makes them again.
  @Test func undoAndRedoListEdits() throws {
    var (phone, _) = try twoReplicas(["A", "B", "C"])
    var history = UndoHistory(groupingInterval: .zero)
    phone.transact(recordingUndoIn: &history) {
      $0.move(from: 0, to: 2, inList: "cards", of: board)
    }
    phone.transact(recordingUndoIn: &history) {
      $0.insert(.string("D"), at: 0, intoList: "cards", of: board)
    }
    phone.transact(recordingUndoIn: &history) {
      $0.remove(at: 1, fromList: "cards", of: board)
    }
    #expect(phone.document.list(of: "cards", in: board) == cards("D", "C", "A"))
    phone.undo(&history)
    #expect(phone.document.list(of: "cards", in: board) == cards("D", "B", "C", "A"))
    phone.undo(&history)
    #expect(phone.document.list(of: "cards", in: board) == cards("B", "C", "A"))
    phone.undo(&history)
    #expect(phone.document.list(of: "cards", in: board) == cards("A", "B", "C"))
    #expect(!history.canUndo)
    for _ in 0..<3 { phone.redo(&history) }
    #expect(phone.document.list(of: "cards", in: board) == cards("D", "C", "A"))
  }

  /// Undoing a move that another device's later move superseded leaves the card where
  /// that move put it, as a register's undo does.
  @Test func undoLeavesALaterRemoteMove() throws {
    var (phone, laptop) = try twoReplicas(["A", "B", "C"])
    var history = UndoHistory(groupingInterval: .zero)
    let mine = phone.transact(recordingUndoIn: &history) {
      $0.move(from: 0, to: 2, inList: "cards", of: board)
    }
    laptop.apply(mine.delta)
    let theirs = laptop.transact { $0.move(from: 2, to: 1, inList: "cards", of: board) }
    phone.apply(theirs.delta)
    #expect(phone.document.list(of: "cards", in: board) == cards("B", "A", "C"))
    phone.undo(&history)
    #expect(phone.document.list(of: "cards", in: board) == cards("B", "A", "C"))
  }
}
