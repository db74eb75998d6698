/// The relay's address and limits.
public struct RelayConfiguration: Sendable {
  /// The interface to bind; loopback unless the relay is meant to be reachable.
  public var host = "127.0.0.1"
  /// The port to bind; 0 picks a free one (see `RelayServer`'s `onRunning`).
  public var port = 7780
  /// The largest message a client may send, in bytes (close code 1009 beyond it).
  public var maxMessageSize = 1 << 20
  /// Messages a connection may send per second, sustained and as a burst.
  public var messagesPerSecond = 2_000
  /// How long a socket may stay silent before the relay closes it.
  public var idleTimeout: Duration = .seconds(300)
  /// Log entries between two snapshots of a space.
  public var compactionInterval: UInt64 = 1_000
  /// How often a space with open sockets reads the store for deltas that other relay
  /// processes sharing it appended, and pushes them; zero turns polling off (one
  /// process alone never needs it).
  public var storePollInterval: Duration = .milliseconds(250)
  /// The same for a store that reports appends as they commit (PostgreSQL): only a
  /// safety net for a report lost with the store's connection.
  public var notifiedStorePollInterval: Duration = .seconds(5)
  /// Messages waiting for one socket before it counts as a slow consumer.
  public var queueLimit = 8_192

  /// The defaults: loopback, port 7780.
  public init() {}
}
