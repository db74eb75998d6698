import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// A typed read sets each property through its offset in the model when the key path
/// names stored inline storage, and through the key path otherwise (a computed
/// property): both give what the document holds.
@Suite struct ModelPropertyTests {
  /// A model whose fields are a nested stored property, a computed one, a stored one
  /// after a one-byte field, and a set.
  struct Shaped: EntityModel, Equatable {
    static let entityType = "shaped"
    struct Heading: Equatable, Sendable {
      var flag = false
      var title = ""
    }
    var heading = Heading()
    var small = false
    var count = 0
    var stored = ""
    var tags: Set<String> = []
    /// Computed: the key path has no offset.
    var shouted: String {
      get { stored.uppercased() }
      set { stored = newValue.lowercased() }
    }

    static let schema = EntitySchema<Shaped>(
      .register("title", \.heading.title), .register("flag", \.heading.flag),
      .register("small", \.small), .register("count", \.count),
      .text("shouted", \.shouted), .set("tags", \.tags))
  }

  @Test func offsetsExistOnlyForStoredProperties() {
    #expect(ModelProperty(\Shaped.heading.title).offset != nil)
    #expect(ModelProperty(\Shaped.small).offset != nil)
    #expect(ModelProperty(\Shaped.count).offset != nil)
    #expect(ModelProperty(\Shaped.tags).offset != nil)
    #expect(ModelProperty(\Shaped.shouted).offset == nil)
  }

  @Test func propertiesSetThroughOffsetsOrKeyPathsReadBack() throws {
    var replica = Replica(id: ReplicaID(rawValue: 5), wallClock: .fixed(1))
    var ids: [String] = []
    for index in 0..<40 {
      var model = Shaped()
      model.heading = Shaped.Heading(flag: index % 2 == 0, title: "t\(index) é")
      model.small = index % 5 == 0
      model.count = index * 1_000
      model.shouted = "Body \(index)"
      model.tags = index % 3 == 0 ? [] : ["a\(index % 4)", "🥚"]
      ids.append(replica.create(model).id)
    }
    try replica.update(Shaped.self, id: ids[7]) {
      $0.heading.title = "seven"
      $0.tags = ["x"]
    }
    let all = replica.all(Shaped.self)
    #expect(all.count == 40)
    for (index, entry) in all.enumerated() {
      let key = EntityKey(type: Shaped.entityType, id: entry.id)
      let document = replica.document
      let title = document.value(of: "title", in: key).flatMap { String(fieldValue: $0) }
      let flag = document.value(of: "flag", in: key).flatMap { Bool(fieldValue: $0) } ?? false
      let tags = Set(document.elements(of: "tags", in: key).compactMap { String(fieldValue: $0) })
      #expect(entry.value.heading == Shaped.Heading(flag: flag, title: title ?? ""))
      #expect(entry.value.stored == document.text(of: "shouted", in: key).lowercased())
      #expect(entry.value.tags == tags)
      #expect(replica.get(Shaped.self, id: entry.id) == entry.value, "row \(index)")
    }
    #expect(replica.get(Shaped.self, id: ids[7])?.heading.title == "seven")
    #expect(replica.get(Shaped.self, id: ids[7])?.tags == ["x"])
    #expect(replica.get(Shaped.self, id: ids[10])?.small == true)
    #expect(replica.get(Shaped.self, id: ids[9])?.count == 9_000)
    #expect(replica.get(Shaped.self, id: ids[9])?.stored == "body 9")
  }

  /// An update reads the old and new model's properties through the same offsets or key
  /// paths: it records the properties that changed, stored or computed, and nothing for
  /// an update that changes none.
  @Test func updatesReadPropertiesThroughOffsetsOrKeyPaths() throws {
    var replica = Replica(id: ReplicaID(rawValue: 6), wallClock: .fixed(1))
    var model = Shaped()
    model.heading.title = "before"
    model.shouted = "quiet"
    model.tags = ["a"]
    let id = replica.create(model).id
    let unchanged = try replica.update(Shaped.self, id: id) { $0.count = 0 }
    #expect(unchanged.delta.isEmpty)
    try replica.update(Shaped.self, id: id) {
      $0.heading.flag = true
      $0.count = 12
      $0.shouted = "LOUDER"
      $0.tags.insert("b")
    }
    var expected = model
    expected.heading.flag = true
    expected.count = 12
    expected.stored = "louder"
    expected.tags = ["a", "b"]
    #expect(replica.get(Shaped.self, id: id) == expected)
    let key = EntityKey(type: Shaped.entityType, id: id)
    // The computed property is written as it reads: upper case.
    #expect(replica.document.text(of: "shouted", in: key) == "LOUDER")
    #expect(replica.document.value(of: "count", in: key) == .int(12))
  }
}
