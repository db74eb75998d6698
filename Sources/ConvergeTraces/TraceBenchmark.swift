import Converge

/// The measurements of `converge bench` on a sequential trace, as in the design's
/// performance table. Every figure comes from running the library; nothing is assumed.
public struct TraceBenchmarkReport: Sendable {
  public var trace: String
  public var edits: Int
  public var typedCharacters: Int
  /// Replaying every patch through a ``SharedText`` (no deltas), best of the runs.
  public var replayMilliseconds: Double
  /// One ``Replica`` transaction per patch, each delta encoded: time per edit.
  public var replayWithDeltasMicrosecondsPerEdit: Double
  /// Bytes of that replay's deltas, as live-push frames of a ``SyncSession``, divided by
  /// the characters typed.
  public var deltaBytesPerCharacter: Double
  /// The same bytes divided by the number of edits.
  public var deltaBytesPerEdit: Double
  /// Bytes per edit when each delta is a self-contained message instead
  /// (``DocumentDelta/encoded()``, what a stateless relay or a file stores).
  public var selfContainedDeltaBytesPerEdit: Double
  /// Whether a peer that decoded every frame ended with the same document.
  public var framesConverged: Bool
  /// The encoded state of the final replica.
  public var stateBytes: Int
  /// Decoding the state into a fresh replica, median of the runs.
  public var loadMilliseconds: Double
  /// Two replicas forked at the trace's middle exchange one delta each: the time of the
  /// two applies, median of the runs.
  public var mergeMilliseconds: Double
  /// Whether both merged replicas are byte-identical and, markers removed, equal the
  /// trace's end content.
  public var mergeConverged: Bool
  /// Decoding and applying one remote single-edit delta, median.
  public var applySmallDeltaMicroseconds: Double
  /// Whether the replays ended with the trace's end content.
  public var matchesEndContent: Bool
}

extension SequentialTrace {
  public static let benchKey = EntityKey(type: "trace", id: "document")
  public static let benchField = "text"
  /// A private-use scalar that concurrent edits insert in the merge benchmark.
  static let marker: Unicode.Scalar = "\u{E000}"

  /// Runs every measurement of the design's performance table on this trace.
  public func benchmark(name: String, runs: Int = 5) throws -> TraceBenchmarkReport {
    let clock = ContinuousClock()
    let runs = Swift.max(1, runs)
    let typed = patches.reduce(0) { $0 + $1.inserted.count }

    // 1. Local replay through a SharedText.
    var replayTimes: [Double] = []
    var matches = true
    for _ in 0..<runs {
      let start = clock.now
      let text = replayLocally()
      replayTimes.append(milliseconds(clock.now - start))
      matches = matches && text.string == endContent
    }

    // 2. One transaction per edit, each delta encoded as it goes on the wire: a live push
    // of a sync session.
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    var frames: [[UInt8]] = []
    let deltaStart = clock.now
    let deltaBytes = replayWithDeltas(into: &replica, frames: &frames)
    let deltaTime = clock.now - deltaStart
    matches = matches && replica.document.text(of: Self.benchField, in: Self.benchKey) == endContent
    // Not timed: the frames must rebuild the document on a peer, and the self-contained
    // form is measured for comparison.
    var peer = Replica(id: ReplicaID(rawValue: 2), wallClock: .fixed(0))
    var peerSession = SyncSession()
    for frame in frames { try peerSession.receive(encoded: frame, into: &peer) }
    let framesConverged = peer.document == replica.document
    frames = []
    var selfContained = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    var selfContainedBytes = 0
    for patch in patches { selfContainedBytes += apply(patch, to: &selfContained).count }

    // 3. State size and load time.
    let state = replica.encodedState()
    var loadTimes: [Double] = []
    for _ in 0..<runs {
      let start = clock.now
      let restored = try Replica(restoring: state, wallClock: .fixed(0))
      loadTimes.append(milliseconds(clock.now - start))
      matches = matches && restored.document == replica.document
    }

    // 4. Merge of two offline halves, median of the runs, each on freshly built forks.
    var mergeTimes: [Double] = []
    var converged = true
    for _ in 0..<runs {
      let (time, runConverged) = try mergeHalves()
      mergeTimes.append(time)
      converged = converged && runConverged
    }

    // 5. Applying small remote deltas to the full document.
    let smallTimes = try Self.applySmallDeltas(smallDeltas(to: replica, count: 200), to: &replica)

    return TraceBenchmarkReport(
      trace: name, edits: patches.count, typedCharacters: typed,
      replayMilliseconds: replayTimes.min() ?? 0,
      replayWithDeltasMicrosecondsPerEdit: milliseconds(deltaTime) * 1000
        / Double(Swift.max(1, patches.count)),
      deltaBytesPerCharacter: Double(deltaBytes) / Double(Swift.max(1, typed)),
      deltaBytesPerEdit: Double(deltaBytes) / Double(Swift.max(1, patches.count)),
      selfContainedDeltaBytesPerEdit: Double(selfContainedBytes)
        / Double(Swift.max(1, patches.count)),
      framesConverged: framesConverged,
      stateBytes: state.count,
      loadMilliseconds: median(loadTimes),
      mergeMilliseconds: median(mergeTimes),
      mergeConverged: converged,
      applySmallDeltaMicroseconds: median(smallTimes),
      matchesEndContent: matches)
  }

