import Converge

/// Where a ``RelayClient`` keeps its replica and what the relay has acknowledged, so
/// that nothing the relay has not made durable is forgotten across launches.
///
/// The outbox is not stored separately: it is what the replica has beyond the
/// acknowledged context (`replica.delta(since: acknowledged)`), which the handshake sends
/// on every connection. A durable store (a file, a database) implements the same three
/// calls; ``InMemoryRelayClientStore`` keeps them for the life of the process.
public protocol RelayClientStore: Sendable {
  /// The replica and the acknowledged context as last saved.
  func load() async throws -> (replica: Replica, acknowledged: CausalContext)
  /// Saves the replica after a local transaction or a delta from the relay.
  func save(_ replica: Replica) async throws
  /// Records that the relay has made `durable` durable (joined with earlier records).
  func recordAcknowledgement(_ durable: CausalContext) async throws
}

/// A ``RelayClientStore`` in memory, for tests and for apps that persist elsewhere.
public actor InMemoryRelayClientStore: RelayClientStore {
  private var replica: Replica
  private var acknowledged = CausalContext()

  /// A store starting from `replica`, with nothing acknowledged.
  public init(replica: Replica = Replica()) {
    self.replica = replica
  }

  public func load() -> (replica: Replica, acknowledged: CausalContext) {
    (replica, acknowledged)
  }

  public func save(_ replica: Replica) {
    self.replica = replica
  }

  public func recordAcknowledgement(_ durable: CausalContext) {
    acknowledged.formUnion(durable)
  }
}
