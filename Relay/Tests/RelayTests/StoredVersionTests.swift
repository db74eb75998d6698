import Converge
import ConvergeRelay
import ConvergeRelayClient
import Foundation
import Testing

/// A relay whose store holds a row it cannot decode (here a delta of the previous format
/// version, which this build refuses by name) refuses the space's devices with a typed
/// reason and leaves the row where it is, on either store.
@Suite(.timeLimit(.minutes(1))) struct StoredVersionTests {
  static let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Tests/ConvergeTests/Fixtures")

  @Test(arguments: StoreKind.available) func aVersion1RowIsRefusedAndKept(kind: StoreKind)
    async throws
  {
    let stored = [UInt8](
      try Data(contentsOf: Self.fixtures.appendingPathComponent("document-delta-v1.bin")))
    #expect(throws: ConvergeDecodingError.unsupportedVersion(1)) {
      _ = try DocumentDelta(decoding: stored)
    }
    let relay = try await LiveRelay.start(postgres: kind == .postgres ? StoreKind.postgresURL : nil)
    let space = "v1-\(UInt64.random(in: 0 ... .max))"
    let position = try await relay.store.append(space: space, delta: stored)
    let id = ReplicaID(rawValue: 7)
    let token = try await relay.token(space: space, replicas: [id])
    let (_, delta) = edit(id.rawValue, note: "n", title: "after the upgrade")
    // A handshake and a push alike are refused, and the refusal says why.
    for message in [SyncMessage(context: CausalContext(), delta: nil).encoded(), delta.encoded()] {
      let refused = try await exchange(
        url: relay.url(space: space), token: token, messages: [message])
      #expect(refused.closeReason == .storedDataUnreadable)
      #expect(refused.acknowledgements.isEmpty)
    }
    #expect(RelayCloseReason.storedDataUnreadable.isRetryable)
    // Nothing was deleted, compacted or appended: the row is still there, alone.
    let log = try await relay.store.read(space: space, after: 0)
    #expect(log.snapshot == nil)
    #expect(log.entries.map(\.position) == [position])
    #expect(log.entries.map(\.delta) == [stored])
    await relay.stop()
  }
}
