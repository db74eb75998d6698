import Converge
import ConvergeRelayClient

/// The space's stable cut: what every device that may still send an edit has seen.
///
/// The store keeps a ``RelayDeviceRecord`` per device (per replica id a write token
/// grants): the context it stated at its handshake, grown by what it reports it holds
/// durably (`RelaySeenReport`) and what it pushed, and when it was last heard from. Each
/// record is written before the cut is computed from it. The cut is the meet of the
/// active devices' contexts (`CausalContext.stableCut`); once the space's replica holds
/// their union, the hub sends it to every socket as a `RelayStableCut`, forgets the
/// deleted entities stable in it, and replaces the space's snapshot by the forgotten
/// state at once (``RelayStore/replaceSnapshot(space:state:through:)``), so no row keeps
/// the deleted content.
///
/// A device recorded as having seen nothing (its handshake stated an empty context, and
/// it has not reported or pushed since) holds the cut back like any other, connected or
/// not, until it reports or the horizon retires it. A rejoin's bootstrap leaves such a
/// record: its device rebases its offline edits on the state it was served, forgotten by
/// the cut it was told, and the delta that brings back an entity that state holds deleted
/// re-applies only the edits the state lacks; a replica that forgot the entity by a larger
/// cut before that delta arrives would show the re-applied fields alone (and the
/// authorship check refuses a later push naming the entity's forgotten events). So the
/// cut must not pass what a rejoin was told until its rebased edits are in.
///
/// Devices silent longer than the horizon (``RelayConfiguration/retireAfter``, connected
/// devices never are) or whose grant ended are retired: they no longer hold the cut
/// back, and a socket of theirs is refused with `retired` (4011). So is a device whose
/// handshake states less than the relay recorded it had seen (a restored backup), and any
/// device that holds part of the recorded cut (``RelayStore/stableCut(space:)``) but not
/// all of it: it may hold entities the others forgot, and nothing the relay could send
/// would delete them. A device that holds none of it (a new one, maybe with offline edits
/// of its own) is served the current state.
extension SpaceHub {
  /// What ``admit(_:grant:context:)`` decided.
  enum Admission: Equatable {
    /// Served; the current cut, if there is one, goes to the device after the answer.
    case admitted(RelayStableCut?)
    /// Refused with `retired`.
    case retired
  }

  /// Admits a socket's device at its first message, and records it when that is a
  /// handshake stating `context`; a first message that states none (a live push) is
  /// checked only against retirement, and its device is recorded at its first report.
  /// A request of the HTTP pair (`socket` `nil`) is admitted the same way at each push or
  /// pull, the context it states (a pull's body, a push's sync message) recorded as a
  /// handshake's; its device is never counted as connected.
  ///
  /// - Throws: the store's errors, or a `ConvergeDecodingError` for a stored record that
  ///   does not decode.
  func admit(_ socket: UInt64?, grant: RelayGrant, context stated: CausalContext?) async throws
    -> Admission
  {
    try await retireSilentDevices()
    let records = try await store.devices(space: space)
    let granted = records.filter { grant.replicas.contains($0.replica) }
    if granted.contains(where: \.isRetired) { return .retired }
    if let socket, grant.canWrite, !grant.replicas.isEmpty {
      connectedDevices[socket] = grant.replicas
      keepConnectedDevicesHeard()
    }
    guard let context = stated else { return .admitted(publishedCut) }
    let seconds = now().relaySeconds
    let regressed = granted.filter { !context.includes($0.seen) }
    // The cut another process recorded is adopted first: a rejoin's bootstrap must be
    // served a state forgotten by the cut it is told, and that cut must include every
    // cut any replica of the space forgot by.
    let stable = try await adoptRecordedCut(refreshing: true, answering: socket)
    // A context that holds part of the cut may hold an entity the others forgot; one that
    // holds none of it (a new device's offline edits) holds none.
    let holdsPart = !context.includes(stable) && !context.intersection(stable).isEmpty
    if !regressed.isEmpty || holdsPart {
      try await store.record(
        space: space,
        devices: grant.replicas.map { replica in
          RelayDeviceRecord(
            replica: replica, seen: granted.first { $0.replica == replica }?.seen ?? context,
            lastHeard: seconds, expiry: grant.expiry.relaySeconds, isRetired: true)
        })
      if let socket { connectedDevices[socket] = nil }
      return .retired
    }
    try await noteSeen(grant: grant, seen: context)
    // Another process may have retired the device from a record it read before this one
    // was written (at the horizon's edge): refused now, rather than served while the cut
    // no longer waits for it. (A retirement judged later finds the record heard from and
    // leaves it, ``RelayStore/retire(space:devices:)``.)
    let written = try await store.devices(space: space)
    if written.contains(where: { grant.replicas.contains($0.replica) && $0.isRetired }) {
      if let socket { connectedDevices[socket] = nil }
      return .retired
    }
    // Another process may have recorded a cut from records read before this device's
    // record was written: the device is told (and served a state forgotten by) whatever is
    // recorded now, which every later cut includes.
    try await adoptRecordedCut(refreshing: true, answering: socket)
    return .admitted(publishedCut)
  }

