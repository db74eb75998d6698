import Converge
import ConvergeRelayClient
import ConvergeStore
import Testing

/// The relay session collects the owner's list tombstones at a stable cut once a later
/// cut covers the earlier one's reports, never at a single cut.
@MainActor
@Suite struct RelayListCollectionTests {
  private let board = EntityKey(type: "column", id: "todo")

  @Test func aSecondCutCoveringTheFirstCollectsTheOwnersLists() throws {
    let clock = RelayTestClock()
    let owner = try relayOwner(clock)
    var relay = MemoryRelay()
    owner.transact { tx in
      for index in 0..<12 {
        tx.insert(.string("card\(index)"), at: index, intoList: "cards", of: board)
      }
    }
    for _ in 0..<40 { owner.transact { $0.move(from: 11, to: 0, inList: "cards", of: board) } }
    try owner.flush()
    var session = RelaySession(streamSeed: 1)
    relay.connect()
    try exchange(session.open(owner), &session, owner, &relay)
    let before = owner.replica.document
    let cut = RelayStableCut(stable: relay.space.context, covering: relay.space.context)
    _ = try session.receive(cut.encoded(), into: owner)
    // One cut: deletes may be forgotten, but no list collects yet.
    #expect(owner.replica.document == before)
    // The next cut includes the first one's covering context: the first is doubly stable.
    _ = try session.receive(cut.encoded(), into: owner)
    #expect(owner.replica.document != before)
    #expect(owner.replica.document.encoded().count < before.encoded().count)
    #expect(
      owner.replica.document.list(of: "cards", in: board) == before.list(of: "cards", in: board))
    try owner.close()
  }
}
