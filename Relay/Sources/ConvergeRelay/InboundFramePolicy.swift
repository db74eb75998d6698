import ConvergeRelayClient
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// What the relay checks of every frame a client sends, as the frame comes off the
/// socket, before the WebSocket library or the relay sees it:
///
/// - a client frame must be masked (RFC 6455 §5.1); an unmasked one fails the connection:
///   the policy writes a close frame with 1002 (protocol error) and closes the socket.
///   The library (swift-websocket 1.6.2) drops the mask when it converts a frame and has
///   no setting to require one, so the check sits in the channel pipeline, right after
///   NIO's frame decoder, where `maskKey` is still known.
/// - at most `messagesPerSecond` frames a second (a token bucket, bursts of as many),
///   counted when they are read off the socket rather than when the relay gets to them:
///   a flood that the relay answers slower than the limit is cut off (4006) instead of
///   keeping it busy. Every frame counts, pings and fragments included. The first frame
///   over the limit is replaced by ``rateLimitedMarker``, a text message no client can
///   guess, on which the relay closes the socket as it closes for any other reason (its
///   queued answers, then the close frame, then the client's close reply); inside a
///   fragmented message, where the library would take a new message as a protocol error,
///   the policy closes the socket itself with 4006.
///
/// Either way nothing after the offending frame reaches the relay: the policy drops every
/// frame but the client's close frame, which the library needs to end the close
/// handshake.
///
/// "Read off the socket" is as NIO reads: it stops reading while the library's buffer
/// of frames the relay has not taken is full, so a client that sends only as fast as the
/// relay answers is read at the relay's pace; a client that sends faster has many frames
/// in each read (up to 64 KiB of them), all counted at once.
final class InboundFramePolicy: ChannelInboundHandler, RemovableChannelHandler {
  typealias InboundIn = WebSocketFrame
  typealias InboundOut = WebSocketFrame
  typealias OutboundOut = WebSocketFrame

  /// The text message that stands for the first frame over the rate limit; random per
  /// process, so that a client cannot send it (clients send binary messages only).
  static let rateLimitedMarker =
    "converge-relay rate limited \(UInt64.random(in: 0 ... .max)) \(UInt64.random(in: 0 ... .max))"

  private var limiter: RateLimiter
  /// Whether the frames the relay has been given end inside a fragmented message.
  private var midMessage = false
  private var state = State.open

  private enum State {
    case open
    /// Over the rate limit: the relay closes the socket; only close frames pass.
    case limited
    /// Failed: the policy closes the socket; nothing passes.
    case failed
  }

  init(messagesPerSecond: Int) {
    limiter = RateLimiter(perSecond: messagesPerSecond)
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let frame = unwrapInboundIn(data)
    switch state {
    case .failed:
      return
    case .limited:
      if frame.maskKey == nil {
        fail(context, code: .protocolError, reason: "unmasked client frame")
      } else if frame.opcode == .connectionClose {
        context.fireChannelRead(data)
      }
    case .open:
      if frame.maskKey == nil {
        fail(context, code: .protocolError, reason: "unmasked client frame")
      } else if !limiter.allow() {
        let reason = RelayCloseReason.rateLimited
        if midMessage {
          fail(
            context, code: WebSocketErrorCode(codeNumber: Int(reason.rawValue)),
            reason: reason.description)
        } else {
          state = .limited
          var marker = context.channel.allocator.buffer(capacity: 64)
          marker.writeString(Self.rateLimitedMarker)
          context.fireChannelRead(
            wrapInboundOut(WebSocketFrame(fin: true, opcode: .text, data: marker)))
        }
      } else {
        if frame.opcode == .binary || frame.opcode == .text || frame.opcode == .continuation {
          midMessage = !frame.fin
        }
        context.fireChannelRead(data)
      }
    }
  }

  /// Fails the connection: a close frame with `code`, then the socket is closed.
  private func fail(_ context: ChannelHandlerContext, code: WebSocketErrorCode, reason: String) {
    state = .failed
    var payload = context.channel.allocator.buffer(capacity: 2 + reason.utf8.count)
    payload.write(webSocketErrorCode: code)
    payload.writeString(reason)
    let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)
    let loopBound = context.loopBound
    context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in
      loopBound.value.close(promise: nil)
    }
  }
}

/// Hummingbird's HTTP/1 channel with a WebSocket upgrade, with an ``InboundFramePolicy``
/// in every upgraded socket's pipeline.
///
/// The policy is added when the upgrade completes: NIO's upgrade handler fulfils its
/// result (the callback below runs then, on the channel's event loop) before it replays
/// the bytes it buffered during the upgrade, so no frame reaches the library unchecked.
struct PolicedWebSocketChannel: ServerChildChannel {
  typealias Value = HTTP1WebSocketUpgradeChannel.Value
  typealias UpgradeHandler = NIOTypedHTTPServerUpgradeHandler<
    HTTP1WebSocketUpgradeChannel.UpgradeResult
  >

  let upgrading: HTTP1WebSocketUpgradeChannel
  let messagesPerSecond: Int

  func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
    let messagesPerSecond = self.messagesPerSecond
    return upgrading.setup(channel: channel, logger: logger).flatMapThrowing { value in
      let upgrade = try channel.pipeline.syncOperations.handler(type: UpgradeHandler.self)
      upgrade.upgradeResultFuture.whenSuccess { result in
        guard case .websocket = result else { return }
        do {
          let operations = channel.pipeline.syncOperations
          let decoder = try operations.handler(
            type: ByteToMessageHandler<WebSocketFrameDecoder>.self)
          try operations.addHandler(
            InboundFramePolicy(messagesPerSecond: messagesPerSecond), position: .after(decoder))
        } catch {
          // Not the pipeline NIO's upgrader builds: serve no socket unchecked.
          channel.close(promise: nil)
        }
      }
      return value
    }
  }

  func handle(value: Value, logger: Logger) async {
    await upgrading.handle(value: value, logger: logger)
  }
}
