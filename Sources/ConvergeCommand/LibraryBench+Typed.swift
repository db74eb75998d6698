import Converge
import ConvergeSimulator
import ConvergeTestSupport
import ConvergeTraces
import Foundation

/// The typed half of `converge bench --library N`: the same notes written and read
/// through ``EntityModel`` (`replica.create(note, id:)`, `update`, `all`), each figure
/// beside the raw transaction doing the same job, so the cost of the typed API shows as
/// a ratio.
extension LibraryBench {
  /// One figure measured both ways.
  struct Pair: Encodable, Equatable {
    var typed: Double
    var raw: Double
  }

  /// The typed figures and their raw counterparts.
  struct TypedReport: Encodable, Equatable {
    var createUsPerNote: Pair
    var residentBytesPerNote: Pair
    /// Resident memory a note once every row was read through ``NoteRow``: a typed walk
    /// keeps the `Set` of tags it built (the document's set read cache). Raw reads keep
    /// nothing: the raw figure is the raw build's.
    var residentAfterRowsReadBytesPerNote: Pair
    /// `delta(since:)` for a peer 400 title edits behind (through `update` or `setValue`).
    var deltaSinceTitleEditsMs: Pair
    /// Making a small delta on another device (a tag added) and applying it here.
    var smallDeltaRoundTripUs: Pair
    /// The same through the projection model (``NoteRow``), which does not read the body.
    var smallDeltaRoundTripProjectionUs: Pair
    /// Every note with its body: `all(SimulatedNote.self)` or the field reads by hand.
    var readAllMs: Pair
    /// Title, tags and pinned of every note, bodies left coded: a second model over the
    /// same field names (``NoteRow``), or the same reads by hand.
    var readProjectionMs: Pair
  }

  /// A note's list row: the fields a list view shows, read without the body.
  struct NoteRow: EntityModel {
    static let entityType = SimulatedNote.entityType
    var title = ""
    var tags: Set<String> = []
    var pinned = false

    static let schema = EntitySchema<NoteRow>(
      .register("title", \.title), .set("tags", \.tags), .register("pinned", \.pinned))
  }

