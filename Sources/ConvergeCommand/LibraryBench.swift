import Converge
import ConvergeSimulator
import ConvergeStore
import ConvergeTestSupport
import ConvergeTraces
import Foundation

/// `converge bench --library N [--tasks | --empty-bodies] [--json]`: one replica holding
/// a user's whole library, measured where apps feel it: building it, the memory and saved
/// bytes per entity, launch (load), saving (encode), a handshake with a peer 400 edits
/// behind (`delta(since:)`), one small remote edit, and reading every entity.
///
/// A note has a title, two tags, a pinned flag and a 405-character body, created one
/// transaction per note; `--empty-bodies` leaves the body out (the peer's 400 edits still
/// type into bodies); the tasks variant has the tasks model's fields and no body.
enum LibraryBench {
  struct Report: Encodable, Equatable {
    var entities: Int
    var buildUsPerEntity: Double
    var residentBytesPerEntity: Int
    var stateBytesPerEntity: Int
    /// A store's load of its own snapshot (tagged: texts deferred).
    var loadMs: Double
    /// A load of the same bytes from elsewhere, every byte checked.
    var loadCheckedMs: Double
    /// Opening a store whose snapshot holds the library: reading the file, checking its
    /// frame and tag, loading with the texts deferred.
    var storeOpenMs: Double
    var encodeMs: Double
    var deltaSinceMs: Double
    var applySmallDeltaUs: Double
    var readFieldAllMs: Double
    var readModelsAllMs: Double
    /// The notes again through the typed API, beside raw transactions; `nil` for tasks.
    var typed: TypedReport?
  }

  static let bodyLength = 405
  static let peerLag = 400

