#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The relay's address and limits.
///
/// Every limit that bounds memory or work is here, with its default. What a relay holds:
/// per space it serves, a replica (the space's state) while at least one socket or
/// request uses it, dropped after the last one leaves; per socket, its outgoing queue,
/// at most ``queueLimit`` messages and ``queueByteLimit`` bytes (a client that reads too
/// slowly is closed with `slowConsumer`, 4008), and all sockets' queues together at most
/// ``processQueueByteLimit`` bytes (`relayBusy`, 4020, beyond); per space, at most
/// ``pendingDeltasPerSpace`` deltas waiting for the next group commit. Beyond
/// ``maxConnections`` sockets in the process or ``maxSocketsPerSpace`` in one space, new
/// sockets are refused with a retryable close code (`relayBusy`, `spaceBusy`) that
/// clients wait out with backoff.
///
/// Deleted data: the relay records what each device of a space has seen and sends every
/// device the space's stable cut; a device silent for longer than ``retireAfter``, or
/// whose grant has ended, is retired (it no longer holds the cut back, and is refused
/// with `retired`, 4011, if it comes back).
public struct RelayConfiguration: Sendable {
  /// The interface to bind; loopback unless the relay is meant to be reachable.
  public var host = "127.0.0.1"
  /// The port to bind; 0 picks a free one (see `RelayServer`'s `onRunning`).
  public var port = 7780
  /// The largest message a client may send, in bytes (close code 1009 beyond it).
  public var maxMessageSize = 1 << 20
  /// Frames a connection may send per second, sustained and as a burst (4006 beyond),
  /// counted as they are read off the socket, not as the relay gets to them (see
  /// `InboundFramePolicy`): pings and fragments count too.
  public var messagesPerSecond = 2_000
  /// How long a socket may stay silent before the relay closes it. Checked by one
  /// timer for the whole process, which sleeps until the earliest socket's deadline.
  public var idleTimeout: Duration = .seconds(300)
  /// How often the WebSocket layer pings every socket; zero, the default, never: a ping
  /// is a timer per socket (10,000 idle sockets pinged every 30 s, the library's default,
  /// kept the relay at about 3% of a core), and a dead peer is closed by ``idleTimeout``.
  /// Set it behind proxies that drop connections silent for less than that.
  public var pingInterval: Duration = .zero
  /// Log entries between two snapshots of a space.
  public var compactionInterval: UInt64 = 1_000
  /// How often the relay reads the store, for each space with open sockets, for deltas
  /// that other relay processes sharing a SQLite file appended, and pushes them. Zero,
  /// the default, never polls: one process alone learns of every append itself, so an
  /// idle space costs no CPU. Set it only when several processes share one SQLite file.
  public var storePollInterval: Duration = .zero
  /// The same for a store that reports appends as they commit (PostgreSQL): only a
  /// safety net for a report lost with the store's connection. Zero never polls.
  public var notifiedStorePollInterval: Duration = .seconds(5)
  /// Messages waiting for one socket before it counts as a slow consumer.
  public var queueLimit = 8_192
  /// Bytes waiting for one socket (the message being written included) before it counts
  /// as a slow consumer; an empty queue takes one message of any size, so a handshake
  /// answer larger than this still goes out.
  public var queueByteLimit = 8 << 20
  /// Bytes waiting in all sockets' outgoing queues together (each within
  /// ``queueByteLimit``), the messages being written included: a message that would pass
  /// it closes its socket with `relayBusy` (4020), whichever socket it is for, and the
  /// device retries after backing off. Without it, `maxConnections` slow readers could
  /// hold `queueByteLimit` each (128 GiB by default). Keep it above the largest handshake
  /// answer (about a space's size), which cannot be sent otherwise.
  public var processQueueByteLimit = 512 << 20
  /// How long a socket being closed may take to take its last messages and the close
  /// frame; a client that reads nothing meanwhile is disconnected without them.
  public var closeGracePeriod: Duration = .seconds(10)
  /// Open sockets in the process; more are refused with `relayBusy` (4020).
  public var maxConnections = 16_384
  /// Open sockets in one space; more are refused with `spaceBusy` (4021).
  public var maxSocketsPerSpace = 256
  /// Deltas that may wait for one space's next group commit; a push beyond it closes its
  /// socket with `spaceBusy` (4021), and the device sends it again after backing off.
  public var pendingDeltasPerSpace = 16_384

  /// How long a device may stay silent (no handshake or report, not connected) before
  /// the relay retires it from a space: until then, a device merely offline holds back
  /// the stable cut, and what it has not seen deleted stays on every replica.
  public var retireAfter: Duration = .seconds(30 * 24 * 3600)
  /// How long after its latest grant (its token's `exp`) ended a device is retired, if no
  /// newer token of it was seen meanwhile: a device that lost its access stops holding
  /// the cut back, one that refreshes short-lived tokens is not retired.
  public var grantGrace: Duration = .seconds(24 * 3600)
  /// The relay's wall clock, for ``retireAfter`` and grants' ends (a test's own clock).
  public var now: @Sendable () -> Date = { Date() }

  /// The defaults: loopback, port 7780.
  public init() {}
}
