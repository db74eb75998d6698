import Converge
import ConvergeRelay
import ConvergeRelayClient
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import Testing

/// Frames RFC 6455 says end the connection with a protocol code: the relay closes with
/// that code, not as a normal closure.
@Suite(.timeLimit(.minutes(1))) struct WebSocketProtocolTests {
  /// Opens a socket, writes `frames` as they are (the client masks them), and returns the
  /// close code the relay sent.
  func closeCode(
    of frames: [WebSocketFrame], relay: LiveRelay, token: String
  ) async throws -> WebSocketErrorCode? {
    var headers = HTTPFields()
    headers[.authorization] = "Bearer \(token)"
    var logger = Logger(label: "relay-test-client")
    logger.logLevel = .error
    let close = try await WebSocketClient.connect(
      url: relay.url(space: "s"),
      configuration: .init(maxFrameSize: 1 << 22, additionalHeaders: headers), logger: logger
    ) { inbound, outbound, _ in
      for frame in frames { try await outbound.write(.custom(frame)) }
      for try await _ in inbound.messages(maxSize: 1 << 22) {}
    }
    return close?.closeCode
  }

  @Test func aContinuationFrameWithNoMessageStartedClosesWith1002() async throws {
    let relay = try await LiveRelay.start()
    let token = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)])
    let stray = WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: [1, 2]))
    #expect(try await closeCode(of: [stray], relay: relay, token: token) == .protocolError)
    await relay.stop()
  }

  @Test func aMessageOverTheLimitInFragmentsUnderTheFrameLimitClosesWith1009() async throws {
    let relay = try await LiveRelay.start { $0.maxMessageSize = 4096 }
    let token = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)])
    let piece = ByteBuffer(bytes: [UInt8](repeating: 0x43, count: 3000))
    let frames = [
      WebSocketFrame(fin: false, opcode: .binary, data: piece),
      WebSocketFrame(fin: false, opcode: .continuation, data: piece),
      WebSocketFrame(fin: true, opcode: .continuation, data: piece),
    ]
    #expect(try await closeCode(of: frames, relay: relay, token: token) == .messageTooLarge)
    await relay.stop()
  }

  /// RFC 6455 §5.1: a server must close the connection on an unmasked client frame. A
  /// masked push on the same socket is acknowledged first, so the raw client is known
  /// to speak the protocol; the unmasked one is closed with 1002 and not committed.
  @Test func anUnmaskedFrameClosesWith1002AndCommitsNothing() async throws {
    let relay = try await LiveRelay.start()
    let token = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)])
    let socket = try await RawWebSocket.connect(
      port: relay.port, path: "/v1/spaces/s/sync", token: token)
    var replica = Replica(id: ReplicaID(rawValue: 1))
    let first = replica.transact { tx in tx.create(EntityKey(type: "note", id: "masked")) }
    try await socket.send(RawWebSocket.frame(first.delta.encoded()))
    let acknowledgement = try #require(try await socket.nextFrame())
    #expect(acknowledgement.opcode == 0x2)
    let before = try await relay.store.read(space: "s", after: 0)
    #expect(before.entries.count == 1)

    let second = replica.transact { tx in tx.create(EntityKey(type: "note", id: "unmasked")) }
    try await socket.send(RawWebSocket.frame(second.delta.encoded(), masked: false))
    let (frames, close) = try await socket.readUntilClose()
    #expect(frames.isEmpty)
    #expect(close?.closeCode == 1002)
    #expect(try await relay.store.read(space: "s", after: 0) == before)
    await relay.stop()
  }

  /// Over the rate limit inside a fragmented message, where the relay cannot be handed a
  /// marker message (the library would take a new message there as a protocol error),
  /// the socket is closed with the rate limit's code all the same.
  @Test func aFloodOfFragmentsClosesWithTheRateLimitsCode() async throws {
    let relay = try await LiveRelay.start { $0.messagesPerSecond = 3 }
    let token = try await relay.token(space: "s", replicas: [ReplicaID(rawValue: 1)])
    let socket = try await RawWebSocket.connect(
      port: relay.port, path: "/v1/spaces/s/sync", token: token)
    var frames = RawWebSocket.frame([0x43], final: false)
    for _ in 0..<20 { frames += RawWebSocket.frame(opcode: 0x0, [0x43], final: false) }
    try await socket.send(frames)
    let (_, close) = try await socket.readUntilClose()
    #expect(close?.closeCode == RelayCloseReason.rateLimited.rawValue)
    await relay.stop()
  }
}
