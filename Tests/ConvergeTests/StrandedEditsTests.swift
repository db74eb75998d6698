import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// A retired device's edits that its peers received ahead of an earlier edit of its own
/// that none of them holds (a push lost before the device left): the peers drop what
/// waits for the retired id (``Document/dropPending(of:)``), and the device's rebase
/// re-applies those edits under its fresh id, so that each ends applied once and nothing
/// waits for ever.
@Suite struct StrandedEditsTests {
  private static let note = EntityKey(type: "note", id: "n")

  /// A device and two to four peers: the device's pushes reach each peer or are lost
  /// (each on its own), in a random order; the peers' edits reach the device and each
  /// other now and then; at the end the peers sync everything among themselves, so that
  /// each holds every event of the device that any peer holds.
  private struct Scenario {
    var device: Replica
    var peers: [Replica]
    var pushes: [DocumentDelta] = []

    init(using random: inout SeededGenerator) {
      var origin = Replica.seeded(using: &random)
      for _ in 0..<Int.random(in: 0...3, using: &random) {
        origin.randomTransaction(using: &random)
      }
      var device = origin.forked(as: .random(using: &random))
      var peers = (0..<Int.random(in: 2...4, using: &random)).map { _ in
        origin.forked(as: .random(using: &random))
      }
      // Per peer, the device's pushes on their way to it.
      var inFlight = Array(repeating: [DocumentDelta](), count: peers.count)
      for _ in 0..<Int.random(in: 6...24, using: &random) {
        if Int.random(in: 0..<10, using: &random) < 7 {
          let push = device.randomTransaction(using: &random).delta
          pushes.append(push)
          for peer in peers.indices where Int.random(in: 0..<10, using: &random) < 6 {
            inFlight[peer].append(push)
          }
        } else {
          let peer = Int.random(in: peers.indices, using: &random)
          let delta = peers[peer].randomTransaction(using: &random).delta
          if Bool.random(using: &random) { device.apply(delta) }
          let other = Int.random(in: peers.indices, using: &random)
          if Bool.random(using: &random) { peers[other].apply(delta) }
        }
        // Some pushes arrive, in any order.
        for peer in peers.indices where !inFlight[peer].isEmpty && Bool.random(using: &random) {
          let index = Int.random(in: inFlight[peer].indices, using: &random)
          peers[peer].apply(inFlight[peer].remove(at: index))
        }
      }
      // The device is retired: its pushes still on their way are refused. The peers
      // sync among themselves until each holds what any holds.
      for _ in 0..<2 {
        for a in peers.indices {
          for b in peers.indices where a != b { peers[a].merge(peers[b]) }
        }
      }
      self.device = device
      self.peers = peers
    }
  }

  /// The law: whatever was lost, after the peers drop what waits for the retired id and
  /// apply the rebase (before or after dropping), every replica holds the same document,
  /// nothing waits, and it shows what the ordinary merge of the device's whole document
  /// into the peers' shows: every edit of the device exactly once. An old push a peer
  /// held that arrives again afterwards waits again and is dropped again, changing
  /// nothing.
  @Test func everyStrandedEditEndsAppliedOnce() throws {
    var stranded = 0
    try forEachSeed(count: 300, base: 0x57_4A4D) { random in
      var scenario = Scenario(using: &random)
      let retired: Set<ReplicaID> = [scenario.device.id]
      if scenario.peers.contains(where: \.document.hasPendingChanges) { stranded += 1 }
      var expected = scenario.peers[0].document
      expected.merge(scenario.device.document)
      let fresh = ReplicaID.random(using: &random)
      let rebase = Replica.rebasing(
        scenario.device.document, onto: scenario.peers[0].document, stable: CausalContext(),
        retired: retired, as: fresh, wallClock: .fixed(1))
      let rebased = rebase.replica.document
      #expect(!rebased.hasPendingChanges)
      #expect(VisibleContent.lines(of: rebased) == VisibleContent.lines(of: expected))
      #expect(rebase.delta.context.entries.allSatisfy { $0.replica == fresh })
      // One peer applies the delta before it drops, the others after.
      let early = Int.random(in: scenario.peers.indices, using: &random)
      for index in scenario.peers.indices {
        if index == early {
          scenario.peers[index].apply(rebase.delta)
          scenario.peers[index].dropPending(of: retired)
        } else {
          scenario.peers[index].dropPending(of: retired)
          scenario.peers[index].apply(rebase.delta)
        }
        // Only a push the peer holds can come again (through a peer that had not dropped
        // yet): the retired device's own messages are refused.
        let held = scenario.pushes.filter {
          scenario.peers[index].context.includes($0.context)
        }
        if let late = held.randomElement(using: &random) {
          scenario.peers[index].apply(late)
          scenario.peers[index].dropPending(of: retired)
        }
        #expect(!scenario.peers[index].document.hasPendingChanges)
        #expect(scenario.peers[index].document == rebased, "peer \(index)")
      }
    }
    // The scenario does strand edits (most seeds).
    #expect(stranded > 30, "\(stranded) of 300 seeds stranded an edit")
  }

