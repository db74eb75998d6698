import Converge
import ConvergeStore

/// Stability during the run, without a relay: each device forgets by what its own
/// sessions told it, devices away past the horizon are retired, and they rejoin.
///
/// **What a device knows.** The contexts its peers stated in the handshake messages its
/// sessions decoded (``SyncMessage/context``): each is the peer's whole context when it
/// sent it, so the union of those a peer stated is a report of what it has seen, never a
/// guess (runs with stability restart no device, so none loses what it stated, and sync
/// every commit, so a device withholds no edit of its own from what it states). Not the
/// store's ``DeviceReplica/acknowledgedContext(of:)``: that also adds the contexts of the
/// deltas a peer forwarded, events the peer holds, but not a context it was in: a peer
/// that forwards a delete while a push of its own concurrent edit is lost would appear
/// to have seen the delete without that edit, and the cut would forget the entity here
/// before the edit arrives. To forget, a device needs a report from every member (every
/// device not retired) heard since the last retirement; it computes the cut with
/// ``CausalContext/stableCut(of:seenBy:)`` and calls ``DeviceReplica/forgetDeleted(stable:)``.
/// A member it has not heard from, offline or not, holds its frontier back.
///
/// **Retirement** (the schedule's one rule, as a relay's would be): a device away for
/// ``SimulationConfiguration/horizon`` is retired by all at once. Its messages are
/// refused from then on, and every device must hear each member again, by a message sent
/// after the retirement, before it forgets: the retired device's events that reached
/// anyone (it sent nothing while away) are then in those members' bounds, so a cut that
/// leaves it out still covers them.
///
/// **Rejoining.** A retired device that comes back is refused (told it is retired) and
/// rejoins: the others stop forgetting, and each forgets by the union of the cuts any
/// member forgot with once it holds the union of their coverings, so that all have
/// forgotten the same entities. Then the device rebases on the state of a peer it can
/// reach that has heard every member since the retirement and holds all they stated
/// (so that state holds every event of the retired id that anyone holds), through
/// ``DeviceReplica/rejoin(onto:stable:heldBy:as:)``, under a fresh id; its peers name it
/// anew (what they recorded of the old id says nothing of the new state), and forgetting
/// resumes.
///
/// **Stranded edits.** A retired device's later edits may have reached the members while
/// an earlier push of its own was lost everywhere: they wait on every member, and would
/// for ever. Each member drops what waits for a retired id
/// (``DeviceReplica/dropPending(of:)``) when it forgets by the rejoin's cut, that is
/// once it holds every member's bound, so every event of a retired id that any member
/// holds (an item that waits then waits for an event no member holds, and none will
/// receive one: the retired device's messages are refused). The rebase re-applies the
/// old id's items the peer's state does not hold integrated, so each stranded edit ends
/// applied once, under the fresh id; a late copy of one, still in flight between
/// members, is dropped again on arrival. The oracle allows no pending item at the end.
extension SimulationRun {
  /// A rejoin waiting for every member to forget by its cut.
  struct PendingRejoin {
    var device: Int
    /// The union of the cuts the members forgot with, and of their coverings.
    var stable: CausalContext
    var covering: CausalContext
    /// The members that forgot by it.
    var applied: Set<Int> = []
  }

  /// Who is retired, what each device heard and forgot by.
  struct StabilityState {
    var retired: [Bool]
    /// When each device left, while it is away and not yet returned.
    var leftAt: [UInt64?]
    /// How many times each device rejoined: its peers name it `"i"`, then `"i.1"`, …
    var generations: [Int]
    /// When each device last rejoined.
    var rejoinedAt: [UInt64]
    /// When the last retirement happened.
    var epoch: UInt64 = 0
    /// `heard[a][b]`: whether `a` received a handshake message `b` sent since the last
    /// retirement (and since either rejoined), and the union of the contexts `b` stated
    /// in those: what `a` knows `b` has seen.
    var heard: [[Bool]]
    var reports: [[CausalContext]]
    /// The union of the cuts each device forgot with, and of the coverings they needed.
    var cuts: [CausalContext]
    var coverings: [CausalContext]
    var rejoin: PendingRejoin?
    /// The replica ids of devices when they were retired: events of these ids that no
    /// member holds are gone for good (their device re-applies them under a fresh id).
    var deadIDs: Set<ReplicaID> = []
    /// The stable cuts each device found, waiting to become doubly stable, when it
    /// collects its lists (``SimulationConfiguration/collectsLists``).
    var cutHistories: [StableCutHistory]

