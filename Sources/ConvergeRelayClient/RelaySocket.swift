/// What an open relay socket delivers, in order.
public enum RelaySocketEvent: Sendable, Equatable {
  /// A binary message from the relay.
  case message([UInt8])
  /// The socket closed, with the relay's close code (`nil`: it dropped without one).
  /// Nothing follows it.
  case closed(code: UInt16?)
}

/// One open WebSocket to a relay space, as a ``RelayClient`` uses it: the small socket
/// protocol that a platform's WebSocket (NIO on Linux and servers, in the `Relay`
/// package) or an in-memory pair in a test implements.
public protocol RelaySocket: Sendable {
  /// Sends one binary message, after every message sent before it.
  ///
  /// - Throws: any error once the socket cannot send any more.
  func send(_ bytes: [UInt8]) async throws
  /// Closes the socket normally; its events then end with ``RelaySocketEvent/closed(code:)``.
  func close() async
}

/// Opens sockets to one relay space (its URL is the connector's own).
public protocol RelaySocketConnector: Sendable {
  /// Opens a socket authorized by `token` (sent as `Authorization: Bearer token`).
  ///
  /// - Returns: the socket and its events: each binary message, then one
  ///   ``RelaySocketEvent/closed(code:)``, after which the stream finishes.
  /// - Throws: any error when the socket cannot be opened (the client retries with
  ///   backoff).
  func connect(token: String) async throws -> (
    socket: any RelaySocket, events: AsyncStream<RelaySocketEvent>
  )
}
