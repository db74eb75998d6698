import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The store's life as services of a `ServiceGroup`: the PostgreSQL client first, the store
/// after it, so that a graceful shutdown stops the server (listed after them) first, then
/// the store (its LISTEN connection; the streams of ``events()`` end), and the client last.
///
/// ```swift
/// let store = try PostgresRelayStore(url: url)
/// let app = RelayServer(store: store, authority: authority, configuration: configuration)
///   .makeApplication()  // starts accepting once `store.ready()` returned
/// try await ServiceGroup(
///   configuration: .init(services: store.services + [app], logger: logger)
/// ).run()
/// ```
extension PostgresRelayStore: Service {
  /// What a `ServiceGroup` runs for this store, in start order: the PostgreSQL client,
  /// then the store itself.
  public var services: [any Service] { [client, self] }

  /// Creates the relay's tables if missing (throwing ``RelayStoreError/unreachable(_:)``
  /// when that has not happened within the start timeout: the pool alone would retry for
  /// good), reports ``ready()``, then keeps the LISTEN connection for ``events()`` until a
  /// graceful shutdown or cancellation, and ends the streams of ``events()``. The client
  /// (``services``' first) must be running.
  public func run() async throws {
    do {
      try await createTables()
    } catch {
      readiness.fail(error)
      subscribers.finish()
      throw error
    }
    readiness.succeed()
    let configuration = listenConfiguration
    let subscribers = subscribers
    let logger = logger
    await cancelWhenGracefulShutdown {
      await Self.listen(configuration: configuration, subscribers: subscribers, logger: logger)
    }
    subscribers.finish()
  }

  /// Returns once the store's run created its tables, or throws what stopped it. Waits
  /// until ``services`` run.
  public func ready() async throws {
    try await readiness.wait()
  }

  private func createTables() async throws {
    let client = client
    let poolLogger = poolLogger
    let startTimeout = startTimeout
    let address = address
    try await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask {
        try await client.withTransaction(logger: poolLogger) { connection in
          // Nodes starting together would race to create the same tables.
          try await connection.query("SELECT pg_advisory_xact_lock(7780)", logger: poolLogger)
          for statement in Self.schema {
            try await connection.query(statement, logger: poolLogger)
          }
        }
      }
      group.addTask {
        try await Task.sleep(for: startTimeout)
        throw RelayStoreError.unreachable(
          "no answer from PostgreSQL at \(address) within \(startTimeout)")
      }
      try await group.next()
      group.cancelAll()
    }
  }

  /// The store at `url`, running in a service group of its own until ``close()``: for a
  /// store used outside a server's group (tools, tests of the store alone). A server runs
  /// ``services`` in its own group instead (see the type's notes). Throws
  /// ``RelayStoreError/unreachable(_:)`` when the tables are not in place within
  /// `startTimeout`.
  public static func connect(
    url: String, logger: Logger = Logger(label: "converge-relay"),
    startTimeout: Duration = .seconds(30)
  ) async throws -> PostgresRelayStore {
    let store = try PostgresRelayStore(url: url, logger: logger, startTimeout: startTimeout)
    let group = ServiceGroup(
      configuration: .init(
        services: store.services, gracefulShutdownSignals: [], logger: store.poolLogger))
    let task = Task { try await group.run() }
    store.ownGroup.withLock { $0 = (group, task) }
    do {
      try await store.ready()
    } catch {
      task.cancel()
      _ = try? await task.value
      throw error
    }
    return store
  }

  /// Shuts down the group ``connect(url:logger:startTimeout:)`` started (the LISTEN
  /// connection, then the client) and waits for it; the streams of ``events()`` end. Does
  /// nothing for a store run by another group: that group's shutdown stops it.
  public func close() async {
    guard let running = ownGroup.withLock({ $0.take() }) else { return }
    await running.group.triggerGracefulShutdown()
    _ = try? await running.task.value
  }
}

/// Whether a store's tables are in place: waiters are resumed when its run succeeds or
/// fails.
final class Readiness: Sendable {
  private enum State {
    case waiting([CheckedContinuation<Void, any Error>])
    case ready
    case failed(any Error)
  }
  private let state = Mutex(State.waiting([]))

  func wait() async throws {
    try await withCheckedThrowingContinuation { continuation in
      let result: Result<Void, any Error>? = state.withLock { state in
        switch state {
        case .waiting(let waiters):
          state = .waiting(waiters + [continuation])
          return nil
        case .ready: return .success(())
        case .failed(let error): return .failure(error)
        }
      }
      if let result { continuation.resume(with: result) }
    }
  }

  func succeed() { settle(.ready) }
  func fail(_ error: any Error) { settle(.failed(error)) }

  private func settle(_ settled: State) {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
      guard case .waiting(let waiters) = state else { return [] }
      state = settled
      return waiters
    }
    for waiter in waiters {
      if case .failed(let error) = settled {
        waiter.resume(throwing: error)
      } else {
        waiter.resume()
      }
    }
  }
}