    init(devices count: Int) {
      retired = Array(repeating: false, count: count)
      leftAt = Array(repeating: nil, count: count)
      generations = Array(repeating: 0, count: count)
      rejoinedAt = Array(repeating: 0, count: count)
      heard = Array(repeating: Array(repeating: false, count: count), count: count)
      reports = Array(repeating: Array(repeating: CausalContext(), count: count), count: count)
      cuts = Array(repeating: CausalContext(), count: count)
      coverings = Array(repeating: CausalContext(), count: count)
      cutHistories = Array(repeating: StableCutHistory(), count: count)
    }

    /// The devices not retired, in order.
    var members: [Int] { retired.indices.filter { !retired[$0] } }
  }

  /// The name `device`'s peers record its acknowledgements under.
  func peerName(_ device: Int) -> String {
    let generation = stability.generations[device]
    return generation == 0 ? "\(device)" : "\(device).\(generation)"
  }

  /// Whether a message between `from` and `to` is refused: one of them is retired.
  func refusesRetired(_ from: Int, _ to: Int) -> Bool {
    stability.retired[from] || stability.retired[to]
  }

  /// Notes the context `stated` in a message that `receiver`'s session decoded, if it was
  /// sent since the last retirement and since either device rejoined.
  mutating func noteStated(_ stated: CausalContext?, in message: Message) {
    guard let stated else { return }
    let (receiver, sender) = (message.to, message.from)
    let since = Swift.max(
      stability.epoch, stability.rejoinedAt[sender], stability.rejoinedAt[receiver])
    guard message.sentAt >= since else { return }
    stability.heard[receiver][sender] = true
    stability.reports[receiver][sender].formUnion(stated)
  }

  // MARK: Each operation

  /// Leaves, retirements, returns, the rejoin under way and a forget, as the
  /// configuration draws them.
  mutating func stabilityStep() {
    guard configuration.hasStability else { return }
    let horizon = configuration.horizon
    if horizon > 0, stabilityRandom.chance(configuration.leaves) {
      let device = Int.random(in: devices.indices, using: &stabilityRandom)
      let extra = UInt64.random(in: 1...horizon, using: &stabilityRandom)
      let present = stability.members.filter { stability.leftAt[$0] == nil }
      // At least two devices stay, so that the space goes on.
      if present.count > 2, present.contains(device) {
        network.takeAway(device, until: now + horizon + extra)
        stability.leftAt[device] = now
        statistics.leaves += 1
      }
    }
    for device in devices.indices {
      guard let left = stability.leftAt[device] else { continue }
      if !stability.retired[device], now - left >= horizon { retire(device) }
      if stability.retired[device], network.awayUntil[device] <= now {
        // Back, and refused as retired: it rejoins once the others are ready.
        stability.leftAt[device] = nil
      }
    }
    if stability.rejoin == nil,
      let device = devices.indices.first(where: {
        stability.retired[$0] && stability.leftAt[$0] == nil
      })
    {
      startRejoin(device)
    }
    advanceRejoin()
    if stabilityRandom.chance(configuration.forgetting) {
      forget(on: Int.random(in: devices.indices, using: &stabilityRandom))
    }
  }

  /// Retires `device` for every device at once: its messages are refused, and every
  /// member's bounds must be heard again.
  mutating func retire(_ device: Int) {
    stability.retired[device] = true
    stability.deadIDs.insert(devices[device].store.replica.id)
    stability.epoch = now
    for index in stability.heard.indices {
      stability.heard[index] = Array(repeating: false, count: devices.count)
      stability.reports[index] = Array(repeating: CausalContext(), count: devices.count)
    }
    statistics.retirements += 1
  }

  /// `device` forgets by the stable cut of what its sessions told it, if it has heard
  /// every member since the last retirement and no rejoin is under way.
  mutating func forget(on device: Int) {
    guard stability.rejoin == nil, !stability.retired[device] else { return }
    let own = devices[device].store.replica.context
    var reports: [CausalContext] = []
    for member in stability.members {
      if member == device {
        reports.append(own)
        continue
      }
      guard stability.heard[device][member] else {
        statistics.forgetsWithoutBounds += 1
        return
      }
      reports.append(stability.reports[device][member])
    }
    // The broken rule a test uses: everything the device has seen taken as stable.
    let cut = hooks.overestimatesCut ? own : CausalContext.stableCut(of: reports, seenBy: own)
    guard !cut.isEmpty else {
      statistics.forgetsWithoutBounds += 1
      return
    }
    var covering = CausalContext()
    for report in reports { covering.formUnion(report) }
    let forgotten = devices[device].deviceReplica.forgetDeleted(stable: cut)
    stability.cuts[device].formUnion(cut)
    stability.coverings[device].formUnion(covering)
    statistics.forgets += 1
    statistics.forgottenEntities += forgotten
    if configuration.collectsLists,
      let doubly = stability.cutHistories[device].note(stable: cut, covering: covering)
    {
      statistics.collectedSlots += devices[device].deviceReplica.collectListTombstones(at: doubly)
    }
  }