  /// Records that the devices `grant` names have seen `seen` and are heard from now, and
  /// advances the cut if it can.
  func noteSeen(grant: RelayGrant, seen: CausalContext) async throws {
    guard grant.canWrite, !grant.replicas.isEmpty else { return }
    let seconds = now().relaySeconds
    try await store.record(
      space: space,
      devices: grant.replicas.map {
        RelayDeviceRecord(
          replica: $0, seen: seen, lastHeard: seconds, expiry: grant.expiry.relaySeconds,
          isRetired: false)
      })
    try await advanceCut()
  }

  /// Keeps the records of the devices connected to this process heard from while they
  /// stay connected. Another relay process sharing the store knows nothing of this
  /// process's sockets and judges a device by its record alone: without this it would
  /// retire a connected device that sent nothing for longer than the horizon, and the cut
  /// would move past a device that may still send a concurrent edit (`converge-relay
  /// simulate` found it with two relays and a 4-second horizon). One task a hub, only
  /// while devices are connected, waking every quarter of the horizon (a week by
  /// default); it changes only the time last heard (``RelayStore/touch(space:replicas:lastHeard:)``).
  func keepConnectedDevicesHeard() {
    guard heartbeat == nil, !connectedDevices.isEmpty else { return }
    let interval = max(Duration.milliseconds(250), Duration.seconds(retireAfter) / 4)
    heartbeat = Task { [weak self] in
      while !Task.isCancelled {
        try? await Task.sleep(for: interval)
        guard !Task.isCancelled, let self else { return }
        await self.touchConnectedDevices()
      }
    }
  }

  /// Marks this process's connected devices heard from now (the heartbeat ends when the
  /// last one's socket closes, ``unsubscribe(_:)``), closes the sockets of those another
  /// process retired meanwhile, and adopts the cut another process recorded: a process
  /// whose own meet does not grow (its devices quiet) would otherwise never tell its
  /// sockets a cut the others forgot by. A failed write or read is tried again at the next
  /// beat.
  func touchConnectedDevices() async {
    let connected = Array(Set(connectedDevices.values.joined()))
    guard !connected.isEmpty else { return }
    try? await store.touch(space: space, replicas: connected, lastHeard: now().relaySeconds)
    if let records = try? await store.devices(space: space) { closeRetiredSockets(records) }
    _ = try? await adoptRecordedCut(refreshing: false)
  }

