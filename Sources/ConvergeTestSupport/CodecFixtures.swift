import Converge

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The golden files of `Tests/ConvergeTests/Fixtures` that this build writes, and the
/// fixed scenarios behind them.
///
/// `converge fixtures --write DIR` writes ``files`` (after a deliberate format change: a
/// new format version, never an edit of an earlier one); the codec's tests check that the
/// committed files equal what this build encodes and decode to the scenarios' values.
/// Version 1 files, the legacy document states and the text edit of the earlier form
/// (`text-edit-delta-v2.bin`) are read, never written.
package enum CodecFixtures {
  package static let versionVector = VersionVector([
    ReplicaID(rawValue: 0x0123_4567_89AB_CDEF): 42,
    ReplicaID(rawValue: 0xA1): 1,
    ReplicaID(rawValue: 0xFEDC_BA98_7654_3210): 300,
  ])

  package static let causalContext: CausalContext = {
    var context = CausalContext()
    let first = ReplicaID(rawValue: 0x11)
    context.insert(replica: first, counters: 1...5)
    context.insert(Dot(replica: first, counter: 8))
    context.insert(replica: first, counters: 10...12)
    context.insert(Dot(replica: ReplicaID(rawValue: 0x2222), counter: 3))
    context.insert(replica: ReplicaID(rawValue: 0xFFFF_FFFF_FFFF_FFFF), counters: 1...1_000_000)
    return context
  }()

  /// Every file this build writes, by name.
  package static var files: [(name: String, bytes: [UInt8])] {
    [
      ("version-vector-v2.bin", versionVector.encoded()),
      ("version-vector-empty-v2.bin", VersionVector().encoded()),
      ("causal-context-v2.bin", causalContext.encoded()),
      ("document-v2.bin", DocumentFixtureScenario.document.encoded()),
      ("document-delta-v2.bin", DocumentFixtureScenario.delta.encoded()),
      ("text-edit-records-v2.bin", TextEditFixtureScenario.edit.encoded()),
      ("text-state-v2.bin", TextStateFixtureScenario.document.encoded()),
      ("text-coded-v2.bin", CodedTextFixture.document.encoded()),
      ("library-v2.bin", LibraryFixture.document.encoded()),
      ("session-frames-v2.bin", SessionFramesFixture.stream),
      ("list-v2.bin", ListFixture.document.encoded()),
      ("list-move-delta-v2.bin", ListFixture.move.encoded()),
      ("session-list-frames-v2.bin", ListFramesFixture.stream),
      ("tree-v2.bin", TreeFixture.document.encoded()),
      ("tree-move-delta-v2.bin", TreeFixture.move.encoded()),
    ]
  }
}

/// The fixed editing session behind `session-frames-v2.bin`: typing, a paste, backspaces,
/// a remote edit, a title, sent as the frames of one stream.
package enum SessionFramesFixture {
  /// The frames, and the deltas they carry.
  package static func frames() -> (frames: [[UInt8]], deltas: [DocumentDelta]) {
    var local = Replica(id: ReplicaID(rawValue: 0x1111_2222_3333_4444), wallClock: .fixed(7))
    var remote = Replica(id: ReplicaID(rawValue: 0x5555), wallClock: .fixed(3))
    let key = EntityKey(type: "note", id: "golden")
    var commits: [Commit] = []
    for (offset, scalar) in "Hi, world".unicodeScalars.enumerated() {
      commits.append(
        local.transact { $0.insertText(String(scalar), at: offset, in: "body", of: key) })
    }
    commits.append(local.transact { $0.deleteText(5..<6, in: "body", of: key) })
    commits.append(local.transact { $0.insertText("ö", at: 5, in: "body", of: key) })
    remote.apply(local.delta(since: remote.context))
    local.apply(remote.transact { $0.insertText("!", at: 9, in: "body", of: key) }.delta)
    commits.append(local.transact { $0.insertText(" 😀", at: 9, in: "body", of: key) })
    commits.append(local.transact { $0.deleteText(0..<0, in: "body", of: key) })
    commits.append(local.transact { $0.setValue(.string("Golden"), for: "title", of: key) })
    var encoder = SessionStream(streamID: 0x0DDB_A11_5EED)
    let frames = commits.map { encoder.encode($0.delta) }
    return (frames, commits.map(\.delta))
  }

  /// The file: every frame, length-prefixed, in order.
  package static var stream: [UInt8] { file(of: frames().frames) }

  /// A golden file of session frames: each length-prefixed, in order.
  package static func file(of frames: [[UInt8]]) -> [UInt8] {
    var writer = ByteWriter()
    for frame in frames { writer.writeLengthPrefixedBytes(frame) }
    return writer.bytes
  }
}

