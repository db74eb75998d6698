import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The visible elements a typed walk builds for a set field are kept by the identity of
/// the set's entries: read again while the entries are the same array, built again after
/// any change, never handed to another reader type, nor to a copy edited apart.
@Suite struct SetReadCacheTests {
  /// The same tags read as other elements (`Set<FieldValue>`): a reader of another type
  /// never gets the kept `Set<String>`.
  struct TagValues: EntityModel, Equatable {
    static let entityType = SampleNote.entityType
    var tags: Set<FieldValue> = []
    static let schema = EntitySchema<TagValues>(.set("tags", \.tags))
  }

  /// A model with two set fields: the second is kept beside the first.
  struct TwoSets: EntityModel, Equatable {
    static let entityType = SampleNote.entityType
    var tags: Set<String> = []
    var labels: Set<String> = []
    static let schema = EntitySchema<TwoSets>(.set("tags", \.tags), .set("labels", \.labels))
  }

  final class Built: Sendable {
    let label: Int
    init(_ label: Int) { self.label = label }
  }

  /// The cache itself: one build for the same entries, another after a change, after
  /// the entries were replaced by an equal copy, or for another type.
  @Test func anObjectIsKeptForTheSameEntriesOnly() {
    let cache = SetReadCache()
    var set: SetElements = [.string("a"): Presence(), .string("b"): Presence()]
    var builds = 0
    func read(_ set: SetElements, position: Int = 3, field: Int = 1) -> Built {
      cache.object(of: set, at: position, field: field, as: Built.self) {
        builds += 1
        return Built(builds)
      }
    }
    let first = read(set)
    #expect(read(set) === first && builds == 1)
    let copy = set  // shares the entries
    #expect(read(copy) === first && builds == 1)
    set.merge(Presence(), for: .string("c"))
    let second = read(set)
    #expect(second !== first && builds == 2)
    #expect(read(copy) !== first && builds == 3, "the entry was replaced by the newer set's")
    // Equal entries in another array are not the same entries.
    let equal = SetElements.reading(Array(set.entries)).0
    #expect(equal == set)
    #expect(read(equal) !== second && builds == 4)
    // Another field of the same entity, and another position, keep their own.
    let other = read(set, field: 2)
    #expect(read(set, field: 2) === other && builds == 5)
    #expect(read(equal) === read(equal) && builds == 5)
    #expect(read(set, position: 0) === read(set, position: 0) && builds == 6)
    // Another type builds its own.
    let values = cache.object(of: equal, at: 3, field: 1, as: VisibleElements<String>.self) {
      VisibleElements(["x"])
    }
    #expect(values.elements == ["x"])
  }

