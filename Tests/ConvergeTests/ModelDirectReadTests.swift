import Foundation
import Testing

@testable import Converge
@testable import ConvergeDocument

/// A typed read sets the stored properties of known kinds (`String`, `Bool`, `Int64`,
/// `Int`, `Double` registers, text into a `String`, a set into a `Set<String>`) through
/// their offsets by a switch over kinds, and calls the field's closure for the rest: the
/// two give the same model, field by field, whatever the document holds (values of
/// another kind, missing fields, defaults that are not empty).
@Suite struct ModelDirectReadTests {
  /// A label held by reference: a stored property of a class type.
  final class Label: FieldValueConvertible, Equatable, Sendable {
    let text: String
    init(_ text: String) { self.text = text }
    var fieldValue: FieldValue { .string(text) }
    init?(fieldValue: FieldValue) {
      guard case .string(let text) = fieldValue else { return nil }
      self.text = text
    }
    static func == (lhs: Label, rhs: Label) -> Bool { lhs.text == rhs.text }
  }

  enum Status: String, FieldValueConvertible, Sendable { case open, closed }

  /// Every kind of field, with defaults that are not a type's empty value.
  struct Everything: EntityModel, Equatable {
    static let entityType = "everything"
    var title = "untitled"
    var flag = true
    var big: Int64 = -1
    var count = 7
    var ratio = 0.5
    var body = "default body"
    var tags: Set<String> = ["default"]
    var numbers: Set<Int> = []
    var subtitle: String? = "none"
    var status = Status.open
    var due: Date?
    var items: [String] = []
    var parent: EntityKey?
    var label = Label("default")
    var stored = ""
    /// Computed: the key path has no offset.
    var shouted: String {
      get { stored.uppercased() }
      set { stored = newValue.lowercased() }
    }

    static let schema = EntitySchema<Everything>(
      .register("title", \.title), .register("flag", \.flag), .register("big", \.big),
      .register("count", \.count), .register("ratio", \.ratio), .text("body", \.body),
      .set("tags", \.tags), .set("numbers", \.numbers), .register("subtitle", \.subtitle),
      .register("status", \.status), .register("due", \.due), .list("items", \.items),
      .parent("parent", \.parent), .register("label", \.label), .text("shouted", \.shouted))
  }

  /// A model held by reference: its key paths have no offsets, so every field is read
  /// through its closure.
  final class Boxed: EntityModel, @unchecked Sendable {
    static let entityType = Everything.entityType
    var title = "untitled"
    var tags: Set<String> = []
    required init() {}

    static let schema = EntitySchema<Boxed>(.register("title", \.title), .set("tags", \.tags))
  }

  @Test func directReadsAreKeptForStoredPropertiesOfKnownKinds() {
    let reads = Everything.schema.directReads
    let expected: [DirectRead?] = [
      .string(offset: MemoryLayout<Everything>.offset(of: \.title) ?? -1),
      .bool(offset: MemoryLayout<Everything>.offset(of: \.flag) ?? -1),
      .int64(offset: MemoryLayout<Everything>.offset(of: \.big) ?? -1),
      .int(offset: MemoryLayout<Everything>.offset(of: \.count) ?? -1),
      .double(offset: MemoryLayout<Everything>.offset(of: \.ratio) ?? -1),
      .text(offset: MemoryLayout<Everything>.offset(of: \.body) ?? -1),
      .stringSet(offset: MemoryLayout<Everything>.offset(of: \.tags) ?? -1),
      nil, nil, nil, nil, nil, nil, nil, nil,
    ]
    #expect(reads == expected)
    #expect(!Everything.schema.readsDirectly)
    #expect(Boxed.schema.directReads == [nil, nil])
    #expect(EntitySchema<Everything>(.register("title", \.title)).readsDirectly)
  }

