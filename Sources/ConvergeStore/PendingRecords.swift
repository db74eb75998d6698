import Converge

/// Commits not yet durable: their encoded deltas one after another in one buffer, in
/// commit order, framed as log records only by the sync.
///
/// A commit appends its encoded delta here and keeps nothing else: no array per commit
/// lives until the sync, so typing allocates what it would allocate without a store, and
/// the frames and their checksums are made by the sync (on its queue when it runs in the
/// background). The buffer is handed to the sync whole and comes back empty with its
/// capacity, so a steady typist reuses one buffer.
struct PendingRecords: Sendable {
  /// The encoded deltas, one after another.
  private var payload = ByteWriter()
  var payloadBytes: [UInt8] { payload.bytes }
  /// Where each delta ends in `payloadBytes`.
  private(set) var ends: [Int] = []

  var isEmpty: Bool { ends.isEmpty }
  /// The number of records.
  var count: Int { ends.count }
  /// What the records take in a log, frames included.
  var framedCount: Int { payload.count + ends.count * RecordFrame.headerSize }

  /// Appends `delta`, encoded straight into the buffer (no array of its own).
  ///
  /// - Complexity: O(p) for p bytes, amortized.
  mutating func append(_ delta: DocumentDelta) {
    delta.encode(appendingTo: &payload)
    ends.append(payload.count)
  }

  /// The records framed one after another: what the log receives.
  ///
  /// - Complexity: O(n) for n bytes.
  func framed() -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(framedCount)
    var start = 0
    for end in ends {
      RecordFrame.append(payloadBytes[start..<end], to: &bytes)
      start = end
    }
    return bytes
  }

  /// Each encoded delta, in order, in an array of its own size.
  ///
  /// Copied from a buffer pointer: `Array(payloadBytes[start..<end])` of a slice that
  /// spans the whole buffer (a sync of one commit) would share the buffer, so the app
  /// would hold the whole buffer's capacity per delta, and emptying the buffer for the
  /// next commits would allocate another as large.
  func payloads() -> [[UInt8]] {
    payloadBytes.withUnsafeBufferPointer { buffer in
      var payloads: [[UInt8]] = []
      payloads.reserveCapacity(ends.count)
      var start = 0
      for end in ends {
        payloads.append(Array(buffer[start..<end]))
        start = end
      }
      return payloads
    }
  }

  /// Puts `earlier` (the deltas of older commits) before these.
  mutating func prepend(_ earlier: PendingRecords) {
    let offset = earlier.payload.count
    var joined = ByteWriter(capacity: offset + payload.count)
    joined.writeBytes(earlier.payloadBytes)
    joined.writeBytes(payloadBytes)
    payload = joined
    ends = earlier.ends + ends.map { $0 + offset }
  }

  /// Empties the buffer, keeping its capacity for the next commits.
  mutating func removeAll() {
    payload.removeAll(keepingCapacity: true)
    ends.removeAll(keepingCapacity: true)
  }
}
