/// Why the relay closed a socket, as the WebSocket close code it sends.
///
/// A client must tell a refusal it cannot fix by retrying (a token for another space, an
/// expired token, a read token that pushes, a delta carrying events of a replica the token
/// does not grant or claiming events that do not exist) from a limit it can wait out, so every reason has its own code: the standard
/// codes where one fits (1008 policy violation for a malformed message, 1009 for a
/// message too large) and private codes (4000–4999) for the rest.
public enum RelayCloseReason: UInt16, Error, Sendable, CaseIterable, CustomStringConvertible {
  /// A message that is not a valid Converge message (a `ConvergeDecodingError`).
  case malformedMessage = 1008
  /// A message larger than the relay's limit.
  case messageTooLarge = 1009
  /// The relay failed (its store, for instance); retry later.
  case serverError = 1011
  /// No token, or one that does not verify.
  case unauthorized = 4001
  /// A token for another space.
  case wrongSpace = 4002
  /// The token has expired (checked at the upgrade and again while the socket lives).
  case tokenExpired = 4003
  /// A read token that pushed a delta.
  case readOnlyToken = 4004
  /// A delta carrying an event of a replica the token does not grant that the relay does
  /// not hold as it is: a dot of that replica in its context, a register write stamped
  /// with one, an entity or set add, text runs or deletes (see `AuthorshipViolation` in
  /// Converge). Re-sending another replica's events the relay holds is allowed.
  case replicaNotGranted = 4005
  /// More messages per second than the relay allows one connection.
  case rateLimited = 4006
  /// No message for longer than the relay's idle timeout.
  case idleTimeout = 4007
  /// The client read its pushes too slowly and its queue overflowed.
  case slowConsumer = 4008
  /// The space's stored history holds bytes this relay cannot decode (a format version
  /// it does not support, such as version 1, or a damaged row). The relay deletes
  /// nothing; once an operator migrates the store or runs a relay that reads it,
  /// retrying succeeds.
  case storedDataUnreadable = 4009
  /// A delta claiming to have observed events of a replica the token does not grant that
  /// the relay does not hold: a removal of an entity or a set element, or a text delete,
  /// that would hide that replica's later edits (see `AuthorshipViolation/isObservation`).
  case observedUnknownEvents = 4010
  /// The relay retired this device's replica id from the space: it was silent longer than
  /// the relay's horizon, its token's grant expired, or it came back holding less than
  /// the relay recorded it had seen (a restored backup). The others may have forgotten
  /// deletes it never saw, so it cannot sync as it is: it must take a fresh replica id,
  /// fetch the current state and apply its own edits again (`Replica.rebasing`).
  /// ``RelayClient`` does that by itself: it takes a fresh id from the owner's store, asks
  /// the token provider for a token granting it, fetches the current state with a
  /// handshake stating an empty context (reading the ``RelayStableCut`` the relay sends
  /// with it), calls ``DeviceReplica/rejoin(onto:stable:heldBy:as:)`` and reconnects as
  /// the fresh id, reporting `syncing` or `offline` meanwhile, never `refused`.
  case retired = 4011
  /// The relay serves as many sockets as it allows one process, or its sockets' outgoing
  /// queues hold as many bytes as it allows them together; retry later.
  case relayBusy = 4020
  /// The space has as many sockets as the relay allows one space, or more pushes wait
  /// for its next commit than it allows; retry later (the device's handshake sends what
  /// was not acknowledged).
  case spaceBusy = 4021

  /// Whether reconnecting with the same token can succeed.
  public var isRetryable: Bool {
    switch self {
    case .serverError, .rateLimited, .idleTimeout, .slowConsumer, .messageTooLarge,
      .storedDataUnreadable, .relayBusy, .spaceBusy:
      true
    case .malformedMessage, .unauthorized, .wrongSpace, .tokenExpired, .readOnlyToken,
      .replicaNotGranted, .observedUnknownEvents, .retired:
      false
    }
  }

  /// The short reason text sent in the close frame.
  public var description: String {
    switch self {
    case .malformedMessage: "malformed message"
    case .messageTooLarge: "message too large"
    case .serverError: "relay error"
    case .unauthorized: "unauthorized"
    case .wrongSpace: "token for another space"
    case .tokenExpired: "token expired"
    case .readOnlyToken: "read-only token"
    case .replicaNotGranted: "replica not granted"
    case .rateLimited: "rate limited"
    case .idleTimeout: "idle timeout"
    case .slowConsumer: "slow consumer"
    case .storedDataUnreadable: "stored data unreadable"
    case .observedUnknownEvents: "observed events that do not exist"
    case .retired: "retired"
    case .relayBusy: "relay busy"
    case .spaceBusy: "space busy"
    }
  }
}