  /// Writes entity `index`'s fields by hand: some of the right kinds, some of another
  /// kind, some missing.
  private func write(_ index: Int, into transaction: inout DocumentTransaction) -> EntityKey {
    let key = EntityKey(type: Everything.entityType, id: "e\(index)")
    transaction.create(key)
    switch index % 4 {
    case 0:
      // Every field of its kind.
      transaction.setValue(.string("title \(index) é"), for: "title", of: key)
      transaction.setValue(.bool(index % 8 == 0), for: "flag", of: key)
      transaction.setValue(.int(Int64(index) << 40), for: "big", of: key)
      transaction.setValue(.int(Int64(index) * 1_000), for: "count", of: key)
      transaction.setValue(.double(Double(index) / 3), for: "ratio", of: key)
      transaction.insertText("Body \(index) 🥚", at: 0, in: "body", of: key)
      transaction.insertText("Loud \(index)", at: 0, in: "shouted", of: key)
      for tag in ["a\(index % 3)", "b", "🥚"] {
        transaction.insert(.string(tag), into: "tags", of: key)
      }
      transaction.insert(.int(Int64(index)), into: "numbers", of: key)
      transaction.setValue(.string("sub \(index)"), for: "subtitle", of: key)
      transaction.setValue(.string("closed"), for: "status", of: key)
      transaction.setValue(
        .date(Date(timeIntervalSinceReferenceDate: Double(index))), for: "due", of: key)
      transaction.insert(.string("item \(index)"), at: 0, intoList: "items", of: key)
      transaction.setValue(.string("label \(index)"), for: "label", of: key)
      if index > 0 {
        transaction.setParent(
          EntityKey(type: Everything.entityType, id: "e\(index - 4)"), of: key, in: "parent")
      }
    case 1:
      // Values of another kind: the defaults stay, but for a double from an integer, a
      // string element of a set among others and text written as a register (empty).
      transaction.setValue(.int(5), for: "title", of: key)
      transaction.setValue(.string("yes"), for: "flag", of: key)
      transaction.setValue(.double(1), for: "big", of: key)
      transaction.setValue(.string("many"), for: "count", of: key)
      transaction.setValue(.int(Int64(index)), for: "ratio", of: key)
      transaction.setValue(.string("not text"), for: "body", of: key)
      transaction.insert(.int(3), into: "tags", of: key)
      transaction.insert(.string("kept"), into: "tags", of: key)
      transaction.setValue(.null, for: "subtitle", of: key)
      transaction.setValue(.string("unknown"), for: "status", of: key)
      transaction.insertText("label", at: 0, in: "label", of: key)
    case 2:
      // A set whose elements were all removed, a null register.
      transaction.insert(.string("gone"), into: "tags", of: key)
      transaction.setValue(.null, for: "title", of: key)
    default:
      // Nothing written: registers keep their defaults, text and sets read as empty.
      break
    }
    return key
  }

  /// The model as each field's closure reads it, field by field.
  private func readByClosures(_ key: EntityKey, in document: Document) -> Everything? {
    var model: Everything?
    let schema = Everything.schema
    document.withVisibleFields(of: key, reading: schema.names) { stored in
      var read = Everything()
      for index in schema.fields.indices {
        schema.fields[index].read(&read, stored.field(at: index))
      }
      model = read
    }
    return model
  }

  @Test func directReadsMatchTheClosuresFieldByField() throws {
    var replica = Replica(id: ReplicaID(rawValue: 9), wallClock: .fixed(1))
    var keys: [EntityKey] = []
    replica.transact { transaction in
      for index in 0..<24 { keys.append(write(index, into: &transaction)) }
    }
    replica.transact { transaction in
      for index in keys.indices where index % 4 == 2 {
        transaction.remove(.string("gone"), from: "tags", of: keys[index])
      }
    }
    // Twice: the second walk reads the sets the first one kept.
    for pass in 0..<2 {
      let all = replica.all(Everything.self)
      #expect(all.map(\.id) == keys.map(\.id).sorted(), "pass \(pass)")
      for (id, model) in all {
        let key = EntityKey(type: Everything.entityType, id: id)
        let expected = try #require(readByClosures(key, in: replica.document))
        #expect(model == expected, "\(id), pass \(pass)")
        #expect(replica.get(Everything.self, id: id) == expected, "\(id), pass \(pass)")
      }
    }
    // The values, as the kinds say.
    let first = try #require(replica.get(Everything.self, id: "e4"))
    #expect(first.title == "title 4 é" && first.big == 4 << 40 && first.count == 4_000)
    #expect(first.ratio == 4.0 / 3 && first.body == "Body 4 🥚" && first.stored == "loud 4")
    #expect(first.tags == ["a1", "b", "🥚"] && first.numbers == [4] && first.subtitle == "sub 4")
    #expect(first.status == .closed && first.items == ["item 4"] && first.label.text == "label 4")
    #expect(first.parent == EntityKey(type: Everything.entityType, id: "e0") && !first.flag)
    let other = try #require(replica.get(Everything.self, id: "e5"))
    #expect(other.title == "untitled" && other.flag && other.big == -1 && other.count == 7)
    #expect(other.ratio == 5 && other.body == "" && other.tags == ["kept"])
    #expect(other.subtitle == nil && other.status == .open && other.label.text == "default")
    let emptied = try #require(replica.get(Everything.self, id: "e6"))
    #expect(emptied.tags.isEmpty && emptied.title == "untitled")
    let bare = try #require(replica.get(Everything.self, id: "e7"))
    var defaults = Everything()
    defaults.body = ""
    defaults.tags = []
    #expect(bare == defaults)
  }

