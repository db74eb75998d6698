import Converge

/// How deltas travel between the agents of a replay: in memory, or encoded to bytes
/// and decoded again as a real network would carry them.
public struct DeltaTransport: Sendable {
  /// Carries a delta and reports the bytes it took (0 when nothing is encoded).
  public var carry: @Sendable (DocumentDelta) throws -> (delta: DocumentDelta, bytes: Int)

  public init(
    carry: @escaping @Sendable (DocumentDelta) throws -> (delta: DocumentDelta, bytes: Int)
  ) {
    self.carry = carry
  }

  /// Hands the delta over as a value.
  public static let inMemory = DeltaTransport { ($0, 0) }

  /// Encodes the delta to bytes and decodes it on the other side, as a network would.
  public static let encoded = DeltaTransport { delta in
    let bytes = delta.encoded()
    return (try DocumentDelta(decoding: bytes), bytes.count)
  }
}

/// The outcome of replaying a concurrent trace.
public struct ConcurrentReplayResult: Sendable {
  /// Each agent's final text, after every agent received everything.
  public var finalTexts: [String]
  /// Whether every agent ends with the trace's `endContent`.
  public var matchesEndContent: Bool
  /// Wall time of the whole replay, in nanoseconds.
  public var replayNanoseconds: UInt64
  /// The part of it spent applying other agents' deltas, in nanoseconds.
  public var mergeNanoseconds: UInt64
  /// Bytes carried by the transport.
  public var deltaBytes: Int
  /// The agents' replicas at the end.
  public var replicas: [Replica]
}

extension ConcurrentTrace {
  /// The entity and field a replay types into.
  public static let documentKey = EntityKey(type: "trace", id: "document")
  public static let textField = "text"

  /// Replays the trace with one ``Replica`` per agent: before each transaction its agent
  /// receives the deltas of every ancestor it lacks (so it types on the merge of the
  /// transaction's parents), then types the patches as one transaction whose delta
  /// goes through `transport`. At the end every agent receives everything.
  ///
  /// - Complexity: O(T · A) deltas applied at most, for T transactions and A agents.
  public func replay(transport: DeltaTransport = .inMemory) throws -> ConcurrentReplayResult {
    let clock = ContinuousClock()
    let started = clock.now
    var mergeTime = Duration.zero
    var bytes = 0
    var replicas = (0..<agentCount).map { agent in
      Replica(id: ReplicaID(rawValue: UInt64(agent) + 1), wallClock: .fixed(0))
    }
    var applied = Array(
      repeating: [Bool](repeating: false, count: transactions.count), count: agentCount)
    var deltas: [DocumentDelta] = []
    deltas.reserveCapacity(transactions.count)
    let key = Self.documentKey
    let field = Self.textField

    for (index, transaction) in transactions.enumerated() {
      let agent = transaction.agent
      let missing = missingAncestors(of: transaction.parents, applied: applied[agent])
      let mergeStart = clock.now
      for ancestor in missing {
        replicas[agent].apply(deltas[ancestor])
        applied[agent][ancestor] = true
      }
      mergeTime += clock.now - mergeStart
      let commit = replicas[agent].transact { tx in
        for patch in transaction.patches { patch.apply(in: &tx, field: field, of: key) }
      }
      let carried = try transport.carry(commit.delta)
      bytes += carried.bytes
      deltas.append(carried.delta)
      applied[agent][index] = true
    }

    let mergeStart = clock.now
    for agent in replicas.indices {
      for index in transactions.indices where !applied[agent][index] {
        replicas[agent].apply(deltas[index])
      }
    }
    mergeTime += clock.now - mergeStart
    let texts = replicas.map { $0.document.text(of: field, in: key) }
    return ConcurrentReplayResult(
      finalTexts: texts,
      matchesEndContent: texts.allSatisfy { $0 == endContent },
      replayNanoseconds: (clock.now - started).nanoseconds,
      mergeNanoseconds: mergeTime.nanoseconds,
      deltaBytes: bytes,
      replicas: replicas)
  }

  /// The ancestors of `parents` (themselves included) not yet applied, in index order,
  /// which is a causal order because parents always precede their children.
  private func missingAncestors(of parents: [Int], applied: [Bool]) -> [Int] {
    var seen = Set<Int>()
    var stack = parents.filter { !applied[$0] }
    while let next = stack.popLast() {
      guard seen.insert(next).inserted else { continue }
      for parent in transactions[next].parents where !applied[parent] && !seen.contains(parent) {
        stack.append(parent)
      }
    }
    return seen.sorted()
  }
}

extension Duration {
  var nanoseconds: UInt64 {
    let (seconds, attoseconds) = components
    return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
  }
}