  /// The timed part of the per-edit measurement: one transaction per patch, each pushed
  /// as a session frame into `frames`. Returns the frames' bytes. Kept apart so that a
  /// profiler can count its instructions alone (`converge bench --only deltas`).
  @inline(never)
  public func replayWithDeltas(into replica: inout Replica, frames: inout [[UInt8]]) -> Int {
    var session = SyncSession()
    frames.reserveCapacity(patches.count)
    var deltaBytes = 0
    for patch in patches {
      let frame = session.pushEncoded(
        replica.transact { Self.edit(patch, in: &$0) }, from: replica)
      deltaBytes += frame.count
      frames.append(frame)
    }
    return deltaBytes
  }

  /// The timed part of the local replay: every patch through a ``SharedText``.
  public func replayLocally() -> SharedText {
    var text = SharedText(replica: ReplicaID(rawValue: 1))
    for patch in patches {
      text.edit(at: patch.position, deleting: patch.deleted, inserting: patch.inserted)
    }
    return text
  }

  /// The timed part of the small-delta measurement: each delta decoded and applied on
  /// its own, with its time in microseconds.
  @inline(never)
  public static func applySmallDeltas(_ deltas: [[UInt8]], to replica: inout Replica) throws
    -> [Double]
  {
    let clock = ContinuousClock()
    var times: [Double] = []
    for bytes in deltas {
      let start = clock.now
      _ = try replica.apply(encodedDelta: bytes)
      times.append(milliseconds(clock.now - start) * 1000)
    }
    return times
  }

  /// Runs only the per-edit replay with frames, untimed, for a profiler
  /// (`converge bench TRACE --only deltas`). Returns whether it ended with the trace's
  /// end content.
  public func profileReplayWithDeltas() -> Bool {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    var frames: [[UInt8]] = []
    _ = replayWithDeltas(into: &replica, frames: &frames)
    return replica.document.text(of: Self.benchField, in: Self.benchKey) == endContent
  }

  /// Runs only the merge of two offline halves, for a profiler
  /// (`converge bench TRACE --only merge`; the exchange is `SequentialTrace.exchange`).
  /// Returns whether the halves converged on the trace's end content.
  public func profileMerge() -> Bool {
    (try? mergeHalves())?.converged ?? false
  }