  @Test func aModelWithoutOffsetsReadsThroughItsClosures() throws {
    var replica = Replica(id: ReplicaID(rawValue: 9), wallClock: .fixed(1))
    replica.transact { transaction in
      for index in 0..<8 { _ = write(index, into: &transaction) }
    }
    for _ in 0..<2 {
      let boxed = replica.all(Boxed.self)
      let everything = replica.all(Everything.self)
      #expect(boxed.map(\.id) == everything.map(\.id))
      for (box, model) in zip(boxed, everything) {
        #expect(box.value.title == model.value.title, "\(box.id)")
        #expect(box.value.tags == model.value.tags, "\(box.id)")
        #expect(replica.get(Boxed.self, id: box.id)?.title == model.value.title)
      }
    }
  }

  @Test func anUpdateStartsFromTheDirectRead() throws {
    var replica = Replica(id: ReplicaID(rawValue: 9), wallClock: .fixed(1))
    replica.transact { transaction in
      for index in 0..<4 { _ = write(index, into: &transaction) }
    }
    _ = replica.all(Everything.self)
    try replica.update(Everything.self, id: "e0") {
      $0.tags.insert("new")
      $0.count += 1
    }
    let read = try #require(replica.get(Everything.self, id: "e0"))
    #expect(read.tags == ["a0", "b", "🥚", "new"] && read.count == 1)
    #expect(read.title == "title 0 é" && read.body == "Body 0 🥚" && read.flag)
  }

  /// Entities with sixteen lists of field names, in turn: a walk remembers the slots of a
  /// few lists, and finds them again for the others.
  @Test func aWalkOverManyListsOfNamesReadsEachEntitysOwnFields() throws {
    var replica = Replica(id: ReplicaID(rawValue: 9), wallClock: .fixed(1))
    replica.transact { transaction in
      for index in 0..<64 {
        let key = EntityKey(type: Everything.entityType, id: "m\(100 + index)")
        transaction.create(key)
        let fields = index % 16
        if fields & 1 != 0 { transaction.setValue(.string("t\(index)"), for: "title", of: key) }
        if fields & 2 != 0 { transaction.setValue(.bool(false), for: "flag", of: key) }
        if fields & 4 != 0 { transaction.setValue(.int(Int64(index)), for: "count", of: key) }
        if fields & 8 != 0 { transaction.insert(.string("g\(index)"), into: "tags", of: key) }
      }
    }
    let all = replica.all(Everything.self)
    #expect(all.count == 64)
    for (offset, (id, model)) in all.enumerated() {
      let fields = offset % 16
      #expect(model.title == (fields & 1 != 0 ? "t\(offset)" : "untitled"), "\(id)")
      #expect(model.flag == (fields & 2 == 0), "\(id)")
      #expect(model.count == (fields & 4 != 0 ? offset : 7), "\(id)")
      #expect(model.tags == (fields & 8 != 0 ? ["g\(offset)"] : []), "\(id)")
      #expect(replica.get(Everything.self, id: id) == model, "\(id)")
    }
  }
}
