import Converge
import Testing

/// The "Cursors and Undo" article's samples, verbatim, with what they claim.
@Suite struct CursorsAndUndoArticleTests {
  @Test func theCursorHoldsAndUndoLeavesTheLaptopsEdit() {
    let body = EntityText("body", of: EntityKey(type: "note", id: "standup"))
    var phone = Replica(id: ReplicaID(rawValue: 1))
    var laptop = Replica(id: ReplicaID(rawValue: 2))
    laptop.apply(phone.transact { $0.insertText("Standup", at: 0, in: body) }.delta)

    // The phone's cursor sits after "Standup".
    let cursor = phone.document.anchor(at: 7, affinity: .preceding, in: body)
    phone.apply(laptop.transact { $0.insertText("Monday ", at: 0, in: body) }.delta)
    let offset = phone.document.utf16Offset(of: cursor, in: body)  // 14

    #expect(offset == 14)

    var history = UndoHistory()
    phone.transact(recordingUndoIn: &history) { tx in
      tx.insertText(" notes", at: 14, in: body)
    }
    laptop.apply(phone.delta(since: laptop.context))
    laptop.transact { $0.insertText("!", at: 20, in: body) }
    phone.apply(laptop.delta(since: phone.context))

    let undone = phone.undo(&history)  // "Monday Standup!": the laptop's "!" stays
    if let undone { laptop.apply(undone.delta) }

    #expect(phone.document.string(of: body) == "Monday Standup!")
    #expect(phone.document == laptop.document)
  }
}
