import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// Collecting list tombstones through the document (`Document+Collecting.swift`): cuts
/// computed from the devices' reports, taken up by each device once it holds their
/// covering context, collected at once doubly stable (``StableCutHistory``), amid edits,
/// syncs and old deltas delivered again; checked against devices that never collect.
@Suite struct DocumentListCollectionTests {
  private static let boards = [
    EntityKey(type: "column", id: "todo"), EntityKey(type: "column", id: "done"),
  ]
  private static let pool = (0..<8).map { FieldValue.string("card\($0)") }

  /// Two worlds of devices: one collects at doubly stable cuts, the other never does;
  /// both make the same edits and syncs.
  private struct World {
    var collecting: [Replica]
    var keeping: [Replica]
    /// Every delta made or sent so far, for delivering old ones again.
    var sent: [DocumentDelta] = []
    /// The cuts computed so far, each with its covering context.
    var cuts: [(stable: CausalContext, covering: CausalContext)] = []
    /// The next cut each device takes up, and its history of cuts.
    var nextCut: [Int]
    var histories: [StableCutHistory]
    var collected = 0
    var collections = 0

    init(count: Int) {
      collecting = (0..<count).map {
        Replica(id: ReplicaID(rawValue: UInt64($0 + 1)), wallClock: .fixed(1_000))
      }
      keeping = collecting
      nextCut = Array(repeating: 0, count: count)
      histories = Array(repeating: StableCutHistory(), count: count)
    }

    /// A random insert, move or remove on a random board of `device`, in both worlds.
    mutating func edit(_ device: Int, using random: inout SeededGenerator) {
      let boards = DocumentListCollectionTests.boards
      let board = boards[Int.random(in: 0..<boards.count, using: &random)]
      let count = collecting[device].document.list(of: "cards", in: board).count
      let kind = Int.random(in: 0..<5, using: &random)
      let from = Int.random(in: 0..<max(count, 1), using: &random)
      let to = Int.random(in: 0...count, using: &random)
      let value = DocumentListCollectionTests.pool.randomElement(using: &random) ?? .null
      let commit = collecting[device].transact { tx in
        if kind == 0 || count == 0 {
          tx.insert(value, at: to, intoList: "cards", of: board)
        } else if kind < 4 {
          tx.move(from: from, to: to, inList: "cards", of: board)
        } else {
          tx.remove(at: from, fromList: "cards", of: board)
        }
      }
      keeping[device].apply(commit.delta)
      sent.append(commit.delta)
    }

    mutating func sync(_ receiver: Int, from sender: Int) {
      let delta = collecting[sender].delta(since: collecting[receiver].context)
      collecting[receiver].apply(delta)
      keeping[receiver].apply(keeping[sender].delta(since: keeping[receiver].context))
      sent.append(delta)
    }

    /// The relay's round: every device reports its context; the cut is their meet.
    mutating func computeCut() {
      let reports = collecting.map(\.context)
      var union = CausalContext()
      for report in reports { union.formUnion(report) }
      cuts.append((CausalContext.stableCut(of: reports, seenBy: union), union))
    }

    /// `device` takes up the cuts it holds the covering context of, in order, and
    /// collects at each that becomes doubly stable; it passes over those `skip` says to
    /// (as a relay session does when a later cut replaces one still waiting).
    mutating func takeUpCuts(_ device: Int, skip: () -> Bool = { false }) {
      while nextCut[device] < cuts.count,
        collecting[device].context.includes(cuts[nextCut[device]].covering)
      {
        let cut = cuts[nextCut[device]]
        nextCut[device] += 1
        if nextCut[device] < cuts.count, skip() { continue }
        if let doublyStable = histories[device].note(stable: cut.stable, covering: cut.covering) {
          collected += collecting[device].collectListTombstones(at: doublyStable)
          collections += 1
        }
      }
    }

    mutating func syncAll() {
      for receiver in collecting.indices {
        for sender in collecting.indices where sender != receiver { sync(receiver, from: sender) }
      }
    }

    /// Where a device shows other cards than its twin that never collects.
    func differences() -> [String] {
      var found: [String] = []
      for device in collecting.indices {
        for board in DocumentListCollectionTests.boards {
          let shown = collecting[device].document.list(of: "cards", in: board)
          let kept = keeping[device].document.list(of: "cards", in: board)
          if shown != kept { found.append("device \(device) \(board.id): \(shown) vs \(kept)") }
        }
      }
      return found
    }
  }