/// The fixed scenario behind `document-v2.bin` and `document-delta-v2.bin`: two devices
/// with fixed ids and clocks edit a note (all three field kinds: registers of every value
/// kind, a tag set with a removed tag, a body typed concurrently on both with a
/// deletion) and a task that one of them deletes.
package enum DocumentFixtureScenario {
  package static let note = EntityKey(type: "note", id: "n1")
  package static let task = EntityKey(type: "task", id: "t1")

  /// The final document, and the delta the laptop sent for its concurrent edits.
  package static let (document, delta): (Document, DocumentDelta) = {
    var devices = FixtureDevices(laptopLead: 500)
    devices.shared { tx in
      tx.create(note)
      tx.setValue(.string("Groceries"), for: "title", of: note)
      tx.insert(.string("home"), into: "tags", of: note)
      tx.insert(.string("work"), into: "tags", of: note)
      tx.insertText("Buy milk", at: 0, in: "body", of: note)
      tx.create(task)
      tx.setValue(.string("Call Bob"), for: "title", of: task)
    }
    let edits = devices.exchanged(
      phone: { tx in
        tx.remove(.string("work"), from: "tags", of: note)
        tx.setValue(.int(-2), for: "priority", of: note)
        tx.setValue(.double(0.5), for: "ratio", of: note)
        tx.setValue(.bool(true), for: "flagged", of: note)
        tx.setValue(.null, for: "archived", of: note)
        tx.setValue(
          .date(Date(timeIntervalSinceReferenceDate: 790_000_000)), for: "due", of: note)
        tx.setValue(.bytes([0xCA, 0xFE]), for: "icon", of: note)
        tx.setValue(
          .record(["x": .int(3), "column": .string("todo")]), for: "position", of: note)
        tx.insertText(" and eggs", at: 8, in: "body", of: note)
        tx.delete(task)
      },
      laptop: { tx in
        tx.insertText("oat ", at: 4, in: "body", of: note)
        tx.deleteText(0..<4, in: "body", of: note)
        tx.setValue(.string("Shopping"), for: "title", of: note)
      })
    return (devices.phone.document, edits.laptop.delta)
  }()
}

/// The fixed scenario behind `text-state-v2.bin`: a saved note body that holds
/// everything a text state can (concurrent inserts at one place ordered by replica id, a run split by a
/// later insert, a tombstone of a scalar outside the BMP and a visible one, a buffered
/// run whose origin never arrived, and a buffered delete of a scalar never seen).
package enum TextStateFixtureScenario {
  package static let note = EntityKey(type: "note", id: "n1")

  /// The phone's document after the exchanges, and the tablet's first edit, which the
  /// phone never received.
  package static let (document, missing): (Document, DocumentDelta) = {
    var devices = FixtureDevices()
    devices.shared { tx in
      tx.create(note)
      tx.insertText("Hello 🌍🌱!", at: 0, in: "body", of: note)
    }
    // Three inserts after "Hello", concurrently: between the same origins, by id.
    let onLaptop = devices.laptop.transact { $0.insertText(" dear", at: 5, in: "body", of: note) }
    let tabletFirst = devices.tablet.transact { $0.insertText(" big", at: 5, in: "body", of: note) }
    devices.phone.transact { tx in
      tx.insertText(",", at: 5, in: "body", of: note)
      tx.deleteText(7..<8, in: "body", of: note)  // the globe
    }
    // The tablet goes on from its own insert: "biggest", then drops the "b".
    let tabletSecond = devices.tablet.transact { tx in
      tx.insertText("gest", at: 9, in: "body", of: note)
      tx.deleteText(6..<7, in: "body", of: note)
    }
    devices.phone.apply(onLaptop.delta)
    devices.phone.apply(tabletSecond.delta)
    return (devices.phone.document, tabletFirst.delta)
  }()
}