  /// Runs only the small-delta applies of the benchmark, for a profiler
  /// (`converge bench TRACE --only small`), on the trace's end state built in one
  /// transaction. Returns whether every delta applied.
  public func profileSmallDeltas(repeating rounds: Int = 10) -> Bool {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    replica.transact { tx in
      for patch in patches { Self.edit(patch, in: &tx) }
    }
    let deltas = smallDeltas(to: replica, count: 200 * Swift.max(1, rounds))
    return (try? Self.applySmallDeltas(deltas, to: &replica)) != nil
  }

  /// `count` encoded single-character edits that a fork of `replica` types at positions
  /// spread over the document.
  private func smallDeltas(to replica: Replica, count: Int) -> [[UInt8]] {
    var sender = replica.forked(as: ReplicaID(rawValue: 2))
    return (0..<count).map { index in
      let position = (index * 7919) % Swift.max(1, endContent.unicodeScalars.count)
      return sender.transact {
        $0.insertText("x", at: position, in: Self.benchField, of: Self.benchKey)
      }.delta.encoded()
    }
  }

  /// The timed part of the merge measurement: each replica applies the other's delta.
  /// Kept apart so that a profiler can count its instructions alone.
  @inline(never)
  static func exchange(
    _ a: inout Replica, _ fromB: [UInt8], _ b: inout Replica, _ fromA: [UInt8]
  ) throws {
    _ = try a.apply(encodedDelta: fromB)
    _ = try b.apply(encodedDelta: fromA)
  }

  /// Applies one patch as a transaction and returns its encoded delta.
  private func apply(_ patch: TracePatch, to replica: inout Replica) -> [UInt8] {
    replica.transact { Self.edit(patch, in: &$0) }.delta.encoded()
  }

  /// Types one patch into the benchmark's text field.
  public static func edit(_ patch: TracePatch, in tx: inout DocumentTransaction) {
    patch.apply(in: &tx, field: benchField, of: benchKey)
  }

  /// Forks at the middle: A applies the second half of the trace while B concurrently
  /// inserts a marker at each position the first half edited. Each then applies the
  /// other's delta; the time of those two applies (decoding included) is returned.
  private func mergeHalves() throws -> (milliseconds: Double, converged: Bool) {
    let middle = patches.count / 2
    // The common history, with its tombstones, as one transaction.
    var base = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    base.transact { tx in
      for patch in patches[..<middle] { Self.edit(patch, in: &tx) }
    }
    let fork = base.context
    var a = base.forked(as: ReplicaID(rawValue: 10))
    var b = base.forked(as: ReplicaID(rawValue: 11))
    a.transact { tx in
      for patch in patches[middle...] { Self.edit(patch, in: &tx) }
    }
    b.transact { tx in
      for patch in patches[..<middle] {
        tx.insertText(
          String(Self.marker), at: patch.position, in: Self.benchField, of: Self.benchKey)
      }
    }
    let fromA = a.delta(since: fork).encoded()
    let fromB = b.delta(since: fork).encoded()
    let clock = ContinuousClock()
    let start = clock.now
    try Self.exchange(&a, fromB, &b, fromA)
    let elapsed = milliseconds(clock.now - start)
    let text = a.document.text(of: Self.benchField, in: Self.benchKey)
    let unmarked = String(
      String.UnicodeScalarView(text.unicodeScalars.filter { $0 != Self.marker }))
    let converged = a.encodedState() == b.encodedState() && unmarked == endContent
    return (elapsed, converged)
  }
}

/// `duration` in milliseconds, for the benchmarks' figures.
extension TracePatch {
  /// Types this patch into text `field` of `key`: its deletion, then its insertion.
  func apply(in tx: inout DocumentTransaction, field: String, of key: EntityKey) {
    apply(in: &tx, field: field, of: key, inserting: String(String.UnicodeScalarView(inserted)))
  }
}

package func milliseconds(_ duration: Duration) -> Double {
  let (seconds, attoseconds) = duration.components
  return Double(seconds) * 1000 + Double(attoseconds) / 1e15
}

private func median(_ values: [Double]) -> Double {
  let sorted = values.sorted()
  return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}