  /// Closes with `retired` (4011) every socket of this process whose device `records`
  /// say is retired. Another process sharing the store retires a device by its record
  /// alone (a heartbeat that came late under load, a clock ahead); the device's socket
  /// here would otherwise go on pushing edits made after the cut stopped waiting for it,
  /// concurrent with deletes the others may have forgotten. Closed, the device rejoins
  /// under a fresh id and its edits are rebased.
  func closeRetiredSockets(_ records: [RelayDeviceRecord]) {
    let retired = Set(records.lazy.filter(\.isRetired).map(\.replica))
    guard !retired.isEmpty else { return }
    for (socket, replicas) in connectedDevices where !replicas.isDisjoint(with: retired) {
      connectedDevices[socket] = nil
      subscribers[socket]?.close(.retired)
    }
  }

  /// Retires the records that are no longer active, and returns the others with the
  /// version of the records read.
  @discardableResult
  private func retireSilentDevices() async throws -> (
    active: [RelayDeviceRecord], version: RelayDeviceRecords.Version
  ) {
    let read = try await store.deviceRecords(space: space)
    let records = read.records
    let seconds = now().relaySeconds
    let connected = Set(connectedDevices.values.joined())
    var active: [RelayDeviceRecord] = []
    var retiring: [RelayDeviceRecord] = []
    for var record in records where !record.isRetired {
      if record.isActive(
        now: seconds, horizon: retireAfter, grace: grantGrace,
        connected: connected.contains(record.replica))
      {
        active.append(record)
      } else {
        record.isRetired = true
        retiring.append(record)
      }
    }
    if !retiring.isEmpty {
      // Retired only if no process heard from the device since the read: one that another
      // process has just admitted stays active, with the context it was read to have seen.
      let retired = Set(try await store.retire(space: space, devices: retiring))
      for var record in retiring where !retired.contains(record.replica) {
        record.isRetired = false
        active.append(record)
      }
    }
    closeRetiredSockets(records)
    return (active, read.version)
  }

  /// Computes the cut from the active devices' records and, when it has grown and the
  /// space holds their union, sends it to every socket and forgets with it.
  ///
  /// The cut is recorded only if no device record was added since the records it was
  /// computed from were read (``RelayStore/recordStableCut(space:cut:ifDevicesAt:)``):
  /// another process may have written a rejoin's record meanwhile and told it the cut
  /// recorded then, and this cut, computed without that record, may pass it. It is then
  /// computed again from the records as they are, a bounded number of times (a failure to
  /// advance is safe: the next report tries again).
  func advanceCut() async throws {
    for _ in 0..<Self.cutAttempts {
      if try await advanceCutOnce() { return }
    }
  }

  /// How many times ``advanceCut()`` computes the cut while device records keep being
  /// added under it.
  static let cutAttempts = 8

  /// One computation of ``advanceCut()``: returns `false` if the store refused the cut
  /// because a device record was added since they were read.
  private func advanceCutOnce() async throws -> Bool {
    // Every active record counts, one that states nothing too (a new device, or a
    // rejoin's bootstrap, connected or not): a rejoin rebases on the cut it was told, so
    // the cut waits for its report (see the type's documentation). A bootstrap whose
    // device died holds the cut back until the horizon retires it, as any device offline.
    let (records, version) = try await retireSilentDevices()
    let active = records.map(\.seen)
    guard !active.isEmpty else { return true }
    let meet = Self.meet(of: active)
    guard !meet.isEmpty else { return true }
    var covering = CausalContext()
    for seen in active { covering.formUnion(seen) }
    guard replica.context.includes(covering) else {
      // Another process holds events this one has not read yet: tried again once it has.
      awaitedCovering = covering
      return true
    }
    awaitedCovering = nil
    if let published = publishedCut, published.stable.includes(meet) { return true }
    var cut = RelayStableCut(stable: meet, covering: covering)
    if let published = publishedCut {
      // Never a smaller cut than one already published (adopted from another process,
      // whose view of the active devices may differ): the union of two stable cuts is
      // stable, and this replica holds both covering contexts.
      cut.stable.formUnion(published.stable)
      cut.covering.formUnion(published.covering)
    }
    // Recorded before any replica forgets with it: a device that comes back without it
    // is refused from then on, and the other processes adopt it. The store keeps the
    // union with what another process recorded meanwhile: forgotten by here too once this
    // replica holds its covering context (else adopted when a read brings it).
    guard let stored = try await store.recordStableCut(space: space, cut: cut, ifDevicesAt: version)
    else { return false }
    if stored != cut, replica.context.includes(stored.covering) {
      try await publish(stored)
    } else {
      if stored != cut { awaitedRecorded = stored }
      try await publish(cut)
    }
    return true
  }