  /// The case of the simulator's `--stability` runs: the push of "b" is lost, "c" (typed
  /// after it) arrives and waits on every peer. Without the rule "c" waited for ever and
  /// the rebase re-applied "b" alone; with it, "abc" on every replica, nothing waiting.
  @Test func aLaterCharacterDeliveredAheadOfALostOneIsNotLost() {
    var device = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(10))
    var peer = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(20))
    let created = device.transact { tx in
      tx.create(Self.note)
      tx.insertText("a", at: 0, in: "body", of: Self.note)
    }
    peer.apply(created.delta)
    _ = device.transact { tx in tx.insertText("b", at: 1, in: "body", of: Self.note) }
    let third = device.transact { tx in tx.insertText("c", at: 2, in: "body", of: Self.note) }
    peer.apply(third.delta)
    #expect(peer.document.hasPendingChanges)
    #expect(peer.document.text(of: "body", in: Self.note) == "a")
    let retired: Set<ReplicaID> = [device.id]
    #expect(peer.dropPending(of: retired) == 1)
    #expect(!peer.document.hasPendingChanges)
    // The dropped event stays known: a sync does not send it again.
    #expect(peer.context.contains(Dot(replica: device.id, counter: 4)))
    let rebase = Replica.rebasing(
      device.document, onto: peer.document, stable: CausalContext(), retired: retired,
      as: ReplicaID(rawValue: 3), wallClock: .fixed(30))
    #expect(rebase.replica.document.text(of: "body", in: Self.note) == "abc")
    peer.apply(rebase.delta)
    #expect(peer.document == rebase.replica.document)
    // The old push arriving again waits again, and is dropped again.
    peer.apply(third.delta)
    #expect(peer.document.hasPendingChanges)
    peer.dropPending(of: retired)
    #expect(peer.document == rebase.replica.document)
    #expect(peer.document.text(of: "body", in: Self.note) == "abc")
  }

  /// A list item inserted after one whose push was lost: its slot waits; the rebase puts
  /// the item back under the fresh id.
  @Test func aListItemDeliveredAheadOfALostOneIsNotLost() {
    var device = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(10))
    var peer = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(20))
    let created = device.transact { tx in
      tx.create(Self.note)
      tx.insert(.string("A"), at: 0, intoList: "cards", of: Self.note)
    }
    peer.apply(created.delta)
    _ = device.transact { tx in tx.insert(.string("B"), at: 1, intoList: "cards", of: Self.note) }
    let third = device.transact { tx in
      tx.insert(.string("C"), at: 2, intoList: "cards", of: Self.note)
    }
    peer.apply(third.delta)
    #expect(peer.document.hasPendingChanges)
    let retired: Set<ReplicaID> = [device.id]
    peer.dropPending(of: retired)
    #expect(!peer.document.hasPendingChanges)
    let rebase = Replica.rebasing(
      device.document, onto: peer.document, stable: CausalContext(), retired: retired,
      as: ReplicaID(rawValue: 3), wallClock: .fixed(30))
    #expect(
      rebase.replica.document.list(of: "cards", in: Self.note) == [
        .string("A"), .string("B"), .string("C"),
      ])
    peer.apply(rebase.delta)
    #expect(peer.document == rebase.replica.document)
    #expect(!peer.document.hasPendingChanges)
  }
}
