import Converge
import ConvergeTestSupport
import Testing

/// A model with a `String` property its schema does not list.
private struct Draft: EntityModel {
  static let entityType = "draft"
  var body = ""
  var scratch = ""

  static let schema = EntitySchema<Draft>(.text("body", \.body))
}

/// The text handle: an address of one text field, read through the document and edited
/// through the transaction's text edits.
@Suite struct EntityTextTests {
  @Test func theDocCommentSample() throws {
    var replica = Replica(id: ReplicaID(rawValue: 1))
    let id = "groceries"

    let body = try EntityText(\Note.body, of: id)
    replica.transact { $0.insertText("milk, ", at: 0, in: body) }
    let cursor = replica.document.anchor(at: 6, affinity: .preceding, in: body)
    replica.transact { $0.replaceText(utf16Range: 0..<4, with: "oat milk", in: body) }
    let offset = replica.document.utf16Offset(of: cursor, in: body)  // 10, after "oat milk,"

    #expect(offset == 10)
    #expect(replica.document.string(of: body) == "oat milk, ")
    // The field is the model's property.
    #expect(replica.get(Note.self, id: id)?.body == "oat milk, ")
  }

  @Test func aKeyPathNamesTheSameFieldAsItsName() throws {
    let byKeyPath = try EntityText(\Note.body, of: "n1")
    let byName = EntityText("body", of: EntityKey(type: "note", id: "n1"))
    #expect(byKeyPath == byName)
    #expect(byKeyPath.key == EntityKey(type: "note", id: "n1"))
    #expect(byKeyPath.field == "body")
  }