  /// 2–4 devices insert, move and remove cards on two boards, sync and receive old
  /// deltas again at random; the relay computes cuts at random moments; each device
  /// takes them up once it holds their covering context (passing over some, so devices
  /// collect at different sequences of cuts) and collects at the doubly stable ones. At every step each device shows the cards of its twin that never
  /// collects; after a full sync and two more cuts taken up everywhere, all devices hold
  /// equal documents, showing the twins' cards; old deltas delivered again change
  /// nothing; the collected documents decode from their bytes to themselves.
  @Test func collectingThroughTheDocumentChangesNoCardAndConverges() throws {
    var collectedInAll = 0
    try forEachSeed(count: 120, base: 0x4C15_7D01) { random in
      var world = World(count: Int.random(in: 2...4, using: &random))
      let count = world.collecting.count
      var violations: [String] = []
      // Which cuts a device passes over: a stream of its own.
      var side = SeededGenerator(seed: random.seed, stream: 1)
      for _ in 0..<Int.random(in: 40...160, using: &random) {
        let device = Int.random(in: 0..<count, using: &random)
        switch Int.random(in: 0..<12, using: &random) {
        case 0..<3: world.sync(device, from: Int.random(in: 0..<count, using: &random))
        case 3:
          if let old = world.sent.randomElement(using: &random) {
            world.collecting[device].apply(old)
            world.keeping[device].apply(old)
          }
        case 4: world.computeCut()
        default: world.edit(device, using: &random)
        }
        world.takeUpCuts(device) { Int.random(in: 0..<3, using: &side) == 0 }
        violations += world.differences()
        if !violations.isEmpty { break }
      }
      if violations.isEmpty {
        world.syncAll()
        world.syncAll()
        // Everyone holds everything: two more cuts, taken up by every device.
        for _ in 0..<2 {
          world.computeCut()
          for device in 0..<count { world.takeUpCuts(device) }
        }
        violations += world.differences()
        let first = world.collecting[0].document
        for device in 1..<count where world.collecting[device].document != first {
          violations.append("device \(device)'s document differs from device 0's")
        }
        for device in 0..<count {
          let before = world.collecting[device].document
          for old in world.sent { world.collecting[device].apply(old) }
          if world.collecting[device].document != before {
            violations.append("old deltas changed device \(device)'s document")
          }
        }
        let decoded = try Document(decoding: first.encoded())
        if decoded != first { violations.append("the collected document does not decode") }
      }
      try LawViolation.throwIfAny(
        violations, of: "collecting through the document changes no card and converges",
        seed: random.seed)
      collectedInAll += world.collected
    }
    // The histories do collect (the law is not checked on nothing).
    #expect(collectedInAll > 500, "slots collected over all seeds: \(collectedInAll)")
  }

  /// A cut becomes doubly stable only once a later cut includes its covering context;
  /// the latest such cut is returned, and it and the older ones stop waiting.
  @Test func aCutIsDoublyStableOnceALaterCutCoversItsReports() {
    let phone = ReplicaID(rawValue: 1)
    func context(_ upTo: UInt64) -> CausalContext {
      var context = CausalContext()
      if upTo > 0 { context.insert(replica: phone, counters: 1...upTo) }
      return context
    }
    var history = StableCutHistory()
    #expect(history.note(stable: context(2), covering: context(5)) == nil)
    // Not covered yet: both cuts wait.
    #expect(history.note(stable: context(4), covering: context(6)) == nil)
    #expect(history.waiting.map(\.stable) == [context(2), context(4)])
    // Covers the first cut's reports only.
    let first = history.note(stable: context(5), covering: context(9))
    #expect(first?.stable == context(2))
    #expect(first?.covering == context(5))
    #expect(history.waiting.map(\.stable) == [context(4), context(5)])
    // Covers both waiting cuts: the latest is returned, and neither waits any more.
    let latest = history.note(stable: context(9), covering: context(9))
    #expect(latest?.stable == context(5))
    #expect(history.waiting.map(\.stable) == [context(9)])
    #expect(DoublyStableCut(stable: context(2), covering: context(5), coveredBy: context(4)) == nil)
  }

  /// A covering context that never becomes stable holds back no collection: later cuts
  /// are collected at, and the cut that waited for it stops waiting.
  @Test func aCutNeverCoveredStopsWaiting() {
    let phone = ReplicaID(rawValue: 1)
    let gone = ReplicaID(rawValue: 9)
    func context(_ upTo: UInt64) -> CausalContext {
      var context = CausalContext()
      context.insert(replica: phone, counters: 1...upTo)
      return context
    }
    var history = StableCutHistory()
    var unreachable = context(1)
    unreachable.insert(Dot(replica: gone, counter: 1))
    #expect(history.note(stable: context(1), covering: unreachable) == nil)
    var found: [DoublyStableCut] = []
    for round in 2...UInt64(StableCutHistory.capacity + 3) {
      if let cut = history.note(stable: context(round), covering: context(round)) {
        found.append(cut)
      }
    }
    #expect(!found.isEmpty)
    #expect(found.allSatisfy { $0.stable != context(1) })
    #expect(history.waiting.allSatisfy { $0.stable != context(1) })
    #expect(history.waiting.count <= StableCutHistory.capacity)
  }

  /// A document that does not hold the cut's covering context collects nothing.
  @Test func aDocumentLackingTheCoveringContextCollectsNothing() {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    let board = Self.boards[0]
    replica.transact { tx in
      for index in 0..<4 { tx.insert(Self.pool[index], at: index, intoList: "cards", of: board) }
    }
    for _ in 0..<6 { replica.transact { $0.move(from: 3, to: 0, inList: "cards", of: board) } }
    let held = replica.context
    var beyond = held
    beyond.insert(Dot(replica: ReplicaID(rawValue: 2), counter: 1))
    guard let unheld = DoublyStableCut(stable: held, covering: beyond, coveredBy: beyond),
      let cut = DoublyStableCut(stable: held, covering: held, coveredBy: held)
    else {
      Issue.record("the cuts should be doubly stable")
      return
    }
    let cards = replica.document.list(of: "cards", in: board)
    #expect(replica.collectListTombstones(at: unheld) == 0)
    #expect(replica.collectListTombstones(at: cut) > 0)
    #expect(replica.document.list(of: "cards", in: board) == cards)
    #expect(replica.collectListTombstones(at: cut) == 0)
  }
}