  /// Sends `cut` to every socket, forgets with it and replaces the snapshot if that
  /// forgot anything. The replica holds the cut's covering context.
  private func publish(_ cut: RelayStableCut, answering socket: UInt64? = nil) async throws {
    publishedCut = cut
    // The socket being admitted gets it after the answer to its handshake.
    broadcast(cut.encoded(), excluding: socket.map { [$0] } ?? [])
    guard replica.forgetDeleted(stable: cut.stable) > 0 else { return }
    // The state and its position are taken together, before any await.
    let state = replica.encodedState()
    let through = appliedPosition
    try await store.replaceSnapshot(space: space, state: state, through: through)
    snapshotPosition = max(snapshotPosition, through)
  }

  /// Adopts the cut recorded in the store if it is not within the one this process
  /// published, and returns the recorded stable context (empty if none).
  ///
  /// Two relay processes sharing a store each compute and publish their own cut, and a
  /// rejoin rebases on the cut its relay tells it (``Replica/rebasing(_:onto:stable:retired:as:wallClock:)``):
  /// its re-applied delta converges only on replicas that forgot by that cut before they
  /// apply it. So a process adopts the recorded cut (sends it to its sockets and forgets
  /// with it) before it answers a handshake (`refreshing`: reading the store first if its
  /// replica lacks the cut's covering context) and before it applies an entry of a replica
  /// it has never seen (a rejoin's fresh id, or a new device), which the log holds after
  /// every event of the cut the rejoin was told. Without it, a relay process that had not
  /// computed the cut itself (restarted, or its meet held back by the bootstrap's own empty
  /// record) served a rejoin a state and no cut, and the rejoined device kept, or brought
  /// back, fields the others had forgotten (`converge-relay simulate`, two relays).
  @discardableResult
  func adoptRecordedCut(refreshing: Bool, answering socket: UInt64? = nil) async throws
    -> CausalContext
  {
    guard let recorded = try await store.recordedCut(space: space) else {
      return CausalContext()
    }
    if let published = publishedCut, published.stable.includes(recorded.stable) {
      return recorded.stable
    }
    if refreshing, !replica.context.includes(recorded.covering) { try await refresh() }
    if let published = publishedCut, published.stable.includes(recorded.stable) {
      return recorded.stable
    }
    guard replica.context.includes(recorded.covering) else {
      // Not read yet (a store that lets read less than it recorded): tried again when
      // the replica holds it.
      awaitedRecorded = recorded
      return recorded.stable
    }
    var cut = recorded
    if let published = publishedCut {
      cut.stable.formUnion(published.stable)
      cut.covering.formUnion(published.covering)
    }
    awaitedRecorded = nil
    try await publish(cut, answering: socket)
    return recorded.stable
  }

  /// Tries the cut again if it waited for events the replica now holds: a report handled
  /// while the device's push was still being appended, or events another relay process
  /// appended that this one has read since.
  func advanceCutIfCovered() async {
    if let recorded = awaitedRecorded, replica.context.includes(recorded.covering) {
      _ = try? await adoptRecordedCut(refreshing: false)
    }
    guard let covering = awaitedCovering, replica.context.includes(covering) else { return }
    awaitedCovering = nil
    // A failure is retried at the next report.
    try? await advanceCut()
  }

  /// The meet of `contexts`; empty for none.
  static func meet(of contexts: [CausalContext]) -> CausalContext {
    guard var meet = contexts.first else { return CausalContext() }
    for context in contexts.dropFirst() { meet = meet.intersection(context) }
    return meet
  }
}
