import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// A retired device's rejoin: its edits the others lack, re-applied on the current state
/// under a fresh id (``Replica/rebasing(_:onto:as:wallClock:)``).
@Suite struct RebasingTests {
  private static let note = EntityKey(type: "note", id: "n")

  /// One device, two peers that synced everything among themselves, the device's early
  /// edits delivered to them in order (what a relay acknowledged), some of the peers'
  /// edits delivered to the device, in any order.
  private struct Scenario {
    var device: Replica
    var peers: Document
    var fresh: ReplicaID

    init(using random: inout SeededGenerator) {
      var origin = Replica.seeded(using: &random)
      for _ in 0..<Int.random(in: 0...4, using: &random) {
        origin.randomTransaction(using: &random)
      }
      var device = origin.forked(as: .random(using: &random))
      var first = origin.forked(as: .random(using: &random))
      var second = origin.forked(as: .random(using: &random))
      var deviceDeltas: [DocumentDelta] = []
      var peerDeltas: [DocumentDelta] = []
      var acknowledged = 0
      for _ in 0..<Int.random(in: 4...14, using: &random) {
        switch Int.random(in: 0..<3, using: &random) {
        case 0: deviceDeltas.append(device.randomTransaction(using: &random).delta)
        case 1: peerDeltas.append(first.randomTransaction(using: &random).delta)
        default: peerDeltas.append(second.randomTransaction(using: &random).delta)
        }
        if Bool.random(using: &random), let delta = peerDeltas.randomElement(using: &random) {
          device.apply(delta)
        }
        if Int.random(in: 0..<3, using: &random) == 0, acknowledged < deviceDeltas.count {
          first.apply(deviceDeltas[acknowledged])
          acknowledged += 1
        }
      }
      first.merge(second)
      self.device = device
      peers = first.document
      fresh = .random(using: &random)
    }
  }

  /// Without a stable cut (nothing forgotten), the rebase shows what the ordinary merge
  /// of the device's document into the peers' shows, up to the order of concurrent
  /// inserts at one place: no edit of the device is lost, none of the peers' is, and
  /// every conflict is decided as the usual rules decide it.
  @Test func showsWhatTheOrdinaryMergeShows() throws {
    try forEachSeed(count: 400, base: 0x4E_BA5E) { random in
      let scenario = Scenario(using: &random)
      var merged = scenario.peers
      merged.merge(scenario.device.document)
      let rebase = Replica.rebasing(
        scenario.device.document, onto: scenario.peers, stable: CausalContext(),
        as: scenario.fresh, wallClock: .fixed(1))
      #expect(VisibleContent.lines(of: rebase.replica.document) == VisibleContent.lines(of: merged))
      #expect(rebase.replica.id == scenario.fresh)
      #expect(rebase.replica.document.context.includes(scenario.peers.context))
      // The delta is the rebase: the peers applying it hold the same document.
      var peers = scenario.peers
      peers.apply(rebase.delta)
      #expect(peers == rebase.replica.document)
      // Its events are the fresh id's alone.
      #expect(rebase.delta.context.entries.allSatisfy { $0.replica == scenario.fresh })
    }
  }

  /// After the peers forgot every delete they all saw (the device retired), the rebase
  /// shows what the ordinary merge into the unforgotten state would, except that an
  /// entity the peers forgot that the device's edits keep alive comes back whole from
  /// the device's view. Peers that forgot, peers that forget later (before applying the
  /// delta) and a rebase onto the unforgotten state all hold the same document.
  @Test func keepsTheDevicesEditsWhenThePeersForgot() throws {
    try forEachSeed(count: 400, base: 0xF0_4607) { random in
      let scenario = Scenario(using: &random)
      let stable = scenario.peers.context
      var merged = scenario.peers
      merged.merge(scenario.device.document)
      var forgotten = scenario.peers
      forgotten.forgetDeleted(stable: stable)
      let rebase = Replica.rebasing(
        scenario.device.document, onto: forgotten, stable: stable, as: scenario.fresh,
        wallClock: .fixed(1))
      let rebased = rebase.replica.document
      #expect(rebased.keys == merged.keys)
      let expected = VisibleContent.lines(of: merged)
      let device = VisibleContent.lines(of: scenario.device.document, ordered: true)
      let ordered = VisibleContent.lines(of: rebased, ordered: true)
      for (key, line) in VisibleContent.lines(of: rebased) {
        if forgotten.delta(since: CausalContext()).entities[key] == nil,
          scenario.peers.delta(since: CausalContext()).entities[key] != nil
        {
          // Forgotten by the peers, back whole from the device's view.
          #expect(ordered[key] == device[key], "\(key)")
        } else {
          #expect(line == expected[key], "\(key)")
        }
      }
      var peer = forgotten
      peer.apply(rebase.delta)
      #expect(peer == rebased)
      // A peer that had not forgotten yet forgets before it applies the delta.
      var late = scenario.peers
      late.forgetDeleted(stable: stable)
      late.apply(rebase.delta)
      #expect(late == rebased)
      // The relay's state may not have forgotten yet: the rebase onto it is the same.
      let unforgotten = Replica.rebasing(
        scenario.device.document, onto: scenario.peers, stable: stable, as: scenario.fresh,
        wallClock: .fixed(1))
      #expect(unforgotten.replica.document == rebased)
      #expect(unforgotten.delta == rebase.delta)
    }
  }