  // MARK: Rejoining

  /// Starts `device`'s rejoin: the others stop forgetting and each will forget by the
  /// union of the members' cuts.
  mutating func startRejoin(_ device: Int) {
    var rejoin = PendingRejoin(device: device, stable: CausalContext(), covering: CausalContext())
    for member in stability.members {
      rejoin.stable.formUnion(stability.cuts[member])
      rejoin.covering.formUnion(stability.coverings[member])
    }
    stability.rejoin = rejoin
  }

  /// Whether `device` has heard every other member since the last retirement and holds
  /// every event they stated: then it holds every event of a retired id that any member
  /// holds (a retired device sent nothing since it left, and every member stated, after
  /// its retirement, a context holding what reached it).
  func holdsMembersBounds(_ device: Int) -> Bool {
    var union = CausalContext()
    for member in stability.members where member != device {
      guard stability.heard[device][member] else { return false }
      union.formUnion(stability.reports[device][member])
    }
    return devices[device].store.replica.context.includes(union)
  }

  /// `context` without the events of retired ids (the members' coverings may hold some
  /// that only their retired device had).
  func withoutDeadEvents(_ context: CausalContext) -> CausalContext {
    var dead = CausalContext()
    for entry in context.entries where stability.deadIDs.contains(entry.replica) {
      dead.insert(replica: entry.replica, counters: entry.counters)
    }
    return context.subtracting(dead)
  }

  /// Has every member forget by the rejoin's cut once it holds the covering (but for
  /// events of retired ids) and every member's bound (so the retired ids' events any
  /// member holds); once all have, rebases the device on a peer it can reach that holds
  /// every member's bound.
  mutating func advanceRejoin() {
    guard var rejoin = stability.rejoin else { return }
    let members = stability.members
    let covering = withoutDeadEvents(rejoin.covering)
    for member in members where !rejoin.applied.contains(member) {
      guard devices[member].store.replica.context.includes(covering),
        holdsMembersBounds(member)
      else { continue }
      statistics.forgottenEntities += devices[member].deviceReplica.forgetDeleted(
        stable: rejoin.stable)
      // It holds every event of a retired id that any member holds: what still waits
      // for one waits for ever (re-applied by the rebase under the fresh id).
      statistics.strandedDropped += devices[member].deviceReplica.dropPending(
        of: stability.deadIDs)
      stability.cuts[member].formUnion(rejoin.stable)
      stability.coverings[member].formUnion(rejoin.covering)
      rejoin.applied.insert(member)
    }
    stability.rejoin = rejoin
    guard members.allSatisfy(rejoin.applied.contains) else { return }
    let peer = members.first { peer in
      network.canTalk(rejoin.device, peer, at: now) && holdsMembersBounds(peer)
    }
    guard let peer else { return }
    performRejoin(rejoin, onto: peer)
  }