  /// Every change of a set is read by the next walk, in the copy that made it and not
  /// in the others (a snapshot shares the cache), whatever reader type read it before.
  @Test func keptTagsFollowEveryChangeAndNoOtherCopy() throws {
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1))
    let id = phone.create(SampleNote(title: "n", tags: ["home", "work"])).id
    var laptop = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(1))
    laptop.apply(phone.delta(since: laptop.context))
    func tags(_ replica: Replica) -> Set<String>? {
      replica.all(SampleNoteRow.self).first?.value.tags
    }
    #expect(tags(phone) == ["home", "work"])
    #expect(phone.all(TagValues.self).first?.value.tags == [.string("home"), .string("work")])
    #expect(tags(phone) == ["home", "work"])
    let snapshot = phone  // shares the entries, and the cache, with `phone`
    #expect(tags(snapshot) == ["home", "work"])

    try phone.update(SampleNoteRow.self, id: id) { $0.tags.insert("later") }
    #expect(tags(phone) == ["home", "work", "later"])
    #expect(phone.all(SampleNote.self).first?.value.tags == ["home", "work", "later"])
    #expect(tags(snapshot) == ["home", "work"])
    #expect(tags(phone) == ["home", "work", "later"])
    #expect(snapshot.all(SampleNote.self).first?.value.tags == ["home", "work"])

    let removed = try laptop.update(SampleNoteRow.self, id: id) { $0.tags.remove("home") }
    phone.apply(removed.delta)
    #expect(tags(phone) == ["work", "later"])
    #expect(phone.all(TagValues.self).first?.value.tags == [.string("work"), .string("later")])
    #expect(phone.get(SampleNoteRow.self, id: id)?.tags == ["work", "later"])
    #expect(tags(snapshot) == ["home", "work"])

    var history = UndoHistory(groupingInterval: .zero)
    phone.transact(recordingUndoIn: &history) { tx in
      tx.update(SampleNoteRow.self, id: id) { $0.tags.removeAll() }
    }
    #expect(tags(phone) == [])
    phone.undo(&history)
    #expect(tags(phone) == ["work", "later"])
    let loaded = try Replica(restoring: phone.encodedState())
    #expect(tags(loaded) == ["work", "later"])
    #expect(tags(snapshot) == ["home", "work"])

    // Two set fields of one entity are kept apart.
    _ = phone.transact { tx in
      tx.insert(.string("blue"), into: "labels", of: EntityKey(type: SampleNote.entityType, id: id))
    }
    for _ in 0..<2 {
      #expect(
        phone.all(TwoSets.self).first?.value == TwoSets(tags: ["work", "later"], labels: ["blue"]))
      #expect(tags(phone) == ["work", "later"])
    }
  }

  /// Equal tags built in one walk are one kept `Set` (one storage, retained by every row
  /// holding it), for the closure's reader (`TagValues`) as for the direct one; another
  /// set, or a set changed afterwards, has its own.
  @Test func equalTagsBuiltInOneWalkShareOneSet() throws {
    var replica = Replica(id: ReplicaID(rawValue: 5), wallClock: .fixed(1))
    var ids: [String] = []
    for index in 0..<6 {
      ids.append(
        replica.create(SampleNote(title: "n\(index)", tags: index < 4 ? ["home", "work"] : ["é"]))
          .id)
    }
    func storage<Element>(_ set: Set<Element>) -> UInt {
      withUnsafeBytes(of: set) { $0.load(as: UInt.self) }
    }
    for _ in 0..<2 {
      let rows = replica.all(SampleNoteRow.self).map(\.value.tags)
      #expect(rows == Array(repeating: ["home", "work"], count: 4) + [["é"], ["é"]])
      #expect(Set(rows.prefix(4).map(storage)).count == 1)
      #expect(Set(rows.suffix(2).map(storage)).count == 1)
      #expect(storage(rows[0]) != storage(rows[4]))
      let values = replica.all(TagValues.self).map(\.value.tags)
      #expect(Set(values.prefix(4).map(storage)).count == 1)
      #expect(values[0] == [.string("home"), .string("work")])
    }
    try replica.update(SampleNoteRow.self, id: ids[1]) { $0.tags.insert("later") }
    let rows = replica.all(SampleNoteRow.self).map(\.value.tags)
    #expect(rows[1] == ["home", "work", "later"])
    #expect(rows[0] == ["home", "work"] && storage(rows[0]) == storage(rows[2]))
    #expect(storage(rows[1]) != storage(rows[0]))
  }

  /// Random edits on two devices, walks after each step on both and on a snapshot taken
  /// now and then: every walk reads what the raw reads read.
  @Test func walksReadWhatTheDocumentHolds() throws {
    try forEachSeed(count: 6, base: 0x5E7_CAC4E) { random in
      var devices = [
        Replica(id: ReplicaID(rawValue: 7), wallClock: .fixed(1)),
        Replica(id: ReplicaID(rawValue: 9), wallClock: .fixed(1)),
      ]
      var snapshot = devices[0]
      let words = ["home", "work", "later", "é", "e\u{301}", "🥚"]
      func check(_ replica: Replica) throws {
        for (id, row) in replica.all(SampleNoteRow.self) {
          let key = EntityKey(type: SampleNote.entityType, id: id)
          let raw = Set(
            replica.document.elements(of: "tags", in: key).compactMap { String(fieldValue: $0) })
          try ensure(row.tags == raw, "\(id): \(row.tags) is not \(raw)")
          // A read of one model reads what the walk kept, and a reader of another type
          // never gets the kept `Set<String>`.
          let read = replica.get(SampleNoteRow.self, id: id)?.tags
          try ensure(read == raw, "\(id): get read \(read ?? []), not \(raw)")
          let values = Set(replica.document.elements(of: "tags", in: key))
          let readValues = replica.get(TagValues.self, id: id)?.tags
          try ensure(readValues == values, "\(id): \(readValues ?? []) is not \(values)")
        }
      }
      for step in 0..<80 {
        let device = Int.random(in: 0..<2, using: &random)
        let ids = devices[device].document.keys(ofType: SampleNote.entityType).map(\.id)
        switch Int.random(in: 0..<6, using: &random) {
        case 0:
          devices[device].create(SampleNote(title: "t\(step)", tags: [words[step % words.count]]))
        case 1, 2:
          guard let id = ids.randomElement(using: &random) else { continue }
          let word = words.randomElement(using: &random) ?? ""
          try devices[device].update(SampleNoteRow.self, id: id) {
            if $0.tags.contains(word) { $0.tags.remove(word) } else { $0.tags.insert(word) }
          }
        case 3:
          snapshot = devices[device]
        default:
          devices[device].apply(devices[1 - device].delta(since: devices[device].context))
        }
        for replica in devices + [snapshot] { try check(replica) }
      }
    }
  }

  /// An update after a walk starts from the tags the walk kept, and records what the
  /// transaction by hand records, byte for byte; the kept tags are not changed by it.
  @Test func anUpdateAfterAWalkRecordsTheTransactionByHand() throws {
    var random = SeededGenerator(seed: 0x45_16)
    var typed = Replica.seeded(using: &random)
    let id = typed.create(SampleNote(title: "n", tags: ["home", "work", "later"])).id
    let key = EntityKey(type: SampleNote.entityType, id: id)
    var raw = typed
    let snapshot = typed
    #expect(typed.all(SampleNoteRow.self).first?.value.tags == ["home", "work", "later"])
    let added = try typed.update(SampleNote.self, id: id) { $0.tags.insert("errand") }
    let addedByHand = raw.transact { $0.insert(.string("errand"), into: "tags", of: key) }
    #expect(added.delta.encoded() == addedByHand.delta.encoded())
    #expect(typed.all(SampleNoteRow.self).first?.value.tags == ["home", "work", "later", "errand"])
    // Removes and an add at once: the removes first, each in the values' order.
    let swapped = try typed.update(SampleNoteRow.self, id: id) {
      $0.tags.subtract(["work", "home"])
      $0.tags.insert("desk")
    }
    let swappedByHand = raw.transact { tx in
      tx.remove(.string("home"), from: "tags", of: key)
      tx.remove(.string("work"), from: "tags", of: key)
      tx.insert(.string("desk"), into: "tags", of: key)
    }
    #expect(swapped.delta.encoded() == swappedByHand.delta.encoded())
    // The same count before and after, one element replaced by another.
    let replaced = try typed.update(SampleNote.self, id: id) {
      $0.tags.remove("desk")
      $0.tags.insert("attic")
    }
    let replacedByHand = raw.transact { tx in
      tx.remove(.string("desk"), from: "tags", of: key)
      tx.insert(.string("attic"), into: "tags", of: key)
    }
    #expect(replaced.delta.encoded() == replacedByHand.delta.encoded())
    #expect(typed.document == raw.document)
    #expect(typed.get(SampleNote.self, id: id)?.tags == ["later", "errand", "attic"])
    #expect(snapshot.get(SampleNote.self, id: id)?.tags == ["home", "work", "later"])
    #expect(snapshot.all(SampleNoteRow.self).first?.value.tags == ["home", "work", "later"])
  }

  /// Readers of one document on several threads fill the kept tags of the same sets at
  /// once (under the cache's one lock): every reader reads every note's tags, and a
  /// later read agrees.
  @Test func readersOnSeveralThreadsReadTheSameTags() async throws {
    var replica = Replica(id: ReplicaID(rawValue: 3), wallClock: .fixed(1))
    let words = ["home", "work", "later", "é", "🥚"]
    for index in 0..<300 {
      replica.create(
        SampleNote(
          title: "n\(index)",
          tags: [words[index % words.count], words[(index / 5) % words.count]]))
    }
    let expected = replica.document.keys(ofType: SampleNote.entityType).map { key in
      Set(replica.document.elements(of: "tags", in: key).compactMap { String(fieldValue: $0) })
    }
    // A fresh document, whose cache keeps nothing yet.
    let fresh = try Replica(restoring: replica.encodedState())
    let reads = await withTaskGroup(of: [Set<String>].self) { group in
      for task in 0..<8 {
        group.addTask {
          task % 2 == 0
            ? fresh.all(SampleNoteRow.self).map(\.value.tags)
            : fresh.all(SampleNote.self).map(\.value.tags)
        }
      }
      var reads: [[Set<String>]] = []
      for await read in group { reads.append(read) }
      return reads
    }
    #expect(reads.count == 8)
    for read in reads { #expect(read == expected) }
    #expect(fresh.all(SampleNoteRow.self).map(\.value.tags) == expected)
  }
}
