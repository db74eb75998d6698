import Converge
import ConvergeTestSupport
import Testing

/// A transaction's text changes join an edit that continues the one before (typing on,
/// backspacing, deleting forward), and the joined changes move every offset as the edits
/// one by one would.
@Suite struct TextChangeJoiningTests {
  let note = EntityKey(type: "note", id: "n1")

  private func changes(_ commit: Commit) -> [TextChange] {
    commit.changes[note]?.textChanges["body"] ?? []
  }

  @Test func typingAWordKeyByKeyIsOneInsert() {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    replica.transact { $0.insertText("> ", at: 0, in: "body", of: note) }
    let typed = replica.transact { tx in
      for (offset, letter) in "héllo😀".unicodeScalars.enumerated() {
        tx.insertText(String(letter), at: 2 + offset, in: "body", of: note)
      }
    }
    #expect(changes(typed) == [TextChange(kind: .insert, scalarRange: 2..<8, utf16Range: 2..<9)])
  }

  @Test func backspacingAndDeletingForwardAreOneDeleteEach() {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    replica.transact { $0.insertText("abc😀defgh", at: 0, in: "body", of: note) }
    // Backspace from after "😀" three times: "😀", "c", "b".
    let backspaced = replica.transact { tx in
      for end in stride(from: 4, to: 1, by: -1) {
        tx.deleteText(end - 1..<end, in: "body", of: note)
      }
    }
    #expect(
      changes(backspaced) == [TextChange(kind: .delete, scalarRange: 1..<4, utf16Range: 1..<5)])
    #expect(replica.document.text(of: "body", in: note) == "adefgh")
    // Delete forward at 1 twice, then once more somewhere else.
    let forward = replica.transact { tx in
      tx.deleteText(1..<2, in: "body", of: note)
      tx.deleteText(1..<2, in: "body", of: note)
      tx.deleteText(2..<3, in: "body", of: note)
    }
    #expect(
      changes(forward) == [
        TextChange(kind: .delete, scalarRange: 1..<3, utf16Range: 1..<3),
        TextChange(kind: .delete, scalarRange: 2..<3, utf16Range: 2..<3),
      ])
    #expect(replica.document.text(of: "body", in: note) == "afh")
  }

  @Test func typingThenDeletingOrMovingElsewhereIsNotJoined() {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    replica.transact { $0.insertText("0123456789", at: 0, in: "body", of: note) }
    let commit = replica.transact { tx in
      tx.insertText("a", at: 2, in: "body", of: note)
      tx.insertText("b", at: 3, in: "body", of: note)
      tx.deleteText(3..<4, in: "body", of: note)  // the "b" just typed
      tx.insertText("c", at: 8, in: "body", of: note)
      tx.insertText("d", at: 0, in: "body", of: note)
    }
    #expect(
      changes(commit) == [
        TextChange(kind: .insert, scalarRange: 2..<4, utf16Range: 2..<4),
        TextChange(kind: .delete, scalarRange: 3..<4, utf16Range: 3..<4),
        TextChange(kind: .insert, scalarRange: 8..<9, utf16Range: 8..<9),
        TextChange(kind: .insert, scalarRange: 0..<1, utf16Range: 0..<1),
      ])
  }

  /// Random edits in one transaction, mostly continuing each other, some of another
  /// field between them (which closes the text's run): the changes the commit reports
  /// move every selection of the text before it, in scalars and in UTF-16, exactly as
  /// the edits' own changes one by one do, and there are no more of them than edits.
  @Test func joinedChangesMoveEveryOffsetAsTheEditsDo() throws {
    try forEachSeed(count: 60, base: 0x701_4ED) { random in
      let alphabet: [String] = ["a", "é", "😀", "xy", "b"]
      var model = Array("ab😀cdé".unicodeScalars)
      var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
      replica.transact {
        $0.insertText(String(String.UnicodeScalarView(model)), at: 0, in: "body", of: note)
      }
      let before = model.count
      var expected: [TextChange] = []
      var cursor = Int.random(in: 0...model.count, using: &random)
      func utf16(_ offset: Int) -> Int {
        model[..<offset].reduce(0) { $0 + UTF16.width($1) }
      }
      let commit = replica.transact { tx in
        func delete(_ range: Range<Int>) {
          expected.append(
            TextChange(
              kind: .delete, scalarRange: range,
              utf16Range: utf16(range.lowerBound)..<utf16(range.upperBound)))
          tx.deleteText(range, in: "body", of: note)
          model.removeSubrange(range)
        }
        for _ in 0..<Int.random(in: 1...24, using: &random) {
          switch Int.random(in: 0..<10, using: &random) {
          case 0..<5:  // type at the cursor
            let text = alphabet.randomElement(using: &random) ?? "a"
            let scalars = Array(text.unicodeScalars)
            let start = utf16(cursor)
            tx.insertText(text, at: cursor, in: "body", of: note)
            model.insert(contentsOf: scalars, at: cursor)
            expected.append(
              TextChange(
                kind: .insert, scalarRange: cursor..<cursor + scalars.count,
                utf16Range: start..<utf16(cursor + scalars.count)))
            cursor += scalars.count
          case 5..<7 where cursor > 0:  // backspace
            delete(cursor - 1..<cursor)
            cursor -= 1
          case 7 where cursor < model.count:  // delete forward
            delete(cursor..<Swift.min(model.count, cursor + 2))
          case 8:  // another field: the text's run closes
            tx.setValue(.string("t\(cursor)"), for: "title", of: note)
          default:  // the cursor moves
            cursor = Int.random(in: 0...model.count, using: &random)
          }
        }
      }
      let reported = changes(commit)
      guard replica.document.text(of: "body", in: note) == String(String.UnicodeScalarView(model)),
        reported.count <= expected.count
      else {
        throw LawViolation(law: "text or change count: \(reported) for \(expected)", witnesses: [])
      }
      let beforeUTF16 = "ab😀cdé".utf16.count
      for (units, count) in [(TextChange.Units.scalars, before), (.utf16, beforeUTF16)] {
        for lower in 0...count {
          for upper in lower...count {
            let joined = TextChange.map(lower..<upper, through: reported, in: units)
            let oneByOne = TextChange.map(lower..<upper, through: expected, in: units)
            guard joined == oneByOne else {
              throw LawViolation(
                law: "\(lower..<upper) in \(units): joined \(joined), one by one \(oneByOne);"
                  + " \(reported) for \(expected)",
                witnesses: [])
            }
          }
        }
      }
    }
  }
}