  /// The typed figures for `inputs` (notes), with the raw ones: `rawCreateUs` and
  /// `rawResident` from the raw build, and `raw`, the raw library, for the rest; `nil`
  /// if a typed read did not find what was written.
  static func measureTyped(
    _ inputs: [Input], rawCreateUs: Double, rawResident: Int, raw: inout Replica,
    using random: inout SeededGenerator
  ) -> TypedReport? {
    let notes = inputs.map(note(of:))
    // The ids `create` names the notes by, as an app takes them (see
    // `DocumentTransaction.create(_:id:)`), kept in an array filled before the baseline
    // so that its pages are not counted as the library's.
    var ids = [String](repeating: "", count: notes.count)
    MemoryProbe.releaseFreeHeap()
    let residentBefore = MemoryProbe.residentSet()
    var replica = Replica(id: ReplicaID(rawValue: 3))
    let clock = ContinuousClock()
    let build = clock.measure {
      for index in notes.indices { ids[index] = replica.create(notes[index]).id }
    }
    MemoryProbe.releaseFreeHeap()
    let resident = MemoryProbe.residentSet() - residentBefore
    let count = Double(max(notes.count, 1))
    // The rows read once (untimed): what the tags' kept sets add.
    let firstRows = replica.all(NoteRow.self).count
    MemoryProbe.releaseFreeHeap()
    let residentAfterRows = MemoryProbe.residentSet() - residentBefore

    // A peer 400 title edits behind, on both libraries.
    let edited = (0..<peerLag).map { _ in Int.random(in: 0..<notes.count, using: &random) }
    let typedPeer = replica.context
    for (index, note) in edited.enumerated() {
      _ = try? replica.update(SimulatedNote.self, id: ids[note]) { $0.title = "Edited \(index)" }
    }
    let typedDelta = best(of: 5) { _ = replica.delta(since: typedPeer) }
    let rawPeer = raw.context
    for (index, note) in edited.enumerated() {
      let id = "\(note)"
      raw.transact {
        $0.setValue(
          .string("Edited \(index)"), for: "title", of: EntityKey(type: NoteRow.entityType, id: id))
      }
    }
    let rawDelta = best(of: 5) { _ = raw.delta(since: rawPeer) }

    // Another device adds a tag to a note, through the whole model and then through the
    // projection; the delta is applied here. The median of 101 each.
    var typedOther = replica.forked(as: ReplicaID(rawValue: 4))
    func typedRoundTrips<Model: EntityModel>(
      _ model: Model.Type, notes: [Int], tag: String, _ add: @escaping (inout Model, String) -> Void
    ) -> [Duration] {
      notes.enumerated().map { index, note in
        clock.measure {
          if let commit = try? typedOther.update(
            model, id: ids[note], { add(&$0, "\(tag)\(index)") })
          {
            replica.apply(commit.delta)
          }
        }
      }
    }
    let tagged = (0..<101).map { _ in Int.random(in: 0..<notes.count, using: &random) }
    var typedTimes = typedRoundTrips(SimulatedNote.self, notes: tagged, tag: "t") {
      _ = $0.tags.insert($1)
    }
    let tagged2 = (0..<101).map { _ in Int.random(in: 0..<notes.count, using: &random) }
    var rowTimes = typedRoundTrips(NoteRow.self, notes: tagged2, tag: "r") {
      _ = $0.tags.insert($1)
    }
    var rawOther = raw.forked(as: ReplicaID(rawValue: 5))
    func rawRoundTrips(notes: [Int], tag: String) -> [Duration] {
      notes.enumerated().map { index, note in
        clock.measure {
          let key = EntityKey(type: NoteRow.entityType, id: "\(note)")
          raw.apply(
            rawOther.transact { $0.insert(.string("\(tag)\(index)"), into: "tags", of: key) }.delta)
        }
      }
    }
    var rawTimes = rawRoundTrips(notes: tagged, tag: "t")
    var rawRowTimes = rawRoundTrips(notes: tagged2, tag: "r")
    typedTimes.sort()
    rawTimes.sort()
    rowTimes.sort()
    rawRowTimes.sort()

    var found = (all: 0, rows: 0, rawAll: 0, rawRows: 0)
    // The typed reads make the rows an app keeps (a list view shows them): each result is
    // kept past its clock and released before the next run, as the loads above release
    // their documents. Dropped inside the clock, freeing 50,000 rows was about a sixth of
    // the projection's instructions (BENCHMARKS.md, typed reads, seventh pass).
    var notesKept: [(id: String, value: SimulatedNote)] = []
    let typedAll = best(of: 3) {
      notesKept = []
    } measuring: {
      notesKept = replica.all(SimulatedNote.self)
    }
    // Read back untimed: every row was built whole.
    found.all = notesKept.count(where: { !$0.value.title.isEmpty })
    notesKept = []
    var rowsKept: [(id: String, value: NoteRow)] = []
    let typedRows = best(of: 3) {
      rowsKept = []
    } measuring: {
      rowsKept = replica.all(NoteRow.self)
    }
    found.rows = rowsKept.count(where: { !$0.value.title.isEmpty && !$0.value.tags.isEmpty })
    rowsKept = []
    let document = raw.document
    let rawAll = best(of: 3) {
      found.rawAll = document.keys(ofType: NoteRow.entityType).reduce(0) { sum, key in
        let title = document.value(of: "title", in: key)
        let tags = document.elements(of: "tags", in: key)
        let pinned = document.value(of: "pinned", in: key)
        let body = document.text(of: "body", in: key)
        return sum
          + (title != nil && tags.count + (pinned == nil ? 0 : 1) + body.utf8.count > 0 ? 1 : 0)
      }
    }
    let rawRows = best(of: 3) {
      found.rawRows = document.keys(ofType: NoteRow.entityType).reduce(0) { sum, key in
        let title = document.value(of: "title", in: key)
        let tags = document.elements(of: "tags", in: key)
        let pinned = document.value(of: "pinned", in: key)
        return sum + (title != nil && tags.count + (pinned == nil ? 0 : 1) >= 0 ? 1 : 0)
      }
    }
    guard firstRows == notes.count, found.all == notes.count, found.rows == notes.count,
      found.rawAll == notes.count,
      found.rawRows == notes.count
    else { return nil }
    return TypedReport(
      createUsPerNote: Pair(typed: milliseconds(build) * 1000 / count, raw: rawCreateUs),
      residentBytesPerNote: Pair(
        typed: Double(resident / max(notes.count, 1)), raw: Double(rawResident)),
      residentAfterRowsReadBytesPerNote: Pair(
        typed: Double(residentAfterRows / max(notes.count, 1)), raw: Double(rawResident)),
      deltaSinceTitleEditsMs: Pair(typed: milliseconds(typedDelta), raw: milliseconds(rawDelta)),
      smallDeltaRoundTripUs: Pair(
        typed: milliseconds(typedTimes[typedTimes.count / 2]) * 1000,
        raw: milliseconds(rawTimes[rawTimes.count / 2]) * 1000),
      smallDeltaRoundTripProjectionUs: Pair(
        typed: milliseconds(rowTimes[rowTimes.count / 2]) * 1000,
        raw: milliseconds(rawRowTimes[rawRowTimes.count / 2]) * 1000),
      readAllMs: Pair(typed: milliseconds(typedAll), raw: milliseconds(rawAll)),
      readProjectionMs: Pair(typed: milliseconds(typedRows), raw: milliseconds(rawRows)))
  }

  /// The note an input describes.
  private static func note(of input: Input) -> SimulatedNote {
    var note = SimulatedNote()
    for (field, value) in input.registers {
      switch (field, value) {
      case ("title", .string(let title)): note.title = title
      case ("pinned", .bool(let pinned)): note.pinned = pinned
      default: break
      }
    }
    note.tags = Set(input.tags)
    note.body = input.body ?? ""
    return note
  }

  static func printTyped(_ typed: TypedReport) {
    print("typed models beside raw transactions      typed        raw   ratio")
    func row(_ label: String, _ pair: Pair, _ unit: String) {
      let ratio = pair.raw > 0 ? pair.typed / pair.raw : 0
      let padded = label.padding(toLength: 34, withPad: " ", startingAt: 0)
      print(padded + String(format: " %10.2f %10.2f %6.2f× ", pair.typed, pair.raw, ratio) + unit)
    }
    row("create a note", typed.createUsPerNote, "µs")
    row("resident memory a note", typed.residentBytesPerNote, "bytes")
    row("  once every row was read", typed.residentAfterRowsReadBytesPerNote, "bytes")
    row("delta(since:) \(peerLag) title edits back", typed.deltaSinceTitleEditsMs, "ms")
    row("small delta, made and applied", typed.smallDeltaRoundTripUs, "µs")
    row("  through a projection model", typed.smallDeltaRoundTripProjectionUs, "µs")
    row("read every note with its body", typed.readAllMs, "ms")
    row("read title, tags, pinned of all", typed.readProjectionMs, "ms")
  }
}
