import Converge
import ConvergeSimulator
import ConvergeTestSupport
import ConvergeTraces
import Foundation

/// `converge bench --library N [--tasks] [--json]`: one replica holding a user's whole
/// library, measured where apps feel it: building it, the memory and saved bytes per
/// entity, launch (load), saving (encode), a handshake with a peer 400 edits behind
/// (`delta(since:)`), one small remote edit, and reading every entity.
///
/// A note has a title, two tags, a pinned flag and a 405-character body, created one
/// transaction per note; the tasks variant has the tasks model's fields and no body.
enum LibraryBench {
  struct Report: Encodable, Equatable {
    var entities: Int
    var buildUsPerEntity: Double
    var residentBytesPerEntity: Int
    var stateBytesPerEntity: Int
    var loadMs: Double
    var encodeMs: Double
    var deltaSinceMs: Double
    var applySmallDeltaUs: Double
    var readFieldAllMs: Double
    var readModelsAllMs: Double
  }

  static let bodyLength = 405
  static let peerLag = 400

  static func run(entities: Int, tasks: Bool, json: Bool) -> Int32 {
    let (report, consistent) = measure(entities: entities, tasks: tasks)
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
    let kind = tasks ? "tasks" : "notes"
    print("library of \(report.entities) \(kind), one transaction each")
    print(String(format: "build                 %10.2f µs per entity", report.buildUsPerEntity))
    print("resident memory       \(report.residentBytesPerEntity) bytes per entity")
    print("saved state           \(report.stateBytesPerEntity) bytes per entity")
    print(String(format: "load the saved state  %10.2f ms", report.loadMs))
    print(String(format: "encode the state      %10.2f ms", report.encodeMs))
    print(String(format: "delta(since:) %d back %10.2f ms", peerLag, report.deltaSinceMs))
    print(String(format: "apply a small delta   %10.2f µs", report.applySmallDeltaUs))
    print(String(format: "read one field of all %10.2f ms", report.readFieldAllMs))
    print(String(format: "read all as models    %10.2f ms", report.readModelsAllMs))
    return 0
  }

  /// The report, and whether every read found what was built (a bench of wrong
  /// answers measures nothing).
  static func measure(entities: Int, tasks: Bool) -> (Report, consistent: Bool) {
    var random = SeededGenerator(seed: 0x11B)
    MemoryProbe.releaseFreeHeap()
    let residentBefore = MemoryProbe.residentSet()
    var replica = Replica(id: ReplicaID(rawValue: 1))
    let clock = ContinuousClock()
    let build = clock.measure {
      for index in 0..<entities {
        replica.transact { tx in
          if tasks {
            makeTask(index, in: &tx, using: &random)
          } else {
            makeNote(index, in: &tx, using: &random)
          }
        }
      }
    }
    MemoryProbe.releaseFreeHeap()
    let resident = MemoryProbe.residentSet() - residentBefore

    var state: [UInt8] = []
    let encode = best(of: 3) { state = replica.encodedState() }
    let load = best(of: 3) { _ = try? Replica(restoring: state) }

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
    let restored = (try? Replica(restoring: state))?.document.keys.count
    let consistent = titles == entities && models == entities && restored == entities
    let count = Double(max(entities, 1))
    let report = Report(
      entities: entities,
      buildUsPerEntity: milliseconds(build) * 1000 / count,
      residentBytesPerEntity: resident / max(entities, 1),
      stateBytesPerEntity: state.count / max(entities, 1),
      loadMs: milliseconds(load), encodeMs: milliseconds(encode),
      deltaSinceMs: milliseconds(deltaSince),
      applySmallDeltaUs: milliseconds(applyTimes[applyTimes.count / 2]) * 1000,
      readFieldAllMs: milliseconds(readField),
      readModelsAllMs: milliseconds(readModels))
    return (report, consistent)
  }

  private static func makeNote(
    _ index: Int, in tx: inout DocumentTransaction, using random: inout SeededGenerator
  ) {
    let key = EntityKey(type: SimulatedNote.entityType, id: "\(index)")
    tx.create(key)
    tx.setValue(.string("Note \(index)"), for: "title", of: key)
    for tag in tags.shuffled(using: &random).prefix(2) {
      tx.insert(.string(tag), into: "tags", of: key)
    }
    tx.setValue(.bool(random.next() % 5 == 0), for: "pinned", of: key)
    var body = ""
    while body.unicodeScalars.count < bodyLength {
      body += Workload.vocabulary.randomElement(using: &random) ?? " "
    }
    let scalars = String.UnicodeScalarView(body.unicodeScalars.prefix(bodyLength))
    tx.insertText(String(scalars), at: 0, in: "body", of: key)
  }

  private static func makeTask(
    _ index: Int, in tx: inout DocumentTransaction, using random: inout SeededGenerator
  ) {
    let key = EntityKey(type: SimulatedTask.entityType, id: "\(index)")
    tx.create(key)
    tx.setValue(.string("Task \(index)"), for: "title", of: key)
    let status = SimulatedTaskStatus.allCases.randomElement(using: &random) ?? .todo
    tx.setValue(status.fieldValue, for: "status", of: key)
    tx.setValue(.int(Int64.random(in: 0..<5, using: &random)), for: "priority", of: key)
    tx.setValue(.bool(random.next() % 4 == 0), for: "flagged", of: key)
    for tag in tags.shuffled(using: &random).prefix(2) {
      tx.insert(.string(tag), into: "tags", of: key)
    }
    let position = SimulatedBoardPosition(column: "inbox", x: index % 7, y: index)
    tx.setValue(position.fieldValue, for: "position", of: key)
  }

  private static let tags = ["home", "work", "urgent", "later", "idea", "errand"]

  private static func best(of runs: Int, _ body: () -> Void) -> Duration {
    let clock = ContinuousClock()
    var fastest = Duration.seconds(Int64.max)
    for _ in 0..<runs { fastest = min(fastest, clock.measure(body)) }
    return fastest
  }
}
