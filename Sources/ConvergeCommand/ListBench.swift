import Converge
import ConvergeTestSupport
import Foundation

/// `converge bench --lists [--list-items N] [--list-moves N] [--json]`: a movable list of
/// 1,000 cards in one replica (issue #47's targets): the bytes of one move's delta, the
/// time of a move made as its own transaction, the state after 10,000 moves against the
/// 1,000 cards freshly inserted, and two devices merging each other's 1,000 concurrent
/// moves. `--list-items` and `--list-moves` change the 1,000 and the 10,000.
enum ListBench {
  static let items = 1_000
  static let moves = 10_000
  static let concurrentMoves = 1_000
  /// Moves between two stable cuts on the collecting device.
  static let cutEvery = 1_000
  static let column = EntityKey(type: "column", id: "todo")

  static func run(items: Int, moves: Int, json: Bool) -> Int32 {
    let clock = ContinuousClock()
    var random = SeededGenerator(seed: 0x4C15_7BE7)
    var fresh = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_700_000_000_000))
    fresh.transact { tx in
      for index in 0..<items {
        tx.insert(.string(card(index)), at: index, intoList: "cards", of: column)
      }
    }
    let freshBytes = fresh.document.encoded().count

    // 10,000 moves, each its own transaction, each delta encoded as a live push would.
    var moved = fresh
    var moveBytes: [Int] = []
    moveBytes.reserveCapacity(moves)
    let plan = (0..<moves).map { _ in
      (Int.random(in: 0..<items, using: &random), Int.random(in: 0..<items, using: &random))
    }
    let start = clock.now
    var moveDeltas: [DocumentDelta] = []
    moveDeltas.reserveCapacity(moves)
    for (from, to) in plan {
      let commit = moved.transact { $0.move(from: from, to: to, inList: "cards", of: column) }
      moveBytes.append(commit.delta.encoded().count)
      moveDeltas.append(commit.delta)
    }
    let moveMicroseconds = seconds(clock.now - start) * 1e6 / Double(moves)
    // The same moves as the frames of one session stream (a live push to a peer).
    var stream = SessionStream(streamID: 0x4C15)
    let frameBytes = moveDeltas.map { stream.encode($0).count }.sorted()
    // The same moves without encoding: the move alone.
    var unencoded = fresh
    let rawStart = clock.now
    for (from, to) in plan {
      unencoded.transact { $0.move(from: from, to: to, inList: "cards", of: column) }
    }
    let rawMoveMicroseconds = seconds(clock.now - rawStart) * 1e6 / Double(moves)
    let movedBytes = moved.document.encoded().count
    let list = moved.document.list(of: "cards", in: column)
    let intact = list.count == items && Set(list).count == items
    // The same moves on a device that collects as an app does: a stable cut every
    // `cutEvery` moves (what a relay's rounds of reports give; with one device, its
    // context is the cut and covers its report), noted in a `StableCutHistory`, the
    // document collecting at each cut that becomes doubly stable, and two more cuts
    // after the last move.
    var device = fresh
    var history = StableCutHistory()
    var collectMilliseconds = 0.0
    var collectedByDevice = 0
    func takeCut(_ device: inout Replica) {
      let context = device.context
      guard let cut = history.note(stable: context, covering: context) else { return }
      let collectStart = clock.now
      collectedByDevice += device.collectListTombstones(at: cut)
      collectMilliseconds += seconds(clock.now - collectStart) * 1e3
    }
    for (index, (from, to)) in plan.enumerated() {
      device.transact { $0.move(from: from, to: to, inList: "cards", of: column) }
      if (index + 1) % cutEvery == 0 { takeCut(&device) }
    }
    takeCut(&device)
    takeCut(&device)
    let deviceBytes = device.document.encoded().count
    let deviceIntact = device.document.list(of: "cards", in: column) == list
    // Collected once, at the end (the same cut twice), through the document.
    var once = moved
    let onceCut = DoublyStableCut(
      stable: moved.context, covering: moved.context, coveredBy: moved.context)
    let collectedOnce = onceCut.map { once.collectListTombstones(at: $0) } ?? 0
    let onceBytes = once.document.encoded().count
    // Tombstone collection's ceiling: with one device, its whole context is a doubly
    // stable cut, so the slots inside blocks of dead slots are the collectable ones.
    let movedList = moved.document.movableList(of: "cards", in: column) ?? MovableList()
    let collectable = movedList.collectableSlots(stable: moved.document.context)
    let slotBytes = movedList.slotBytes(excluding: Set(collectable))
    let projectedBytes = movedBytes - (slotBytes.all - slotBytes.kept)
    let neighbours = movedList.runsNamingNeighbours()
    // What the collection does: the collectable slots a slot outside the cut names stay
    // (none with one device), the kept slots of the cut are renamed.
    let collection = try? movedList.collection(stable: moved.document.context).get()
    // Collected for real: the collectable slots, the kept ones renamed (the rest of the
    // document unchanged, so its state is the moved state less the bytes the slots lost).
    var collectedList = movedList
    let dropped = collectedList.collectTombstones(stable: moved.document.context)
    let collectedSlotBytes = collectedList.slotBytes(excluding: []).all
    let collectedBytes = movedBytes - (slotBytes.all - collectedSlotBytes)
    let collectedIntact = collectedList.values == movedList.values

    // Two devices move 1,000 cards each, concurrently, then merge (drawn from their own
    // generator, so that the same merge follows any number of moves above).
    random = SeededGenerator(seed: 0x4C15_7BE8)
    var phone = fresh.forked(as: ReplicaID(rawValue: 2))
    var laptop = fresh.forked(as: ReplicaID(rawValue: 3))
    let base = fresh.document.context
    for _ in 0..<concurrentMoves {
      let (a, b) = (
        Int.random(in: 0..<items, using: &random), Int.random(in: 0..<items, using: &random)
      )
      phone.transact { $0.move(from: a, to: b, inList: "cards", of: column) }
      let (c, d) = (
        Int.random(in: 0..<items, using: &random), Int.random(in: 0..<items, using: &random)
      )
      laptop.transact { $0.move(from: c, to: d, inList: "cards", of: column) }
    }
    let fromPhone = phone.delta(since: base)
    let fromLaptop = laptop.delta(since: base)
    var mergeMilliseconds: [Double] = []
    var converged = true
    for _ in 0..<5 {
      var (a, b) = (phone, laptop)
      let mergeStart = clock.now
      a.apply(fromLaptop)
      b.apply(fromPhone)
      mergeMilliseconds.append(seconds(clock.now - mergeStart) * 1e3 / 2)
      let merged = a.document.list(of: "cards", in: column)
      converged =
        converged && a.document == b.document && merged.count == items
        && Set(merged).count == items
    }

    let sortedBytes = moveBytes.sorted()
    // A state's bytes against the fresh state's.
    func ratio(_ bytes: Int) -> String { fixed(Double(bytes) / Double(freshBytes)) + " ×" }
    let rows: [(key: String, label: String, value: String)] = [
      ("items", "cards in the list", "\(items)"),
      ("moves", "moves", "\(moves)"),
      ("move_bytes_median", "a move's delta, encoded (median)", "\(sortedBytes[moves / 2]) B"),
      ("move_bytes_max", "a move's delta, encoded (largest)", "\(sortedBytes[moves - 1]) B"),
      (
        "move_frame_bytes_median", "a move as a session frame (median)",
        "\(frameBytes[moves / 2]) B"
      ),
      ("move_frame_bytes_max", "a move as a session frame (largest)", "\(frameBytes[moves - 1]) B"),
      ("move_us", "a move (transaction), encoded", fixed(moveMicroseconds) + " µs"),
      ("move_raw_us", "a move (transaction)", fixed(rawMoveMicroseconds) + " µs"),
      ("fresh_state_bytes", "state, the cards inserted", "\(freshBytes) B"),
      ("uncollected_state_bytes", "state after the moves, uncollected", "\(movedBytes) B"),
      ("uncollected_state_ratio", "uncollected after moves / fresh", ratio(movedBytes)),
      ("moved_intact", "moved: every card, none twice", "\(intact)"),
      ("cut_every", "device: a stable cut every", "\(cutEvery) moves"),
      ("device_collected_slots", "device: slots collected", "\(collectedByDevice)"),
      ("device_collect_ms", "device: time collecting, in all", fixed(collectMilliseconds) + " ms"),
      ("moved_state_bytes", "device: state after the moves", "\(deviceBytes) B"),
      ("moved_state_ratio", "device: after moves / fresh", ratio(deviceBytes)),
      ("device_intact", "device: the same cards in order", "\(deviceIntact)"),
      ("once_collected_slots", "collected once at the end: slots", "\(collectedOnce)"),
      ("once_state_bytes", "collected once at the end: state", "\(onceBytes) B"),
      ("once_state_ratio", "collected once / fresh", ratio(onceBytes)),
      ("moved_slot_bytes", "moved: the list's slots", "\(slotBytes.all) B"),
      ("moved_slot_delete_bytes", "moved: the slots' deletes", "\(slotBytes.deletes) B"),
      ("slot_runs", "moved: the slots' runs", "\(neighbours.runs)"),
      ("runs_left_neighbour", "runs whose origin is the run before", "\(neighbours.left)"),
      ("runs_right_neighbour", "runs whose right origin is the next", "\(neighbours.right)"),
      ("collectable_slots", "collectable slots (dead blocks)", "\(collectable.count)"),
      ("ceiling_slot_bytes", "the slots less the collectable", "\(slotBytes.kept) B"),
      ("ceiling_state_ratio", "less the collectable / fresh", ratio(projectedBytes)),
      ("collected_slots", "collected: slots dropped", "\(dropped)"),
      ("collected_slot_bytes", "collected: the list's slots", "\(collectedSlotBytes) B"),
      ("collected_state_bytes", "collected: state", "\(collectedBytes) B"),
      ("collected_state_ratio", "collected: state / fresh", ratio(collectedBytes)),
      ("collected_intact", "collected: the same items in order", "\(collectedIntact)"),
      ("collection_refused", "collected: the cut refused", "\(collection == nil)"),
      (
        "keeping_origins", "kept: slots keeping their origins",
        "\(collection?.keepingOrigins ?? 0)"
      ),
      ("rewritten_slots", "kept: slots renamed", "\(collection?.rewritten ?? 0)"),
      (
        "merge_concurrent_ms", "merge 1,000 concurrent moves, per side",
        fixed(median(mergeMilliseconds)) + " ms"
      ),
      ("merge_converged", "merged: equal, every card, none twice", "\(converged)"),
    ]
    FileHandleOutput.printRows(rows, json: json)
    return intact && converged && collectedIntact && deviceIntact ? 0 : 1
  }

  static func card(_ index: Int) -> String {
    "card" + String(repeating: "0", count: Swift.max(0, 4 - String(index).count)) + String(index)
  }

  static func seconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) + Double(attoseconds) * 1e-18
  }

  static func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
  }

  static func fixed(_ value: Double) -> String { String(format: "%.2f", value) }
}
