import Converge

/// A message between two replicas: bytes made by the sender's session.
struct Message: Sendable {
  /// What the bytes are, for the run's statistics (the receiving session tells them
  /// apart by itself).
  enum Kind: Sendable {
    /// A handshake message (``SyncSession/makeMessage(for:)``).
    case handshake
    /// A transaction's delta, pushed live as a self-contained message.
    case push
    /// A transaction's delta, pushed live as the next frame of the sender's stream.
    case frame
  }

  var from: Int
  var to: Int
  var kind: Kind
  var bytes: [UInt8]
  /// When it was sent (virtual milliseconds): a device learns what its peers have seen
  /// since a retirement only from messages sent after it.
  var sentAt: UInt64 = 0
}

/// Counters of what the network did.
public struct NetworkStatistics: Sendable, Equatable {
  /// Messages handed to the network (including the second copy of duplicates).
  public var sent = 0
  /// Messages the network lost.
  public var lost = 0
  /// Messages the network delivered twice.
  public var duplicated = 0
  /// Messages cut by a partition or an offline device when they arrived.
  public var cut = 0
  /// Messages delivered to a replica.
  public var delivered = 0
  /// Bytes of the messages sent.
  public var bytes = 0
  /// The most messages in flight at once.
  public var maxInFlight = 0
  /// Live pushes a device did not send because it was offline.
  public var heldOffline = 0
}

/// A simulated network: per-link latency, loss, duplication, reordering, partitions and
/// offline devices, all in virtual time and all drawn from one seeded stream.
struct Network: Sendable {
  private var queue = MessageQueue()
  private var random: SimulationRandom
  private let faults: NetworkFaults
  private let messageLimit: Int?
  /// Sends made so far, duplicates not counted: the numbering of ``droppedSends``.
  private var sends = 0
  /// Sends lost whatever the faults draw (``ScheduleCuts/droppedMessages``).
  var droppedSends: Set<Int> = []
  /// Each replica's partition group; replicas talk only within their group.
  private(set) var groups: [Int]
  private var partitionEnds: UInt64 = 0
  /// Until when each replica is offline (virtual milliseconds).
  private(set) var offlineUntil: [UInt64]
  /// Until when each replica is away for longer than a horizon (a device that left, see
  /// ``SimulationConfiguration/leaves``): kept apart from ``offlineUntil`` so that the
  /// ordinary offline draws neither shorten it nor change.
  private(set) var awayUntil: [UInt64]
  /// Per-link extra latency, so some links are slow.
  private let linkLatency: [UInt64]
  private let replicaCount: Int
  var statistics = NetworkStatistics()

  init(replicas: Int, faults: NetworkFaults, messageLimit: Int?, random: SimulationRandom) {
    self.random = random
    self.faults = faults
    self.messageLimit = messageLimit
    self.replicaCount = replicas
    groups = Array(repeating: 0, count: replicas)
    offlineUntil = Array(repeating: 0, count: replicas)
    awayUntil = Array(repeating: 0, count: replicas)
    var links: [UInt64] = []
    for _ in 0..<(replicas * replicas) {
      links.append(UInt64.random(in: 0...40, using: &self.random))
    }
    linkLatency = links
  }

  var inFlight: Int { queue.count }

  func isOnline(_ replica: Int, at now: UInt64) -> Bool {
    offlineUntil[replica] <= now && awayUntil[replica] <= now
  }

  /// Takes `replica` away until `time`.
  mutating func takeAway(_ replica: Int, until time: UInt64) { awayUntil[replica] = time }

  func canTalk(_ a: Int, _ b: Int, at now: UInt64) -> Bool {
    groups[a] == groups[b] && isOnline(a, at: now) && isOnline(b, at: now)
  }

