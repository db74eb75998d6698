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

  /// Starts a relay over `store`; `configuration`'s host and port are replaced by
  /// loopback and a free port.
  public static func start(
    store: any RelayStore, authority: RelayTokenAuthority,
    configuration: RelayConfiguration = RelayConfiguration(),
    logger: Logger = Logger(label: "converge-relay")
  ) async throws -> LocalRelay {
    var configuration = configuration
    configuration.host = "127.0.0.1"
    configuration.port = 0
    let (ports, portReported) = AsyncStream<Int>.makeStream()
    let application = RelayServer(
      store: store, authority: authority, configuration: configuration
    ).makeApplication(logger: logger) { port in portReported.yield(port) }
    let group = ServiceGroup(
      configuration: .init(services: [application], gracefulShutdownSignals: [], logger: logger))
    let task = Task { try await group.run() }
    guard let port = await ports.first(where: { _ in true }), port > 0 else {
      task.cancel()
      throw LocalRelayDidNotStart()
    }
    return LocalRelay(port: port, group: group, task: task)
  }

  /// `ws://127.0.0.1:PORT`, the base of every space's address.
  public var base: String { "ws://127.0.0.1:\(port)" }

  /// The WebSocket address of `space`.
  public func url(space: String) -> String { "\(base)/v1/spaces/\(space)/sync" }

  /// Shuts the server down gracefully (open sockets are closed) and waits for it.
  public func stop() async {
    await group.triggerGracefulShutdown()
    _ = try? await task.value
  }
}

/// The server stopped before it reported a port.
public struct LocalRelayDidNotStart: Error {}
