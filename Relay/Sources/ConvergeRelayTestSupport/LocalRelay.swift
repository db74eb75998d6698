import ConvergeRelay
import Logging
import ServiceLifecycle

/// A relay served from this process on a free loopback port: what the tests, the bench,
/// the example and the relay simulator start. Several may share one store, as relay
/// processes sharing a database do.
public struct LocalRelay: Sendable {
  /// The port it listens on, on 127.0.0.1.
  public let port: Int
  private let group: ServiceGroup
  private let task: Task<Void, any Error>
  private let server: RelayServer

  /// Starts a relay over `store`; `configuration`'s host and port are replaced by
  /// loopback and a free port. `services` run in the relay's group before the server,
  /// and stop after it: the store's services (``PostgresRelayStore/services``) when
  /// this relay alone uses the store; none for a store shared with other relays, which
  /// runs on its own (``PostgresRelayStore/connect(url:logger:startTimeout:)``).
  public static func start(
    store: any RelayStore, services: [any Service] = [], authority: RelayTokenAuthority,
    configuration: RelayConfiguration = RelayConfiguration(),
    logger: Logger = Logger(label: "converge-relay")
  ) async throws -> LocalRelay {
    var configuration = configuration
    configuration.host = "127.0.0.1"
    configuration.port = 0
    let (ports, portReported) = AsyncStream<Int>.makeStream()
    let server = RelayServer(store: store, authority: authority, configuration: configuration)
    let application = server.makeApplication(logger: logger) { port in portReported.yield(port) }
    // A graceful shutdown stops the services in reverse: the server (it stops accepting
    // and drains its connections) first, then the store's services.
    let group = ServiceGroup(
      configuration: .init(
        services: services + [application], gracefulShutdownSignals: [], logger: logger))
    let task = Task {
      defer { portReported.finish() }
      try await group.run()
    }
    guard let port = await ports.first(where: { _ in true }), port > 0 else {
      task.cancel()
      // What stopped the group (a store that could not start), else that no port came.
      try await task.value
      throw LocalRelayDidNotStart()
    }
    return LocalRelay(port: port, group: group, task: task, server: server)
  }

  /// Spaces whose replica the relay holds in memory now: those with a socket or request
  /// in flight, and those whose last one is still finishing its commits.
  public func servedSpaces() async -> Int {
    await server.servedSpaces()
  }

  /// Bytes waiting in the sockets' outgoing queues now, summed over the process's sockets
  /// (bounded by `processQueueByteLimit`).
  public var queuedBytes: Int { server.queuedBytes }

  /// `ws://127.0.0.1:PORT`, the base of every space's address.
  public var base: String { "ws://127.0.0.1:\(port)" }

  /// The WebSocket address of `space`.
  public func url(space: String) -> String { "\(base)/v1/spaces/\(space)/sync" }

  /// Shuts the server down gracefully (open sockets are sent a close frame) and waits for
  /// it; after `grace`, the server task is cancelled instead. A graceful shutdown waits
  /// for every connection, and one caught mid-upgrade can keep it waiting for good.
  public func stop(grace: Duration = .seconds(2)) async {
    await group.triggerGracefulShutdown()
    let task = self.task
    await withTaskGroup(of: Bool.self) { waiting in
      waiting.addTask {
        _ = try? await task.value
        return true
      }
      waiting.addTask {
        try? await Task.sleep(for: grace)
        return false
      }
      if await waiting.next() == false { task.cancel() }
      await waiting.waitForAll()
    }
  }
}

/// The server stopped before it reported a port.
public struct LocalRelayDidNotStart: Error {}