  /// Sends a message at `now`, subject to loss, duplication, latency and reordering.
  mutating func send(_ message: Message, at now: UInt64) {
    if let messageLimit, statistics.sent >= messageLimit { return }
    let index = sends
    sends += 1
    statistics.sent += 1
    statistics.bytes += message.bytes.count
    let lost = random.chance(faults.loss) || droppedSends.contains(index)
    let duplicated = random.chance(faults.duplicate)
    guard !lost else {
      statistics.lost += 1
      return
    }
    let copies = duplicated ? 2 : 1
    if duplicated {
      statistics.duplicated += 1
      statistics.sent += 1
    }
    for _ in 0..<copies {
      var delay = UInt64.random(in: faults.latency, using: &random)
      delay += linkLatency[message.from * replicaCount + message.to]
      if random.chance(faults.reorder) { delay += UInt64.random(in: 100...3_000, using: &random) }
      queue.push(message, at: now + delay)
    }
    statistics.maxInFlight = Swift.max(statistics.maxInFlight, queue.count)
  }

  /// The next message due at or before `now` that is not cut, counting cut ones.
  mutating func nextDelivery(upTo now: UInt64) -> Message? {
    while let (message, time) = queue.popFirst(dueBy: now) {
      guard canTalk(message.from, message.to, at: time) else {
        statistics.cut += 1
        continue
      }
      statistics.delivered += 1
      return message
    }
    return nil
  }

  /// The time of the earliest message in flight.
  var nextDeliveryTime: UInt64? { queue.firstTime }

  /// Possibly starts a partition or takes a device offline; heals expired partitions.
  mutating func step(at now: UInt64) {
    if partitionEnds != 0, now >= partitionEnds { healPartitions() }
    if random.chance(faults.partitions), replicaCount > 1 {
      let groupCount = Int.random(in: 2...Swift.min(3, replicaCount), using: &random)
      for index in groups.indices { groups[index] = Int.random(in: 0..<groupCount, using: &random) }
      partitionEnds = now + UInt64.random(in: 1_000...10_000, using: &random)
    }
    if random.chance(faults.offline) {
      let device = Int.random(in: 0..<replicaCount, using: &random)
      offlineUntil[device] = now + UInt64.random(in: 2_000...30_000, using: &random)
    }
  }

  /// Ends every partition.
  mutating func healPartitions() {
    for index in groups.indices { groups[index] = 0 }
    partitionEnds = 0
  }

  /// Ends every partition and brings every device online.
  mutating func healAll() {
    healPartitions()
    for index in offlineUntil.indices { offlineUntil[index] = 0 }
    for index in awayUntil.indices { awayUntil[index] = 0 }
  }
}

/// Messages ordered by delivery time, ties by sending order (a binary min-heap).
struct MessageQueue: Sendable {
  private struct Entry: Sendable {
    var time: UInt64
    var sequence: UInt64
    var message: Message

    func precedes(_ other: Entry) -> Bool {
      time != other.time ? time < other.time : sequence < other.sequence
    }
  }

  private var heap: [Entry] = []
  private var nextSequence: UInt64 = 0

  var count: Int { heap.count }
  var firstTime: UInt64? { heap.first?.time }

  mutating func push(_ message: Message, at time: UInt64) {
    heap.append(Entry(time: time, sequence: nextSequence, message: message))
    nextSequence += 1
    var child = heap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].precedes(heap[parent]) else { break }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  mutating func popFirst(dueBy now: UInt64) -> (Message, UInt64)? {
    guard let first = heap.first, first.time <= now else { return nil }
    let last = heap.removeLast()
    if !heap.isEmpty {
      heap[0] = last
      var parent = 0
      while true {
        let left = 2 * parent + 1
        let right = left + 1
        var smallest = parent
        if left < heap.count, heap[left].precedes(heap[smallest]) { smallest = left }
        if right < heap.count, heap[right].precedes(heap[smallest]) { smallest = right }
        if smallest == parent { break }
        heap.swapAt(parent, smallest)
        parent = smallest
      }
    }
    return (first.message, first.time)
  }
}
