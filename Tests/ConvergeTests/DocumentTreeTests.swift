import Converge
import ConvergeTestSupport
import Testing

/// Parent fields: moves through transactions, the forest every replica resolves, the
/// named concurrent cases through replicas that exchange encoded deltas, sibling order
/// from a list field, undo and the wire form.
@Suite struct DocumentTreeTests {
  private func node(_ id: String) -> EntityKey { EntityKey(type: "task", id: id) }

  /// A phone and a laptop (the laptop's clock later) that both hold the nodes `ids`,
  /// each created as a root.
  private func twoReplicas(_ ids: [String]) throws -> (Replica, Replica) {
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(2_000))
    let created = phone.transact { tx in
      for id in ids { tx.setParent(nil, of: node(id), in: "parent") }
    }
    laptop.apply(try DocumentDelta(decoding: created.delta.encoded()))
    return (phone, laptop)
  }

  /// Each replica applies the other's delta, through the wire.
  private func exchange(_ a: inout Replica, _ b: inout Replica, _ fromA: Commit, _ fromB: Commit)
    throws
  {
    a.apply(try DocumentDelta(decoding: fromB.delta.encoded()))
    b.apply(try DocumentDelta(decoding: fromA.delta.encoded()))
  }

  @Test func transactionsMoveNodes() throws {
    var (phone, _) = try twoReplicas(["A", "B", "C"])
    #expect(phone.document.fieldKind("parent", of: node("A")) == .parent)
    #expect(phone.document.forest(of: "parent").roots == [node("A"), node("B"), node("C")])
    phone.transact { tx in
      tx.setParent(node("A"), of: node("B"), in: "parent")
      tx.setParent(node("B"), of: node("C"), in: "parent")
    }
    let forest = phone.document.forest(of: "parent")
    #expect(forest.roots == [node("A")])
    #expect(forest.children(of: node("A")) == [node("B")])
    #expect(forest.path(to: node("C")) == [node("A"), node("B"), node("C")])
    #expect(
      phone.document.parentMove(of: "parent", in: node("C"))
        == ParentMove(parent: node("B"), previous: nil))
    // Under itself or its own descendant: refused, nothing written.
    var refused = true
    let nothing = phone.transact { tx in
      refused =
        tx.setParent(node("C"), of: node("A"), in: "parent")
        || tx.setParent(node("A"), of: node("A"), in: "parent")
        || tx.setParent(node("Z"), of: node("A"), in: "parent")
    }
    #expect(!refused)
    #expect(nothing.delta.isEmpty)
    phone.transact { tx in tx.setParent(nil, of: node("B"), in: "parent") }
    #expect(phone.document.forest(of: "parent").roots == [node("A"), node("B")])
    // A field of another kind is left alone.
    phone.transact { $0.setValue(.string("Title"), for: "title", of: node("A")) }
    let ignored = phone.transact { $0.setParent(node("B"), of: node("A"), in: "title") }
    #expect(ignored.delta.isEmpty)
  }

  /// The read shown in ``DocumentForest``'s documentation.
  @Test func theForestsDocumentedRead() throws {
    var (phone, _) = try twoReplicas(["project", "task"])
    let (project, task) = (node("project"), node("task"))
    phone.transact { $0.setParent(project, of: task, in: "parent") }
    let document = phone.document
    let forest = document.forest(of: "parent")
    let children = forest.children(of: project)  // resolved, sorted by key
    let path = forest.path(to: task)  // [a root, …, task]
    #expect(children == [task])
    #expect(path == [project, task])
  }

  /// X moved under Y on one device while Y moved under X on another: the earlier move
  /// stands and the later node stays where it was, on both.
  @Test func xUnderYAgainstYUnderX() throws {
    var (phone, laptop) = try twoReplicas(["X", "Y"])
    let onPhone = phone.transact { $0.setParent(node("Y"), of: node("X"), in: "parent") }
    let onLaptop = laptop.transact { $0.setParent(node("X"), of: node("Y"), in: "parent") }
    try exchange(&phone, &laptop, onPhone, onLaptop)
    for replica in [phone, laptop] {
      let forest = replica.document.forest(of: "parent")
      #expect(forest.parent(of: node("X")) == node("Y"))
      #expect(forest.parent(of: node("Y")) == nil)
      #expect(forest.roots == [node("Y")])
      #expect(forest.rejected[node("Y")] == ParentMove(parent: node("X"), previous: nil))
    }
    #expect(phone.document == laptop.document)
  }

  /// A is above B and C; one device moves A under D, another moves D under C, A's own
  /// descendant. Applied together the two would close A → D → C → B → A; the earlier
  /// move (the phone's) stands and D stays a root, on both.
  @Test func aSubtreeMovedUnderItsOwnDescendantElsewhere() throws {
    var (phone, laptop) = try twoReplicas(["A", "B", "C", "D"])
    let chain = phone.transact { tx in
      tx.setParent(node("A"), of: node("B"), in: "parent")
      tx.setParent(node("B"), of: node("C"), in: "parent")
    }
    laptop.apply(try DocumentDelta(decoding: chain.delta.encoded()))
    let onPhone = phone.transact { $0.setParent(node("D"), of: node("A"), in: "parent") }
    let onLaptop = laptop.transact { $0.setParent(node("C"), of: node("D"), in: "parent") }
    try exchange(&phone, &laptop, onPhone, onLaptop)
    for replica in [phone, laptop] {
      let forest = replica.document.forest(of: "parent")
      #expect(forest.roots == [node("D")])
      #expect(forest.path(to: node("C")) == [node("D"), node("A"), node("B"), node("C")])
    }
    // The other way round: D under C is the earlier move, so A under D is refused and A
    // stays a root.
    var (early, late) = try twoReplicas(["A", "B", "C", "D"])
    late.apply(
      try DocumentDelta(
        decoding: early.transact { tx in
          tx.setParent(node("A"), of: node("B"), in: "parent")
          tx.setParent(node("B"), of: node("C"), in: "parent")
        }.delta.encoded()))
    let first = early.transact { $0.setParent(node("C"), of: node("D"), in: "parent") }
    let second = late.transact { $0.setParent(node("D"), of: node("A"), in: "parent") }
    try exchange(&early, &late, first, second)
    for replica in [early, late] {
      let forest = replica.document.forest(of: "parent")
      #expect(forest.roots == [node("A")])
      #expect(forest.path(to: node("D")) == [node("A"), node("B"), node("C"), node("D")])
    }
  }

  /// A node moved under a parent that another device deletes at the same time goes back
  /// where it was; the deleted parent's children fall back to theirs: no node is lost.
  @Test func moveAgainstDelete() throws {
    var (phone, laptop) = try twoReplicas(["P", "Q", "X", "Y", "Z"])
    let setup = phone.transact { tx in
      tx.setParent(node("P"), of: node("X"), in: "parent")
      tx.setParent(node("Q"), of: node("Z"), in: "parent")
      tx.setParent(node("Z"), of: node("Y"), in: "parent")
    }
    laptop.apply(try DocumentDelta(decoding: setup.delta.encoded()))
    // Phone deletes Q; laptop moves X under Q and nothing else touches Q.
    let onPhone = phone.transact { $0.delete(node("Q")) }
    let onLaptop = laptop.transact { $0.setParent(node("Q"), of: node("X"), in: "parent") }
    try exchange(&phone, &laptop, onPhone, onLaptop)
    for replica in [phone, laptop] {
      let forest = replica.document.forest(of: "parent")
      #expect(!replica.document.contains(node("Q")))
      #expect(forest.parent(of: node("X")) == node("P"))
      // Z was moved under Q from the roots: a root again, with Y still under it.
      #expect(forest.parent(of: node("Z")) == nil)
      #expect(forest.path(to: node("Y")) == [node("Z"), node("Y")])
      #expect(forest.roots == [node("P"), node("Z")])
    }
  }

  /// The same node moved under two parents on two devices ends under one, in one place.
  @Test func oneNodeMovedOnTwoDevices() throws {
    var (phone, laptop) = try twoReplicas(["A", "B", "X"])
    let onPhone = phone.transact {
      $0.move(node("X"), under: node("A"), at: 0, in: "parent", orderedBy: "children")
    }
    let onLaptop = laptop.transact {
      $0.move(node("X"), under: node("B"), at: 0, in: "parent", orderedBy: "children")
    }
    try exchange(&phone, &laptop, onPhone, onLaptop)
    for replica in [phone, laptop] {
      let document = replica.document
      #expect(document.forest(of: "parent").parent(of: node("X")) == node("B"))
      #expect(document.children(of: node("B"), in: "parent", orderedBy: "children") == [node("X")])
      // A's list still names X, but X is not A's child: not shown there.
      #expect(document.list(of: "children", in: node("A")) == [node("X").fieldValue])
      #expect(document.children(of: node("A"), in: "parent", orderedBy: "children").isEmpty)
    }
  }

  /// Children show in their parent's list order; a child the list lacks shows after.
  @Test func siblingOrderFollowsTheParentsList() throws {
    var (phone, laptop) = try twoReplicas(["P", "A", "B", "C", "D"])
    let moves = phone.transact { tx in
      tx.move(node("A"), under: node("P"), at: 0, in: "parent", orderedBy: "children")
      tx.move(node("B"), under: node("P"), at: 0, in: "parent", orderedBy: "children")
      tx.move(node("C"), under: node("P"), at: 1, in: "parent", orderedBy: "children")
    }
    laptop.apply(try DocumentDelta(decoding: moves.delta.encoded()))
    let order = { (replica: Replica) in
      replica.document.children(of: node("P"), in: "parent", orderedBy: "children")
    }
    #expect(order(phone) == [node("B"), node("C"), node("A")])
    // Reordering among siblings is a list move; the parent is written again.
    phone.transact {
      $0.move(node("A"), under: node("P"), at: 0, in: "parent", orderedBy: "children")
    }
    #expect(order(phone) == [node("A"), node("B"), node("C")])
    // D under P without the list: shown after the listed ones.
    laptop.transact { $0.setParent(node("P"), of: node("D"), in: "parent") }
    #expect(order(laptop) == [node("B"), node("C"), node("A"), node("D")])
    // Back to the root: out of P's list too.
    phone.transact {
      $0.move(node("B"), under: nil, at: 0, in: "parent", orderedBy: "children")
    }
    #expect(order(phone) == [node("A"), node("C")])
    #expect(phone.document.list(of: "children", in: node("P")).count == 2)
  }

  @Test func undoTakesBackAMove() throws {
    var (phone, _) = try twoReplicas(["A", "B", "C"])
    phone.transact { $0.setParent(node("A"), of: node("C"), in: "parent") }
    var history = UndoHistory()
    phone.transact(recordingUndoIn: &history) { tx in
      tx.setParent(node("B"), of: node("C"), in: "parent")
    }
    #expect(phone.document.forest(of: "parent").parent(of: node("C")) == node("B"))
    phone.undo(&history)
    #expect(phone.document.forest(of: "parent").parent(of: node("C")) == node("A"))
    phone.redo(&history)
    #expect(phone.document.forest(of: "parent").parent(of: node("C")) == node("B"))
  }

  @Test func statesAndDeltasCarryTheForest() throws {
    var (phone, laptop) = try twoReplicas(["A", "B"])
    let moved = phone.transact { $0.setParent(node("A"), of: node("B"), in: "parent") }
    let bytes = moved.delta.encoded()
    laptop.apply(try DocumentDelta(decoding: bytes))
    #expect(laptop.document == phone.document)
    let state = try Document(decoding: phone.document.encoded())
    #expect(state == phone.document)
    #expect(state.forest(of: "parent") == phone.document.forest(of: "parent"))
  }
}
