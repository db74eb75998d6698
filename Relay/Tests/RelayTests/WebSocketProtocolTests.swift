import Converge
import ConvergeRelay
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
}
