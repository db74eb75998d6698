import Converge
import ConvergeTestSupport
import Testing

/// Moving a selection through change events agrees with resolving its anchors again.
@Suite struct TextChangeMappingTests {
  @Test func aSelectionMovesThroughARemoteEditOfANoteBody() {
    let note = EntityKey(type: "note", id: "n1")
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(0))
    let typed = phone.transact { $0.insertText("milk eggs", at: 0, in: "body", of: note) }
    laptop.apply(typed.delta)
    let selected = 5..<9  // "eggs", selected on the phone
    let paste = laptop.transact { $0.insertText("🥛 ", at: 0, in: "body", of: note) }
    let changes = phone.apply(paste.delta)
    let moved = changes.map(selected, inText: "body", of: note)
    #expect(moved == 8..<12)  // "🥛" is two UTF-16 units
    let body = phone.document.text(of: "body", in: note)
    #expect(String(body.utf16.dropFirst(moved.lowerBound).prefix(moved.count)) == "eggs")
    #expect(changes.map(selected, inText: "title", of: note) == selected)
  }

  /// Random remote edits on three replicas: after each delta arrives at the first, a
  /// selection it held maps through the returned changes to the range its anchors resolve
  /// to, in scalars and in UTF-16, while the selected edge characters survive.
  @Test func mappingAgreesWithAnchors() throws {
    try forEachSeed(count: 80, base: 0x3A9) { random in
      var replicas = (1...3).map { SharedText(replica: ReplicaID(rawValue: UInt64($0))) }
      _ = replicas[0].insert("The quick brown fox jumps", at: 0)
      for index in 1..<3 { replicas[index].merge(replicas[0]) }
      var count = replicas[0].count
      var lower = Int.random(in: 0...count, using: &random)
      var upper = Int.random(in: lower...count, using: &random)
      let selection = replicas[0].selection(lower..<upper)
      var utf16 = replicas[0].utf16Range(of: selection) ?? 0..<0
      for _ in 0..<30 {
        let at = Int.random(in: 1..<3, using: &random)
        count = replicas[at].count
        let delta: RGADelta
        if count > 0, Bool.random(using: &random) {
          let start = Int.random(in: 0..<count, using: &random)
          delta = replicas[at].delete(
            start..<Swift.min(count, start + Int.random(in: 1...3, using: &random)))
        } else {
          let letters = ["a", "é", "😀", "xy"].randomElement(using: &random) ?? "a"
          delta = replicas[at].insert(letters, at: Int.random(in: 0...count, using: &random))
        }
        let changes = replicas[0].apply(delta)
        (lower, upper) = {
          let range = TextChange.map(lower..<upper, through: changes, in: .scalars)
          return (range.lowerBound, range.upperBound)
        }()
        utf16 = TextChange.map(utf16, through: changes)
        guard Self.edgesSurvive(selection, in: replicas[0]) else { return }
        let anchored = replicas[0].range(of: selection)
        let anchoredUTF16 = replicas[0].utf16Range(of: selection)
        guard anchored == lower..<upper, anchoredUTF16 == utf16 else {
          throw LawViolation(
            law: "mapped \(lower..<upper) / \(utf16), anchors \(String(describing: anchored)) / "
              + "\(String(describing: anchoredUTF16)) in \(replicas[0].string)",
            witnesses: [])
        }
      }
    }
  }

  /// Whether the characters a selection's anchors are bound to are still visible.
  static func edgesSurvive(_ selection: SelectionAnchors, in text: SharedText) -> Bool {
    [selection.start, selection.end].allSatisfy { anchor in
      guard let character = anchor.character else { return true }
      let after = text.position(of: TextAnchor(character: character, affinity: .preceding))
      let before = text.position(of: TextAnchor(character: character, affinity: .following))
      return after.map { $0 - (before ?? $0) } == 1
    }
  }
}

/// An app sees what a delta from elsewhere touches before it applies it.
@Suite struct DeltaInspectionTests {
  @Test func aDecodedDeltaNamesItsEntitiesFieldsAndEvents() throws {
    let note = EntityKey(type: "note", id: "n1")
    let task = EntityKey(type: "task", id: "t1")
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    let keystroke = phone.transact { $0.insertText("hi", at: 0, in: "body", of: note) }.delta
    let received = try DocumentDelta(decoding: keystroke.encoded())
    #expect(keystroke.fields(of: note) == ["body"])
    #expect(received.keys == [note] && received.fields(of: note) == ["body"])
    #expect(received.context.eventCount == 2)
    let edit = phone.transact {
      $0.setValue(.string("Milk"), for: "title", of: task)
      $0.setValue(.bool(false), for: "done", of: task)
      $0.insert(.string("home"), into: "tags", of: task)
    }.delta
    let decoded = try DocumentDelta(decoding: edit.encoded())
    #expect(decoded.keys == [task])
    #expect(decoded.fields(of: task) == ["done", "tags", "title"])
    #expect(decoded.fields(of: note).isEmpty)
  }
}
