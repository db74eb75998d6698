import ConvergeTestSupport
import Testing

@testable import Converge

/// Collecting list tombstones where devices are retired and rejoin: a retired device's
/// stranded slot deletes, given up by ``Document/dropPending(of:)``, and its rebase onto
/// a collected state.
@Suite struct ListCollectionRetirementTests {
  private static let board = EntityKey(type: "column", id: "todo")
  private static let cards = (0..<4).map { FieldValue.string("card\($0)") }

  /// Whether a list field of `document` waits for a missing event, read from the list
  /// itself rather than from the document's index of waiting fields.
  private static func listWaits(_ document: Document) -> Bool {
    document.entities.values.contains { entity in
      entity.fields.values.contains {
        guard case .list(let list) = $0 else { return false }
        return list.hasPending
      }
    }
  }

  /// The smallest case the simulator's stability runs reduced to (seeds 4 and 8 of
  /// `converge simulate --stability --workload boards --replicas 4 --operations 5000
  /// --forget 0.2 --collect-lists`): a retired device moved a card twice, its first
  /// move was lost, so its second move's delete of the first move's slot waited on its
  /// peer, which gave it up when the device was retired. Collecting then rebuilt the
  /// slots with that delete, which waited again, for ever, without the document knowing
  /// (its index of waiting fields was not told). Collection leaves given-up deletes out.
  @Test func aGivenUpDeleteOfARetiredSlotDoesNotWaitAgainOnceCollected() throws {
    var peer = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    peer.transact { tx in
      for (index, card) in Self.cards.enumerated() {
        tx.insert(card, at: index, intoList: "cards", of: Self.board)
      }
    }
    var retired = peer.forked(as: ReplicaID(rawValue: 9))
    // card0 to the end (lost), then back to the front: its delete names the lost slot.
    _ = retired.transact { $0.move(from: 0, to: 4, inList: "cards", of: Self.board) }
    let second = retired.transact { $0.move(from: 3, to: 0, inList: "cards", of: Self.board) }
    peer.apply(second.delta)
    #expect(peer.document.hasPendingChanges)
    #expect(peer.dropPending(of: [retired.id]) > 0)
    #expect(!peer.document.hasPendingChanges)
    // The last three cards moved to the front, one by one: their first slots are one
    // dead block, whose second and third no kept slot names.
    for from in 1...3 {
      peer.transact { $0.move(from: from, to: 0, inList: "cards", of: Self.board) }
    }
    let shown = peer.document.list(of: "cards", in: Self.board)
    let context = peer.context
    let cut = try #require(DoublyStableCut(stable: context, covering: context, coveredBy: context))
    // The two slots, and the given-up delete of the lost slot.
    #expect(peer.collectListTombstones(at: cut) == 3)
    #expect(peer.document.list(of: "cards", in: Self.board) == shown)
    #expect(!Self.listWaits(peer.document))
    #expect(!peer.document.hasPendingChanges)
    let decoded = try Document(decoding: peer.document.encoded())
    #expect(decoded == peer.document)
    #expect(!Self.listWaits(decoded))
    // Collecting again drops nothing more, and the retired device's second move again
    // changes nothing.
    #expect(peer.collectListTombstones(at: cut) == 0)
    let before = peer.document
    peer.apply(second.delta)
    #expect(peer.document == before)
    // The device rejoins on the collected state under a fresh id.
    let rebase = Replica.rebasing(
      retired.document, onto: peer.document, stable: context, retired: [retired.id],
      as: ReplicaID(rawValue: 10), wallClock: .fixed(2_000))
    peer.apply(rebase.delta)
    #expect(
      peer.document.list(of: "cards", in: Self.board)
        == rebase.replica.document.list(
          of: "cards", in: Self.board))
    #expect(!peer.document.hasPendingChanges && !Self.listWaits(peer.document))
  }
}