  /// Rebases the returning device on `peer`'s state under a fresh id, checks that its
  /// offline edits came along, and lets it sync again.
  mutating func performRejoin(_ rejoin: PendingRejoin, onto peer: Int) {
    let device = rejoin.device
    do {
      try devices[device].deviceReplica.flush()
    } catch {
      ledger.storeErrors.append("device \(device): \(error)")
    }
    // Its durable commits are the retired id's: re-applied by the rebase, never sent.
    for entry in devices[device].takeDurable() {
      ledger.recordDurable(entry.counters, of: entry.replica, device: device)
    }
    devices[device].unpushed = []
    let local = devices[device].store.replica.document
    let current = devices[peer].store.replica.document
    // Entities the device shows that its edits the peer's state lacks keep alive, by the
    // ordinary merge of those edits into that state: they must show after the rebase.
    let lacking = local.delta(since: current.context)
    var merged = current
    merged.apply(lacking)
    let offlineEdited = lacking.keys.filter { local.contains($0) && merged.contains($0) }
    let old = devices[device].store.replica.id
    let rebase: Replica.Rebase
    do {
      rebase = try devices[device].deviceReplica.rejoin(
        onto: current, stable: rejoin.stable, heldBy: peerName(peer))
    } catch {
      ledger.storeErrors.append("device \(device) did not rejoin: \(error)")
      stability.rejoin = nil
      return
    }
    let fresh = devices[device].store.replica
    ledger.rebased(local.context.subtracting(current.context))
    let top = fresh.context.counters(of: fresh.id).maximum
    if top > 0 { ledger.recordDurable(1...top, of: fresh.id, device: device) }
    for key in offlineEdited where !fresh.document.contains(key) {
      statistics.stabilityFailures.append(
        "device \(device) rejoined on device \(peer)'s state without \(key), which its "
          + "offline edits keep alive")
    }
    statistics.stabilityFailures += Self.textsMissing(
      from: fresh, offlineIn: local, of: old, heldBy: current, device: device)
    // Late copies of retired ids' events are dropped on arrival here too.
    devices[device].deviceReplica.dropPending(of: stability.deadIDs)
    statistics.rejoins += 1
    if !rebase.delta.isEmpty { statistics.rejoinsReapplying += 1 }
    stability.retired[device] = false
    stability.generations[device] += 1
    stability.rejoinedAt[device] = now
    stability.cuts[device] = rejoin.stable
    stability.coverings[device] = rejoin.covering
    for index in devices.indices {
      stability.heard[device][index] = false
      stability.heard[index][device] = false
      stability.reports[device][index] = CausalContext()
      stability.reports[index][device] = CausalContext()
    }
    stability.rejoin = nil
    reconnect(device)
  }

  /// At the end (every device back): each retired device rejoins, after handshake
  /// rounds among the members have given every member everything, and a handshake
  /// between every two members has each hear all the others.
  mutating func completeRejoins() {
    guard configuration.hasStability else { return }
    while let device = stability.rejoin?.device
      ?? stability.retired.firstIndex(of: true)
    {
      stability.leftAt[device] = nil
      let members = stability.members
      if let hub = members.first {
        for _ in 0..<(4 + members.count) {
          var changed = false
          for member in members where member != hub {
            changed = finalHandshake(hub, member) || changed
          }
          if !changed { break }
        }
      }
      // Every member hears every other, so that each holds all the members' bounds.
      for (position, a) in members.enumerated() {
        // Both ways: a peer whose context equals the opener's does not answer.
        for b in members[(position + 1)...] {
          _ = finalHandshake(a, b)
          _ = finalHandshake(b, a)
        }
      }
      if stability.rejoin == nil { startRejoin(device) }
      advanceRejoin()
      if stability.retired[device] {
        statistics.stabilityFailures.append(
          "device \(device) could not rejoin at the end of the run")
        stability.retired[device] = false
        stability.rejoin = nil
      }
    }
  }
}

extension SimulationRun {
  /// The characters of the old id `old` that `local` shows and `current` does not hold
  /// integrated (it lacked them, held them waiting or dropped them) that the rebased
  /// replica `fresh` does not show as characters of its fresh id, described: a rejoin
  /// loses none of its device's offline typing. Judged per text field, as multisets of
  /// scalars, on the entities both `local` and `fresh` show.
  static func textsMissing(
    from fresh: Replica, offlineIn local: Document, of old: ReplicaID,
    heldBy current: Document, device: Int
  ) -> [String] {
    var failures: [String] = []
    for key in local.keys where fresh.document.contains(key) {
      for field in local.fieldNames(of: key) {
        guard let mine = local.sequence(of: field, in: key) else { continue }
        let held = Set(current.sequence(of: field, in: key)?.itemOrigins.map(\.id) ?? [])
        var expected: [Unicode.Scalar: Int] = [:]
        var scalars = mine.string.unicodeScalars.makeIterator()
        for item in mine.itemOrigins where !item.isDeleted {
          guard let scalar = scalars.next() else { break }
          if item.id.replica == old, !held.contains(item.id) { expected[scalar, default: 0] += 1 }
        }
        guard !expected.isEmpty else { continue }
        var shown: [Unicode.Scalar: Int] = [:]
        if let text = fresh.document.sequence(of: field, in: key) {
          var scalars = text.string.unicodeScalars.makeIterator()
          for item in text.itemOrigins where !item.isDeleted {
            guard let scalar = scalars.next() else { break }
            if item.id.replica == fresh.id { shown[scalar, default: 0] += 1 }
          }
        }
        let missing = expected.reduce(0) { $0 + Swift.max(0, $1.value - shown[$1.key, default: 0]) }
        if missing > 0 {
          failures.append(
            "device \(device) rejoined without \(missing) characters of \(key).\(field) it "
              + "typed offline that the state it rejoined onto did not hold")
        }
      }
    }
    return failures
  }
}
