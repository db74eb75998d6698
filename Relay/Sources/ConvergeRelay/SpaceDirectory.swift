import ConvergeRelayClient

/// The spaces this process serves, each built on first use from the store and dropped,
/// replica and all, once the last socket or request using it is done.
///
/// Users take a space with ``acquire(_:socket:)`` and give it back with
/// ``release(_:_:socket:)``; the counts also admit sockets, at most
/// ``RelayConfiguration/maxConnections`` in the process and
/// ``RelayConfiguration/maxSocketsPerSpace`` in one space.
///
/// When the store reports appends (``RelayStore/events()``), each goes to its space's hub,
/// and a poll every `notifiedPollInterval` only backs that up; a store that cannot report
/// them is polled every `pollInterval`, zero (one process alone) never. A poll is one timer
/// for the process, running while some space is served, that asks each hub with sockets
/// to read the store: no space has a timer of its own.
actor SpaceDirectory {
  private struct Served {
    let hub: SpaceHub
    var users = 0
    var sockets = 0
  }

  private let store: any RelayStore
  private let compactionInterval: UInt64
  private let pollInterval: Duration
  private let limits: RelayConfiguration
  private var served: [String: Served] = [:]
  private var sockets = 0
  private let events: AsyncStream<RelayStoreEvent>?
  private var listening: Task<Void, Never>?
  private var polling: Task<Void, Never>?

  init(store: any RelayStore, configuration: RelayConfiguration) {
    self.store = store
    self.compactionInterval = configuration.compactionInterval
    self.limits = configuration
    events = store.events()
    self.pollInterval =
      events == nil ? configuration.storePollInterval : configuration.notifiedStorePollInterval
  }

  deinit {
    listening?.cancel()
    polling?.cancel()
  }

  /// Spaces in memory now.
  var servedCount: Int { served.count }

  /// Routes the store's events to the hubs, from the first hub on.
  private func listenIfNeeded() {
    guard listening == nil, let events else { return }
    listening = Task { [weak self] in
      for await event in events {
        guard let self else { return }
        await self.route(event)
      }
    }
  }

  private func route(_ event: RelayStoreEvent) async {
    switch event {
    case .appended(let space, let position, let delta):
      await served[space]?.hub.notified(position: position, delta: delta)
    case .resumed:
      for entry in served.values { await entry.hub.notified(position: nil) }
    }
  }

  /// One timer for every space, while some space is served.
  private func pollIfNeeded() {
    guard polling == nil, pollInterval > .zero else { return }
    let interval = pollInterval
    polling = Task { [weak self] in
      while !Task.isCancelled {
        try? await Task.sleep(for: interval)
        guard let self, !Task.isCancelled else { return }
        // A failed read is retried at the next tick; the sockets keep their state.
        for hub in await self.hubs { await hub.pollIfServing() }
      }
    }
  }

  private var hubs: [SpaceHub] { served.values.map(\.hub) }

  /// The space's hub, taken until ``release(_:_:socket:)``; for a socket (`socket`),
  /// refused when the process or the space has as many sockets as it allows.
  func acquire(_ space: String, socket: Bool = false) -> Result<SpaceHub, RelayCloseReason> {
    var entry =
      served[space]
      ?? Served(
        hub: SpaceHub(
          space: space, store: store, compactionInterval: compactionInterval,
          waitingLimit: limits.pendingDeltasPerSpace, retireAfter: limits.retireAfter,
          grantGrace: limits.grantGrace, now: limits.now))
    if socket {
      guard sockets < limits.maxConnections else { return .failure(.relayBusy) }
      guard entry.sockets < limits.maxSocketsPerSpace else { return .failure(.spaceBusy) }
      entry.sockets += 1
      sockets += 1
    }
    entry.users += 1
    served[space] = entry
    listenIfNeeded()
    pollIfNeeded()
    return .success(entry.hub)
  }

  /// Gives back what ``acquire(_:socket:)`` took. After the last user's release the
  /// space is dropped once its commits in flight are done, unless someone took it
  /// meanwhile; the caller does not wait for that.
  func release(_ space: String, _ hub: SpaceHub, socket: Bool = false) {
    guard var entry = served[space], entry.hub === hub else { return }
    entry.users -= 1
    if socket {
      entry.sockets -= 1
      sockets -= 1
    }
    served[space] = entry
    guard entry.users == 0 else { return }
    Task { await self.drop(space, hub) }
  }

  private func drop(_ space: String, _ hub: SpaceHub) async {
    await hub.settle()
    guard let current = served[space], current.hub === hub, current.users == 0 else { return }
    served[space] = nil
    if served.isEmpty {
      polling?.cancel()
      polling = nil
    }
  }

  /// Runs `body` with the space's hub taken.
  nonisolated func withHub<T: Sendable>(
    _ space: String, _ body: @Sendable (SpaceHub) async throws -> T
  ) async throws -> T {
    guard case .success(let hub) = await acquire(space) else {
      throw RelayCloseReason.serverError
    }
    do {
      let value = try await body(hub)
      await release(space, hub)
      return value
    } catch {
      await release(space, hub)
      throw error
    }
  }
}
