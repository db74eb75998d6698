import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc

  private let systemConnect = Glibc.connect
  private let systemClose = Glibc.close
  private let systemSend = Glibc.send
  private let streamSocket = Int32(SOCK_STREAM.rawValue)
  private let sendFlags = Int32(MSG_NOSIGNAL)
#elseif canImport(Darwin)
  import Darwin

  private let systemConnect = Darwin.connect
  private let systemClose = Darwin.close
  private let systemSend = Darwin.send
  private let streamSocket = SOCK_STREAM
  private let sendFlags: Int32 = 0
#endif

/// A WebSocket client on a bare TCP socket, for what a real client never does: send an
/// unmasked frame, flood frames without reading, or leave its receive buffer full. It
/// upgrades by hand and reads only when asked. Every socket call blocks, so each runs on
/// a thread of its own, never on the concurrency pool the relay in the process needs.
final class RawWebSocket: Sendable {
  struct Frame: Sendable {
    var opcode: UInt8
    var payload: [UInt8]

    /// The close code of a close frame.
    var closeCode: UInt16? {
      guard opcode == 0x8, payload.count >= 2 else { return nil }
      return UInt16(payload[0]) << 8 | UInt16(payload[1])
    }
  }

  private let descriptor: Int32
  private let isOpen = Mutex(true)
  /// Bytes read past what has been returned; only ever used by one call at a time.
  private nonisolated(unsafe) var unread: [UInt8] = []

  private init(descriptor: Int32, unread: [UInt8]) {
    self.descriptor = descriptor
    self.unread = unread
  }

  deinit { closeDescriptor() }

  private func closeDescriptor() {
    let wasOpen = isOpen.withLock { open in
      defer { open = false }
      return open
    }
    if wasOpen { _ = systemClose(descriptor) }
  }

  /// Connects to the relay on loopback `port` and upgrades `path` with `token`. With
  /// `receiveBuffer`, the socket's kernel receive buffer is set to that size first, so
  /// that a client that does not read holds the relay back early.
  static func connect(
    port: Int, path: String, token: String, receiveBuffer: Int32? = nil
  ) async throws -> RawWebSocket {
    try await blocking {
      let descriptor = socket(AF_INET, streamSocket, 0)
      guard descriptor >= 0 else { throw RelayTestError("socket: errno \(errno)") }
      var timeout = timeval(tv_sec: 30, tv_usec: 0)
      setsockopt(
        descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
      setsockopt(
        descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
      if var size = receiveBuffer {
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
      }
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = in_port_t(UInt16(port).bigEndian)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          systemConnect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
      guard connected == 0 else {
        _ = systemClose(descriptor)
        throw RelayTestError("connect: errno \(errno)")
      }
      let request =
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\n"
        + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        + "Sec-WebSocket-Version: 13\r\nAuthorization: Bearer \(token)\r\n\r\n"
      try write(descriptor, Array(request.utf8))
      var received: [UInt8] = []
      let end = Array("\r\n\r\n".utf8)
      while true {
        if let range = received.firstRange(of: end) {
          let head = String(decoding: received[..<range.lowerBound], as: UTF8.self)
          guard head.hasPrefix("HTTP/1.1 101") else {
            _ = systemClose(descriptor)
            throw RelayTestError("upgrade refused: \(head)")
          }
          return RawWebSocket(
            descriptor: descriptor, unread: Array(received[range.upperBound...]))
        }
        guard let more = try read(descriptor) else {
          _ = systemClose(descriptor)
          throw RelayTestError("closed during the upgrade")
        }
        received += more
      }
    }
  }

  /// Ends the connection at once with a reset, as a vanished device would, unread bytes
  /// and all: the relay's writes to it fail rather than wait.
  func disconnect() {
    var option = linger(l_onoff: 1, l_linger: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    closeDescriptor()
  }

  /// A frame of one `opcode` (binary by default) carrying `payload`, masked (as a client
  /// must) unless told otherwise, and final (the whole message) unless told otherwise.
  static func frame(
    opcode: UInt8 = 0x2, _ payload: [UInt8], masked: Bool = true, final: Bool = true
  ) -> [UInt8] {
    var bytes: [UInt8] = [(final ? 0x80 : 0) | opcode]
    let maskBit: UInt8 = masked ? 0x80 : 0
    switch payload.count {
    case ..<126:
      bytes.append(maskBit | UInt8(payload.count))
    case ..<65_536:
      bytes.append(maskBit | 126)
      bytes += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    default:
      bytes.append(maskBit | 127)
      bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
    }
    guard masked else { return bytes + payload }
    let key: [UInt8] = (0..<4).map { _ in UInt8.random(in: 0 ... .max) }
    return bytes + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
  }

  /// Writes `bytes` as they are.
  func send(_ bytes: [UInt8]) async throws {
    let descriptor = self.descriptor
    try await Self.blocking { try Self.write(descriptor, bytes) }
  }

  /// The relay's next frame, or nil once it closed the connection.
  func nextFrame() async throws -> Frame? {
    try await Self.blocking { try self.readFrame() }
  }

  /// Reads frames until the relay's close frame, and returns it with the frames before
  /// it; nil for the close when the connection ended without one.
  func readUntilClose() async throws -> (frames: [Frame], close: Frame?) {
    var frames: [Frame] = []
    while let frame = try await nextFrame() {
      if frame.opcode == 0x8 { return (frames, frame) }
      frames.append(frame)
    }
    return (frames, nil)
  }

  private func readFrame() throws -> Frame? {
    guard let header = try take(2) else { return nil }
    var length = Int(header[1] & 0x7F)
    if length == 126 {
      guard let extended = try take(2) else { return nil }
      length = Int(extended[0]) << 8 | Int(extended[1])
    } else if length == 127 {
      guard let extended = try take(8) else { return nil }
      length = extended.reduce(0) { $0 << 8 | Int($1) }
    }
    guard let payload = try take(length) else { return nil }
    return Frame(opcode: header[0] & 0x0F, payload: payload)
  }

  /// The next `count` bytes, or nil at the end of the stream.
  private func take(_ count: Int) throws -> [UInt8]? {
    while unread.count < count {
      guard let more = try Self.read(descriptor) else { return nil }
      unread += more
    }
    let taken = Array(unread[..<count])
    unread.removeFirst(count)
    return taken
  }

  private static func write(_ descriptor: Int32, _ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
      let sent = bytes[offset...].withUnsafeBytes {
        systemSend(descriptor, $0.baseAddress, $0.count, sendFlags)
      }
      guard sent > 0 else { throw RelayTestError("send: errno \(errno)") }
      offset += sent
    }
  }

  /// Up to 64 KiB; nil at the end of the stream (or a reset, as the relay may close
  /// with unread bytes behind the close frame).
  private static func read(_ descriptor: Int32) throws -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
    if count > 0 { return Array(buffer[..<count]) }
    if count == 0 || errno == ECONNRESET { return nil }
    throw RelayTestError("recv: errno \(errno)")
  }

  /// Runs `work` on a thread of its own.
  private static func blocking<T: Sendable>(
    _ work: @escaping @Sendable () throws -> T
  ) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
      Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
  }
}