  /// A property of another type (`\Note.tags`, a `Set<String>`) does not compile: the
  /// initializer takes a `KeyPath<Model, String>`. A `String` stored otherwise throws.
  @Test func aStringPropertyNotStoredAsTextIsRefused() {
    let register = #expect(throws: EntityText.NotATextField.self) {
      try EntityText(\Note.title, of: "n1")
    }
    #expect(register?.entityType == "note")
    #expect(register?.field == "title")
    #expect(register?.kind == .register)
    #expect(register?.description == "\"title\" of \"note\" is a register field, not text")
    let unlisted = #expect(throws: EntityText.NotATextField.self) {
      try EntityText(\Draft.scratch, of: "d1")
    }
    #expect(unlisted?.field == nil)
    #expect(unlisted?.description == "the schema of \"draft\" does not list this property")
  }

  /// Each edit through the handle is the edit of the key-and-name API: the same document
  /// and the same delta, byte for byte.
  @Test func editsAreTheTransactionsTextEdits() throws {
    let body = try EntityText(\Note.body, of: "n1")
    let key = body.key
    var viaHandle = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    var viaName = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    let steps: [(inout DocumentTransaction) -> Void] = [
      { $0.insertText("hello world", at: 0, in: body) },
      { $0.deleteText(0..<1, in: body) },
      { $0.replaceText(0..<4, with: "Jell", in: body) },
      { $0.replaceText(utf16Range: 5..<10, with: "there", in: body) },
    ]
    let same: [(inout DocumentTransaction) -> Void] = [
      { $0.insertText("hello world", at: 0, in: "body", of: key) },
      { $0.deleteText(0..<1, in: "body", of: key) },
      { $0.replaceText(0..<4, with: "Jell", in: "body", of: key) },
      { $0.replaceText(5..<10, with: "there", in: "body", of: key) },
    ]
    for (edit, reference) in zip(steps, same) {
      let a = viaHandle.transact(edit)
      let b = viaName.transact(reference)
      #expect(a.delta.encoded() == b.delta.encoded())
    }
    #expect(viaHandle.document == viaName.document)
    #expect(viaHandle.document.string(of: body) == "Jell there")
    #expect(viaHandle.get(Note.self, id: "n1")?.body == "Jell there")
  }

  @Test func readsCountInScalarsAndUTF16() {
    let body = EntityText("body", of: EntityKey(type: "note", id: "n1"))
    var replica = Replica(id: ReplicaID(rawValue: 1))
    replica.transact { $0.insertText("a😀b", at: 0, in: body) }
    let document = replica.document
    #expect(document.string(of: body) == "a😀b")
    #expect(document.count(of: body) == 3)
    #expect(document.utf16Count(of: body) == 4)
    #expect(document.utf16Offset(ofScalarOffset: 2, in: body) == 3)
    #expect(document.scalarOffset(ofUTF16Offset: 2, in: body) == 1)
    #expect(document.scalarOffset(ofUTF16Offset: 2, rounding: .up, in: body) == 2)
    #expect(document.scalarRange(ofUTF16Range: 2..<2, in: body) == 1..<2)
    #expect(document.utf16Range(ofScalarRange: 1..<3, in: body) == 1..<4)
  }

  @Test func aMissingFieldReadsAsEmptyAndTheFirstInsertCreatesIt() throws {
    let body = try EntityText(\Note.body, of: "new")
    var replica = Replica(id: ReplicaID(rawValue: 1))
    #expect(replica.document.string(of: body).isEmpty)
    #expect(replica.document.count(of: body) == 0)
    #expect(replica.document.utf16Count(of: body) == 0)
    #expect(replica.document.scalarRange(ofUTF16Range: 0..<3, in: body) == 0..<0)
    let end = replica.document.anchor(at: 0, in: body)
    let commit = replica.transact { $0.deleteText(0..<3, in: body) }
    #expect(commit.delta.isEmpty)  // nothing to delete, nothing sent
    replica.transact { $0.insertText("hi", at: 5, in: body) }  // clamped to the end
    #expect(replica.get(Note.self, id: "new")?.body == "hi")
    #expect(replica.document.position(of: end, in: body) == 2)
  }

  @Test func aRangeCuttingASurrogatePairWidensToIt() {
    let body = EntityText("body", of: EntityKey(type: "note", id: "n1"))
    var replica = Replica(id: ReplicaID(rawValue: 1))
    replica.transact { $0.insertText("a😀b", at: 0, in: body) }
    replica.transact { $0.replaceText(utf16Range: 2..<3, with: "-", in: body) }
    #expect(replica.document.string(of: body) == "a-b")
    replica.transact { $0.replaceText(utf16Range: 3..<3, with: "!", in: body) }
    #expect(replica.document.string(of: body) == "a-b!")
    replica.transact { $0.replaceText(utf16Range: 0..<2, with: "", in: body) }
    #expect(replica.document.string(of: body) == "b!")
  }

  @Test func anchorsAndSelectionsHoldThroughARemoteEdit() throws {
    let body = try EntityText(\Note.body, of: "standup")
    var phone = Replica(id: ReplicaID(rawValue: 1))
    var laptop = Replica(id: ReplicaID(rawValue: 2))
    laptop.apply(phone.transact { $0.insertText("hello world", at: 0, in: body) }.delta)

    let cursor = phone.document.anchor(at: 5, affinity: .preceding, in: body)  // after "hello"
    let selection = phone.document.selection(6..<11, in: body)  // "world"
    // The laptop types before both and right before the selection, and deletes the "h".
    let remote = laptop.transact {
      $0.insertText("Monday: ", at: 0, in: body)
      $0.insertText("wide ", at: 14, in: body)
      $0.deleteText(8..<9, in: body)
    }
    phone.apply(remote.delta)
    #expect(phone.document.string(of: body) == "Monday: ello wide world")
    #expect(phone.document.position(of: cursor, in: body) == 12)
    #expect(phone.document.utf16Offset(of: cursor, in: body) == 12)
    #expect(phone.document.range(of: selection, in: body) == 18..<23)
    #expect(phone.document.utf16Range(of: selection, in: body) == 18..<23)
  }

  /// Typing through the handle and assigning the model's property leave the same text;
  /// the handle just skips reading and comparing the whole string.
  @Test func typingThroughTheHandleMatchesAssigningTheProperty() throws {
    let seed = UInt64.random(in: 0...UInt64.max)
    print("EntityTextTests seed: \(seed)")
    var random = SeededGenerator(seed: seed)
    var typed = Replica(id: ReplicaID(rawValue: 1))
    var assigned = Replica(id: ReplicaID(rawValue: 2))
    let (id, _) = typed.create(Note(title: "t"))
    _ = assigned.create(Note(title: "t"), id: id)
    let body = try EntityText(\Note.body, of: id)
    let alphabet = Array("ab😀 é\n".unicodeScalars)
    for _ in 0..<200 {
      let count = typed.document.count(of: body)
      let start = Int.random(in: 0...count, using: &random)
      let end = Swift.min(count, start + Int.random(in: 0...2, using: &random))
      var inserted = String.UnicodeScalarView()
      for _ in 0..<Int.random(in: 0...3, using: &random) {
        inserted.append(alphabet[Int.random(in: 0..<alphabet.count, using: &random)])
      }
      let string = String(inserted)
      typed.transact { $0.replaceText(start..<end, with: string, in: body) }
      try assigned.update(Note.self, id: id) { note in
        var scalars = Array(note.body.unicodeScalars)
        scalars.replaceSubrange(start..<end, with: string.unicodeScalars)
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        note.body = String(view)
      }
      #expect(
        typed.document.string(of: body) == assigned.get(Note.self, id: id)?.body,
        "seed \(seed)")
    }
  }
}
