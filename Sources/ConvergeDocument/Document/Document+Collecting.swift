/// Collecting the slot tombstones of a document's list fields at a doubly stable cut.
///
/// A move leaves its old slot as a tombstone (about 10 bytes of state). A stable cut
/// alone does not let a list drop it: a device that saw it deleted may still name it as
/// the right origin of a new slot. Once a *later* stable cut includes the covering
/// context of an earlier one (every event the devices reported when the earlier cut was
/// computed), most tombstones dead in the earlier cut are never named nor reached again
/// (`MovableList+Stability.swift` gives the argument): ``collectListTombstones(at:)``
/// drops them from every list field. ``StableCutHistory`` keeps the cuts a device
/// receives (from the relay's `RelayStableCut`, or ``CausalContext/stableCut(of:seenBy:)``
/// of its peers' reports) and says when one becomes doubly stable.
///
/// A dropped slot that arrives again in an old delta is left out, not taken back:
/// ``apply(_:)`` gives each list only the slots and slot deletes whose events the
/// document's context did not hold before the delta.
///
/// Devices may be retired and rejoin: a retired device's slots that no member holds never
/// arrive under its old id (its messages are refused) and come back through its rebase as
/// new inserts; what members hold of it only waiting is dropped by ``dropPending(of:)``,
/// and a collection leaves out the deletes that gave up (see
/// `ListCollectionRetirementTests` and the simulator's `--stability` runs, which collect).
/// A cut whose covering context holds events only a retired device had never becomes
/// doubly stable. Not yet called by the relay client: the relay's covering context is the
/// union of its active devices' reports, which may lack pushes of a retired device that
/// the relay holds and still sends (`BENCHMARKS.md`, fifteenth session).
extension Document {
  /// Drops the slot tombstones that `cut` lets every list field collect, and returns how
  /// many; nothing unless this document holds the cut's covering context.
  ///
  /// The lists keep the same items in the same order, later edits land where they would
  /// have on a document that kept the slots, and the result is a pure function of the
  /// document and the cut, so documents that collect at one cut and hold the same events
  /// are equal. An entity's version does not change: collecting is not an edit, and sends
  /// nothing (a peer holds every collected slot, or collects it at the same cut).
  ///
  /// - Complexity: O(Σ s log s) over the list fields' s slots each, plus O(e + f) for e
  ///   entities and f fields.
  @discardableResult
  public mutating func collectListTombstones(at cut: DoublyStableCut) -> Int {
    guard context.includes(cut.covering) else { return 0 }
    var collected = 0
    for entity in entities.values.indices {
      let fields = entities.values[entity].fields
      for position in fields.values.indices {
        guard case .list(var list) = fields.values[position] else { continue }
        // A collection may rewrite origins and drop nothing.
        let (dropped, changed) = list.collect(stable: cut.stable)
        guard changed else { continue }
        collected += dropped
        entities.values[entity].fields.values[position] = .list(list)
      }
    }
    #if CONVERGE_INTERNAL_CHECKS
      _checkInvariants()
    #endif
    return collected
  }

  /// `entityDelta` with its list fields' slots and slot deletes that `known` (the
  /// document's context before the delta) names left out: the document holds them, or
  /// collected them (``collectListTombstones(at:)``), which must not bring them back.
  /// Other fields, and a list's items, are untouched (they merge as joins).
  ///
  /// A local edit's slots are not in `known`: the transaction applies its delta before
  /// the context takes its dots.
  ///
  /// - Complexity: O(f) for f fields, plus O(d) for the d slot runs of its lists.
  static func withoutKnownSlots(_ entityDelta: EntityDelta, known: CausalContext) -> EntityDelta {
    let namesKnownSlots = entityDelta.fields.values.contains {
      guard case .list(let list) = $0 else { return false }
      return MovableList.namesAny(of: list.slots, in: known)
    }
    guard namesKnownSlots else { return entityDelta }
    var result = entityDelta
    for position in result.fields.values.indices {
      guard case .list(var list) = result.fields.values[position] else { continue }
      list.slots = MovableList.runs(list.slots, unknownTo: known)
      result.fields.values[position] = .list(list)
    }
    return result
  }
}

/// A stable cut whose covering context a later stable cut includes: what a list may
/// collect its slot tombstones at (``Document/collectListTombstones(at:)``).
///
/// ``stable`` is a stable cut (every device that may still send an edit has seen it) and
/// ``covering`` the union of the reports it was computed from. Once a later stable cut
/// includes ``covering``, every device holds every slot made before its author had seen
/// all of ``stable``, so no slot still to arrive is concurrent with one that names a slot
/// dead in ``stable`` (see `MovableList+Stability.swift`).
public struct DoublyStableCut: Sendable, Equatable {
  /// The earlier stable cut, which lists collect at.
  public let stable: CausalContext
  /// The union of the reports that made ``stable`` stable.
  public let covering: CausalContext

  /// The cut `stable`, whose reports' union is `covering`, if the later stable cut
  /// `later` includes `covering`; otherwise `nil`.
  ///
  /// - Complexity: O(r + g) for r replicas and g gaps in the contexts.
  public init?(stable: CausalContext, covering: CausalContext, coveredBy later: CausalContext) {
    guard later.includes(covering), covering.includes(stable) else { return nil }
    self.stable = stable
    self.covering = covering
  }
}

/// The stable cuts a device has received, and when one of them becomes doubly stable.
///
/// A device notes each stable cut it receives with its covering context (the relay's
/// `RelayStableCut` carries both; without a relay, the meet of the peers' reports and
/// their union). Noted cuts wait until a later cut includes the covering context of one
/// of them; ``note(stable:covering:)`` then returns the latest such cut as a
/// ``DoublyStableCut`` and forgets it and the older ones. At most ``capacity`` cuts wait,
/// the oldest dropped first, so a covering context that never becomes stable (events
/// only a retired device held) holds back no collection for ever. Memory only: a device
/// that restarts starts afresh, which only delays a collection by one cut.
public struct StableCutHistory: Sendable {
  /// The cuts noted and not yet returned, oldest first, each with its covering context.
  public private(set) var waiting: [(stable: CausalContext, covering: CausalContext)] = []
  /// How many cuts wait at most.
  public static let capacity = 8

  /// No cut noted yet.
  public init() {}

  /// Notes the stable cut `stable` whose reports' union is `covering`, and returns the
  /// latest waiting cut whose covering context `stable` includes, if any.
  ///
  /// - Complexity: O(w (r + g)) for w waiting cuts, r replicas and g gaps in the contexts.
  public mutating func note(stable: CausalContext, covering: CausalContext) -> DoublyStableCut? {
    var result: DoublyStableCut?
    if let latest = waiting.lastIndex(where: { stable.includes($0.covering) }) {
      result = DoublyStableCut(
        stable: waiting[latest].stable, covering: waiting[latest].covering, coveredBy: stable)
      waiting.removeFirst(latest + 1)
    }
    waiting.append((stable, covering))
    if waiting.count > Self.capacity { waiting.removeFirst(waiting.count - Self.capacity) }
    return result
  }
}