  /// The hazard the rebase exists for: the peers deleted and forgot a note the device
  /// kept editing offline; the note comes back with the device's edits, whole.
  @Test func anEditToAForgottenNoteBringsItBackWhole() {
    var device = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(10))
    let created = device.transact { tx in
      tx.create(Self.note)
      tx.setValue(.string("Plan"), for: "title", of: Self.note)
      tx.insert(.string("work"), into: "tags", of: Self.note)
      tx.insertText("draft", at: 0, in: "body", of: Self.note)
    }
    var peer = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(20))
    peer.apply(created.delta)
    peer.transact { tx in tx.delete(Self.note) }
    device.transact { tx in tx.insertText(" two", at: 5, in: "body", of: Self.note) }
    var forgotten = peer.document
    #expect(forgotten.forgetDeleted(stable: peer.context) == 1)
    let rebase = Replica.rebasing(
      device.document, onto: forgotten, stable: peer.context, as: ReplicaID(rawValue: 3),
      wallClock: .fixed(30))
    let rebased = rebase.replica.document
    #expect(rebased.text(of: "body", in: Self.note) == "draft two")
    #expect(rebased.value(of: "title", in: Self.note) == .string("Plan"))
    #expect(rebased.elements(of: "tags", in: Self.note) == [.string("work")])
    // The peer, which forgot, holds the same once it applies the delta.
    forgotten.apply(rebase.delta)
    #expect(forgotten == rebased)
  }

  /// A note the peers deleted and forgot that the device did not edit since is gone
  /// after the rebase: the device shows it only because it never saw the delete.
  @Test func aNoteTheDeviceDidNotEditStaysDeleted() {
    var device = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(10))
    let created = device.transact { tx in
      tx.create(Self.note)
      tx.insertText("secret", at: 0, in: "body", of: Self.note)
    }
    var peer = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(20))
    peer.apply(created.delta)
    peer.transact { tx in tx.delete(Self.note) }
    var forgotten = peer.document
    forgotten.forgetDeleted(stable: peer.context)
    let rebase = Replica.rebasing(
      device.document, onto: forgotten, stable: peer.context, as: ReplicaID(rawValue: 3),
      wallClock: .fixed(30))
    #expect(rebase.replica.document.keys.isEmpty)
    #expect(rebase.replica.document.text(of: "body", in: Self.note).isEmpty)
    #expect(rebase.delta.isEmpty)
  }

  /// Text typed offline goes after the character it followed, among the peers' edits;
  /// characters deleted offline go; the peers' concurrent typing stays.
  @Test func textEditsLandWhereTheyWereMade() {
    var device = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(10))
    let created = device.transact { tx in
      tx.create(Self.note)
      tx.insertText("hello world", at: 0, in: "body", of: Self.note)
    }
    var peer = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(20))
    peer.apply(created.delta)
    peer.transact { tx in tx.insertText("big ", at: 6, in: "body", of: Self.note) }
    device.transact { tx in
      tx.deleteText(0..<1, in: "body", of: Self.note)
      tx.insertText("J", at: 0, in: "body", of: Self.note)
      tx.insertText("!", at: 11, in: "body", of: Self.note)
    }
    let rebase = Replica.rebasing(
      device.document, onto: peer.document, stable: peer.context, as: ReplicaID(rawValue: 3),
      wallClock: .fixed(30))
    #expect(rebase.replica.document.text(of: "body", in: Self.note) == "Jello big world!")
  }

  /// An edit that reached the peers another way (through a peer session) is not applied
  /// twice.
  @Test func anEditThePeersHaveIsNotReappliedTwice() {
    var device = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(10))
    let created = device.transact { tx in
      tx.create(Self.note)
      tx.insertText("once", at: 0, in: "body", of: Self.note)
      tx.insert(.string("a"), at: 0, intoList: "cards", of: Self.note)
    }
    var peer = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(20))
    peer.apply(created.delta)
    let rebase = Replica.rebasing(
      device.document, onto: peer.document, stable: peer.context, as: ReplicaID(rawValue: 3),
      wallClock: .fixed(30))
    #expect(rebase.replica.document.text(of: "body", in: Self.note) == "once")
    #expect(rebase.delta.isEmpty)
  }

  /// A node moved offline under another is re-applied with the move's recorded previous
  /// parent; a later move the peers made of the same node wins, as a later write does.
  @Test func aReparentIsReappliedUnlessALaterMoveWins() {
    let (root, other, task) = (
      EntityKey(type: "task", id: "root"), EntityKey(type: "task", id: "other"),
      EntityKey(type: "task", id: "t")
    )
    var device = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(10))
    let created = device.transact { tx in
      for key in [root, other, task] { tx.create(key) }
      tx.setParent(root, of: task, in: "parent")
    }
    var peer = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(20))
    peer.apply(created.delta)
    device.transact { tx in tx.setParent(other, of: task, in: "parent") }
    let rebase = Replica.rebasing(
      device.document, onto: peer.document, stable: peer.context, as: ReplicaID(rawValue: 3),
      wallClock: .fixed(30))
    #expect(rebase.replica.document.forest(of: "parent").parent(of: task) == other)
    var receiving = peer
    receiving.apply(rebase.delta)
    #expect(receiving.document == rebase.replica.document)

    // The peers moved the task back to the root after the device's move: theirs wins.
    var later = Replica(id: ReplicaID(rawValue: 4), wallClock: .fixed(40))
    later.apply(created.delta)
    later.transact { tx in tx.setParent(nil, of: task, in: "parent") }
    let lost = Replica.rebasing(
      device.document, onto: later.document, stable: later.context, as: ReplicaID(rawValue: 5),
      wallClock: .fixed(5))
    #expect(lost.replica.document.forest(of: "parent").parent(of: task) == nil)
    #expect(lost.delta.isEmpty)
  }

  /// The same document, its entities met in another order (the deltas that brought them
  /// arrived in another order, as a delta's entities do in each process's hash order),
  /// rebases to the same bytes: the edits are re-applied in key order, so the fresh id's
  /// dots name the same edits. (Found by `converge simulate --stability --replicas 5
  /// --operations 20000 --seed 1`, whose final state differed from process to process.)
  @Test func theRebaseIssuesItsDotsInKeyOrderWhateverTheTableOrder() throws {
    let (a, z) = (EntityKey(type: "note", id: "a"), EntityKey(type: "note", id: "z"))
    var source = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(10))
    let first = source.transact { tx in
      tx.create(z)
      tx.setValue(.string("zed"), for: "title", of: z)
    }
    let second = source.transact { tx in
      tx.create(a)
      tx.setValue(.string("ay"), for: "title", of: a)
    }
    var inOrder = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(20))
    inOrder.apply(first.delta)
    inOrder.apply(second.delta)
    var reversed = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(20))
    reversed.apply(second.delta)
    reversed.apply(first.delta)
    #expect(inOrder.document == reversed.document)
    #expect(inOrder.document.entities.key(at: 0) != reversed.document.entities.key(at: 0))
    let rebases = [inOrder, reversed].map { local in
      Replica.rebasing(
        local.document, onto: Document(), stable: CausalContext(), as: ReplicaID(rawValue: 3),
        wallClock: .fixed(30))
    }
    #expect(rebases[0].replica.document.encoded() == rebases[1].replica.document.encoded())
    // "a" first: its title is the fresh id's first write after its creation.
    let fresh = ReplicaID(rawValue: 3)
    let created = rebases[0].replica.document
    #expect(created.fieldNames(of: a) == ["title"] && created.fieldNames(of: z) == ["title"])
    #expect(rebases[0].delta.latestCounter(of: fresh) == 4)
    func titleCounter(_ key: EntityKey) -> UInt64? {
      guard case .register(let register)? = created.entities[key]?.fields["title"] else {
        return nil
      }
      return register.stamp?.dot.counter
    }
    #expect(try #require(titleCounter(a)) < #require(titleCounter(z)))
  }
}