/// The scenario behind `text-edit-records-v2.bin` (and `text-edit-delta-v2.bin`, its
/// earlier form): the phone types "Buy milk" into a note; the laptop, having received
/// it, replaces "Buy " with "oat " in one transaction. That
/// live edit (inserts and deletes of one replica in one text field, with an origin and
/// targets of the other replica) has the compact text edit form.
package enum TextEditFixtureScenario {
  package static let note = EntityKey(type: "note", id: "n1")

  package static let (base, edit): (Document, DocumentDelta) = {
    var devices = FixtureDevices(laptopLead: 500)
    devices.shared { tx in
      tx.create(note)
      tx.insertText("Buy milk", at: 0, in: "body", of: note)
    }
    let base = devices.laptop.document
    let edit = devices.laptop.transact { tx in
      tx.insertText("oat ", at: 4, in: "body", of: note)
      tx.deleteText(0..<4, in: "body", of: note)
    }
    return (base, edit.delta)
  }()
}

/// The fixed scenario behind `text-coded-v2.bin`: a note body long enough that its
/// content is coded, with a deleted word (a tombstone without content).
package enum CodedTextFixture {
  package static let note = EntityKey(type: "note", id: "n1")
  package static let paragraph = """
    Offline edits from several devices merge field by field: a title is a register, \
    tags are an add-wins set, and this body is a sequence of characters with ids. \
    Nothing waits in a queue and nobody is asked which copy to keep. The phone, the \
    laptop and the tablet each apply what the others send, in any order and as often \
    as it arrives, and end with the same bytes.
    """

  package static let document: Document = {
    var phone = FixtureDevices().phone
    phone.transact { tx in
      tx.create(note)
      tx.insertText(paragraph, at: 0, in: "body", of: note)
    }
    // "Offline edits" loses "Offline ".
    phone.transact { $0.deleteText(0..<8, in: "body", of: note) }
    return phone.document
  }()
}

/// The fixed scenario behind `library-v2.bin`: a small library of notes whose bodies
/// share their words, so that its state codes its content with a table per previous byte.
package enum LibraryFixture {
  package static let words = [
    "buy ", "milk ", "call ", "Mom ", "the ", "meeting ", "at ", "3pm. ", "café ",
  ]

  package static func note(_ index: Int) -> EntityKey { EntityKey(type: "note", id: "n\(index)") }

  /// The body note `index` is typed with: a fixed walk through the words (no generator:
  /// the bytes are pinned).
  package static func body(_ index: Int) -> String {
    (0..<30).map { words[(index * 7 + $0 * ($0 % 5 + 1)) % words.count] }.joined()
  }

  package static let document: Document = {
    var phone = FixtureDevices().phone
    for index in 0..<12 {
      let body = body(index)
      phone.transact { tx in
        tx.setValue(.string("Note \(index)"), for: "title", of: note(index))
        tx.insertText(body, at: 0, in: "body", of: note(index))
      }
    }
    // A deleted word leaves a tombstone without content.
    phone.transact { $0.deleteText(0..<4, in: "body", of: note(3)) }
    return phone.document
  }()
}