  static func run(entities: Int, tasks: Bool, bodies: Bool, json: Bool) -> Int32 {
    let (report, consistent) = measure(entities: entities, tasks: tasks, bodies: bodies)
    guard consistent else {
      FileHandleOutput.error("error: the library did not read back as built")
      return 1
    }
    if json {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys]
      encoder.keyEncodingStrategy = .convertToSnakeCase
      guard let data = try? encoder.encode(report) else { return 1 }
      print(String(decoding: data, as: UTF8.self))
      return 0
    }
    let kind = tasks ? "tasks" : bodies ? "notes" : "notes without a body"
    print("library of \(report.entities) \(kind), one transaction each")
    print(String(format: "build                 %10.2f µs per entity", report.buildUsPerEntity))
    print("resident memory       \(report.residentBytesPerEntity) bytes per entity")
    print("saved state           \(report.stateBytesPerEntity) bytes per entity")
    print(String(format: "load the saved state  %10.2f ms", report.loadMs))
    print(String(format: "  checking every byte %10.2f ms", report.loadCheckedMs))
    print(String(format: "open a store of it    %10.2f ms", report.storeOpenMs))
    print(String(format: "encode the state      %10.2f ms", report.encodeMs))
    print(String(format: "delta(since:) %d back %10.2f ms", peerLag, report.deltaSinceMs))
    print(String(format: "apply a small delta   %10.2f µs", report.applySmallDeltaUs))
    print(String(format: "read one field of all %10.2f ms", report.readFieldAllMs))
    print(String(format: "read all as models    %10.2f ms", report.readModelsAllMs))
    if let typed = report.typed { printTyped(typed) }
    return 0
  }

  /// The report, and whether every read found what was built (a bench of wrong
  /// answers measures nothing).
  static func measure(entities: Int, tasks: Bool, bodies: Bool) -> (Report, consistent: Bool) {
    var random = SeededGenerator(seed: 0x11B)
    // The entities' contents are drawn before the clock starts and before the memory
    // baseline, so that build and resident figures are the library's, not the bench's.
    let inputs = (0..<entities).map { index in
      tasks
        ? Input.task(index, using: &random) : Input.note(index, body: bodies, using: &random)
    }
    MemoryProbe.releaseFreeHeap()
    let residentBefore = MemoryProbe.residentSet()
    var replica = Replica(id: ReplicaID(rawValue: 1))
    let clock = ContinuousClock()
    let build = clock.measure {
      for input in inputs {
        replica.transact { tx in input.write(in: &tx) }
      }
    }
    MemoryProbe.releaseFreeHeap()
    let resident = MemoryProbe.residentSet() - residentBefore
    withExtendedLifetime(inputs) {}

    var state: [UInt8] = []
    let encode = best(of: 3) { state = replica.encodedState() }
    // Each loaded replica is released after its clock stops: freeing 50,000 entities is
    // not part of loading them.
    var restored: Document?
    let loadChecked = best(of: 3) {
      restored = nil
    } measuring: {
      restored = try? Document(decoding: state)
    }
    // As a store loads its own snapshot: the tag shows the bytes are the store's, and
    // the texts stay coded until read (`DeferredTexts`).
    var keyRandom = SeededGenerator(seed: 0x5EA1)
    let key = SnapshotKey(using: &keyRandom)
    let tag = key.tag(of: state)
    let load = best(of: 3) {
      restored = nil
    } measuring: {
      restored = try? Document(decoding: state, tag: tag, key: key)
    }
    let deferredTexts = restored?.deferredTextCount ?? 0
    let storeOpen = measureStoreOpen(replica.document)

    // A peer that saw everything but the last 400 edits asks for what it lacks.
    let peerContext = replica.context
    let type = tasks ? SimulatedTask.entityType : SimulatedNote.entityType
    for _ in 0..<peerLag {
      let key = EntityKey(type: type, id: "\(Int.random(in: 0..<entities, using: &random))")
      replica.transact { tx in
        if tasks {
          tx.setValue(.int(Int64.random(in: 0..<5, using: &random)), for: "priority", of: key)
        } else {
          tx.insertText(
            "x", at: Int.random(in: 0...bodyLength, using: &random), in: "body", of: key)
        }
      }
    }
    let deltaSince = best(of: 5) { _ = replica.delta(since: peerContext) }

    // Small edits from another device, applied one at a time.
    var other = replica.forked(as: ReplicaID(rawValue: 2))
    var remote: [DocumentDelta] = []
    for _ in 0..<101 {
      let key = EntityKey(type: type, id: "\(Int.random(in: 0..<entities, using: &random))")
      remote.append(
        other.transact { $0.setValue(.string("Renamed"), for: "title", of: key) }.delta)
    }
    var applyTimes: [Duration] = []
    for delta in remote {
      applyTimes.append(clock.measure { replica.apply(delta) })
    }
    applyTimes.sort()

    let document = replica.document
    var titles = 0
    let readField = best(of: 3) {
      titles = 0
      titles =
        document.values(
          of: "title", ofType: tasks ? SimulatedTask.entityType : SimulatedNote.entityType
        ).count
    }
    var models = 0
    let readModels = best(of: 3) {
      models =
        tasks ? replica.all(SimulatedTask.self).count : replica.all(SimulatedNote.self).count
    }
    let count = Double(max(entities, 1))
    let buildUs = milliseconds(build) * 1000 / count
    let typed =
      tasks
      ? nil
      : measureTyped(
        inputs, rawCreateUs: buildUs, rawResident: resident / max(entities, 1), raw: &replica,
        using: &random)
    let consistent =
      titles == entities && models == entities && restored?.keys.count == entities
      && deferredTexts == (bodies && !tasks ? entities : 0) && storeOpen?.tagged == true
      && (tasks || typed != nil)
    let report = Report(
      entities: entities,
      buildUsPerEntity: buildUs,
      residentBytesPerEntity: resident / max(entities, 1),
      stateBytesPerEntity: state.count / max(entities, 1),
      loadMs: milliseconds(load), loadCheckedMs: milliseconds(loadChecked),
      storeOpenMs: storeOpen.map { milliseconds($0.0) } ?? 0, encodeMs: milliseconds(encode),
      deltaSinceMs: milliseconds(deltaSince),
      applySmallDeltaUs: milliseconds(applyTimes[applyTimes.count / 2]) * 1000,
      readFieldAllMs: milliseconds(readField),
      readModelsAllMs: milliseconds(readModels), typed: typed)
    return (report, consistent)
  }

  /// One entity's fields, drawn from the bench's seeded generator.
  struct Input {
    var key: EntityKey
    var registers: [(field: String, value: FieldValue)]
    var tags: [String]
    /// The note's body; `nil` for a task.
    var body: String?

    func write(in tx: inout DocumentTransaction) {
      tx.create(key)
      for (field, value) in registers { tx.setValue(value, for: field, of: key) }
      for tag in tags { tx.insert(.string(tag), into: "tags", of: key) }
      if let body { tx.insertText(body, at: 0, in: "body", of: key) }
    }

    static func note(_ index: Int, body withBody: Bool, using random: inout SeededGenerator)
      -> Input
    {
      let tags = Array(LibraryBench.tags.shuffled(using: &random).prefix(2))
      let pinned = random.next() % 5 == 0
      var body = String.UnicodeScalarView()
      var length = 0  // the view's count walks the whole string
      while length < bodyLength {
        let word = Workload.vocabulary.randomElement(using: &random) ?? " "
        let taken = word.unicodeScalars.prefix(bodyLength - length)
        body.append(contentsOf: taken)
        length += taken.count
      }
      return Input(
        key: EntityKey(type: SimulatedNote.entityType, id: "\(index)"),
        registers: [("title", .string("Note \(index)")), ("pinned", .bool(pinned))],
        tags: tags, body: withBody ? String(body) : nil)
    }

    static func task(_ index: Int, using random: inout SeededGenerator) -> Input {
      let status = SimulatedTaskStatus.allCases.randomElement(using: &random) ?? .todo
      let priority = FieldValue.int(Int64.random(in: 0..<5, using: &random))
      let flagged = FieldValue.bool(random.next() % 4 == 0)
      let tags = Array(LibraryBench.tags.shuffled(using: &random).prefix(2))
      let position = SimulatedBoardPosition(column: "inbox", x: index % 7, y: index)
      return Input(
        key: EntityKey(type: SimulatedTask.entityType, id: "\(index)"),
        registers: [
          ("title", .string("Task \(index)")), ("status", status.fieldValue),
          ("priority", priority), ("flagged", flagged), ("position", position.fieldValue),
        ],
        tags: tags, body: nil)
    }
  }

  private static let tags = ["home", "work", "urgent", "later", "idea", "errand"]

  static func best(of runs: Int, _ body: () -> Void) -> Duration {
    best(of: runs, {}, measuring: body)
  }

  /// The fastest of three opens of a store in a temporary directory holding `document`
  /// as its snapshot (read from the file system's cache), and whether each open found
  /// its snapshot's tag matching (so that its texts stayed coded); `nil` if the store
  /// failed.
  private static func measureStoreOpen(_ document: Document) -> (Duration, tagged: Bool)? {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-library-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var configuration = DocumentStore.Configuration()
    configuration.syncInBackground = false
    do {
      let store = try DocumentStore(directory: directory, configuration: configuration)
      store.apply(document.delta(since: CausalContext()))
      try store.compact()
      try store.close()
    } catch {
      return nil
    }
    var opened: DocumentStore?
    var tagged = true
    // Each store is closed after its clock stops: a close writes the identity record.
    let open = best(of: 3) {
      try? opened?.close()
      opened = nil
    } measuring: {
      opened = try? DocumentStore(directory: directory, configuration: configuration)
      tagged = tagged && opened?.recovery.snapshotTagged == true
    }
    try? opened?.close()
    return (open, tagged)
  }

  /// The fastest of `runs` runs of `body`, each after an untimed `prepare`.
  static func best(
    of runs: Int, _ prepare: () -> Void, measuring body: () -> Void
  ) -> Duration {
    let clock = ContinuousClock()
    var fastest = Duration.seconds(Int64.max)
    for _ in 0..<runs {
      prepare()
      fastest = min(fastest, clock.measure(body))
    }
    return fastest
  }
}
