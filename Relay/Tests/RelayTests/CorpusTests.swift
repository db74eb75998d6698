import Converge
import ConvergeRelay
import ConvergeRelayClient
import ConvergeTestSupport
import Foundation
import Testing

/// The fuzz corpus, as is and damaged, sent through a live socket: every connection ends
/// with a typed close or an answer, the relay keeps serving, and nothing reaches the store.
@Suite(.timeLimit(.minutes(2))) struct CorpusTests {
  static let corpus = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/FuzzDecode")

  @Test func theFuzzCorpusThroughTheSocketClosesWithoutACrash() async throws {
    let seed: UInt64 = 0xC0_4B05
    let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path)
      .filter { $0.hasSuffix(".bin") }.sorted()
    #expect(files.count >= 8, "corpus at \(Self.corpus.path)")
    var inputs: [(name: String, bytes: [UInt8])] = []
    var random = SeededGenerator(seed: seed)
    for file in files {
      let bytes = [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(file)))
      inputs.append((file, bytes))
      inputs.append((file + " cut in half", Array(bytes.prefix(bytes.count / 2))))
      for flip in 0..<4 where !bytes.isEmpty {
        var damaged = bytes
        let index = Int(random.next() % UInt64(bytes.count))
        damaged[index] ^= UInt8(truncatingIfNeeded: random.next() | 1)
        inputs.append((file + " flip \(flip) at \(index)", damaged))
      }
    }

    let relay = try await LiveRelay.start { $0.idleTimeout = .seconds(2) }
    // A token that grants no replica: a corpus delta that decodes is refused, not stored.
    let token = try await relay.token(space: "s", replicas: [])
    let expected: Set<RelayCloseReason> = [
      .malformedMessage, .replicaNotGranted, .observedUnknownEvents, .messageTooLarge,
    ]
    for input in inputs {
      let result = try await exchange(
        url: relay.url(space: "s"), token: token, messages: [input.bytes],
        until: { !$0.isEmpty })
      let ended =
        result.closeReason.map { expected.contains($0) } ?? !result.received.isEmpty
      #expect(ended, "\(input.name) (seed \(seed)): \(String(describing: result.close))")
    }
    #expect(try await relay.store.read(space: "s", after: 0).entries.isEmpty)

    // The relay still serves: a granted push is acknowledged once durable.
    let writer = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)])
    let (_, delta) = edit(1, note: "a", title: "A")
    let accepted = try await exchange(
      url: relay.url(space: "s"), token: writer, messages: [delta.encoded()],
      until: { !$0.isEmpty })
    #expect(accepted.acknowledgements.first?.durable.includes(delta.context) == true)
    await relay.stop()
  }
}
