import ConvergeCore

extension RGA {
  /// The delta of the local events `counters` of `replica`, in normal form: the runs the
  /// text holds with those ids (a later delete does not change an insert) and the
  /// deletes the delete log holds with those dots. A document's transaction sends this
  /// for the text edits it made, built once when it is done with the field instead of a
  /// delta an edit joined and sorted at commit; the items are the same, and so is the
  /// normal form.
  ///
  /// Read straight into normal form: the pieces of the text's runs in counter order (one
  /// replica's local inserts ascend in both id and Lamport number, so that is the normal
  /// order; checked in one pass, sorted only if not), each joined to the one before when
  /// it continues it, and the scalars of them all decoded into one buffer that the
  /// inserts share as slices. Read as an array of scalars a run and joined afterwards,
  /// the automerge-paper trace typed in one transaction spent 165 instructions an edit
  /// here: an allocation a run, the runs sorted, and most of them joined again.
  ///
  /// - Complexity: O(log n + k + s) for the k runs and deletes of those events and their
  ///   s scalars, plus a leaf's runs for each of the index's ranges they lie in.
  package func delta(of replica: ReplicaID, counters: ClosedRange<UInt64>) -> RGADelta {
    let lower = counters.lowerBound
    // No item has the counter `UInt64.max` (its run would end past the counter space).
    let upper = counters.upperBound == .max ? .max : counters.upperBound + 1
    var pieces: [Run] = []
    if leaves.count == 1 {
      appendPieces(of: replica, lower: lower, upper: upper, leaf: 0, to: &pieces)
    } else {
      lookups.read { lookups in
        guard let index = lookups.pointee.index[replica] else { return }
        // A piece or more for each range (the deletes among a range's items split its
        // runs: 1.84 a range in the automerge-paper trace typed in one transaction):
        // room for two each, counted first, instead of the array doubling its 88-byte
        // runs into place as it grows.
        var ranges = 0
        index.forEachEntry(overlapping: lower, upper) { _ in ranges += 1 }
        pieces.reserveCapacity(2 * ranges)
        index.forEachEntry(overlapping: lower, upper) { entry in
          appendPieces(
            of: replica, lower: Swift.max(lower, entry.lower),
            upper: Swift.min(upper, entry.upper), leaf: entry.leaf, to: &pieces)
        }
      }
    }
    pieces.sortIfNeeded { ($0.lamport, $0.counter) < ($1.lamport, $1.counter) }
    var delta = RGADelta()
    delta.inserts = joinedInserts(of: pieces)
    delta.deletes = deletes(of: replica, counters: counters)
    delta.normalizeDeletes()
    return delta
  }

  /// Appends the pieces of the runs of `leaf` that hold the items `lower..<upper` of
  /// `replica`, in counter order (a leaf holds its runs in document order).
  private func appendPieces(
    of replica: ReplicaID, lower: UInt64, upper: UInt64, leaf: Int, to pieces: inout [Run]
  ) {
    let first = pieces.count
    // Each run's replica and ids read in place, and a run that holds none of the items
    // passed over with two comparisons: a leaf is scanned once for each of the index's
    // ranges in it, and most of its runs are another range's. `for run in` copied every
    // run (88 bytes) to compare it, 33 instructions a run, most of the read-back's own.
    leaves[leaf].runs.withUnsafeBufferPointer { runs in
      for index in runs.indices {
        let counter = runs[index].counter
        guard runs[index].replica == replica, counter < upper,
          counter >= lower || lower - counter < UInt64(runs[index].length)
        else { continue }
        let from = Swift.max(lower, counter)
        let to = Swift.min(upper, counter + UInt64(runs[index].length))
        pieces.append(piece(of: runs[index], from: Int(from - counter), count: Int(to - from)))
      }
    }
    // The few found here, shifted into place: usually in order already.
    guard pieces.count - first > 1 else { return }
    pieces.withUnsafeMutableBufferPointer { buffer in
      for index in first + 1..<buffer.count {
        let piece = buffer[index]
        var slot = index
        while slot > first, piece.counter < buffer[slot - 1].counter {
          buffer[slot] = buffer[slot - 1]
          slot -= 1
        }
        buffer[slot] = piece
      }
    }
  }

  /// The items of `run` from its item `offset`, `length` of them, as a run of their own:
  /// its ids, Lamport numbers and origins, and where its bytes lie in `content` (its
  /// UTF-16 count is not kept: only ``joinedInserts(of:)`` reads it).
  private func piece(of run: Run, from offset: Int, count length: Int) -> Run {
    guard offset > 0 || length < run.length else { return run }
    var piece = run
    let step = UInt64(offset)
    piece.counter += step
    piece.lamport += step
    if offset > 0 { piece.origin = Dot(replica: run.replica, counter: run.counter + step - 1) }
    piece.length = length
    guard run.hasContent else {
      piece.utf8 = length
      return piece
    }
    let through = offset + length
    let start: Int
    let end: Int
    if through == run.length {
      // A run's tail (typing that continued the run) is found from the run's end:
      // counting from its start would walk the whole run.
      end = run.contentStart + run.utf8
      start = startOfLastScalars(length, endingAt: end)
    } else {
      start = run.contentStart + prefixCounts(of: run, scalars: offset).utf8
      end = run.contentStart + prefixCounts(of: run, scalars: through).utf8
    }
    piece.contentStart = start
    piece.utf8 = end - start
    return piece
  }

  /// `pieces`, in normal order, as inserts: each joined to the one before when it
  /// continues it (``InsertRunContinuation``, with content exactly when that has), their
  /// scalars slices of one buffer.
  private func joinedInserts(of pieces: [Run]) -> [RGADelta.Insert] {
    var scalarCount = 0
    for piece in pieces where piece.hasContent { scalarCount += piece.length }
    let scalars = [Unicode.Scalar](unsafeUninitializedCapacity: scalarCount) {
      buffer, written in
      content.withUnsafeBufferPointer { content in
        for piece in pieces where piece.hasContent {
          let bytes = UnsafeBufferPointer(
            rebasing: content[piece.contentStart..<piece.contentStart + piece.utf8])
          if piece.utf8 == piece.length, bytes.count <= buffer.count - written {
            // A byte a scalar: ASCII, each byte widened as it is (a loop the compiler
            // vectorizes) instead of decoded, 12 instructions a scalar.
            for offset in bytes.indices {
              buffer.initializeElement(at: written &+ offset, to: Unicode.Scalar(bytes[offset]))
            }
            written &+= bytes.count
            continue
          }
          UTF8Scalars.forEachScalar(of: bytes) { scalar in
            guard written < buffer.count else { return }
            buffer.initializeElement(at: written, to: scalar)
            written &+= 1
          }
        }
      }
    }
    var inserts: [RGADelta.Insert] = []
    inserts.reserveCapacity(pieces.count)  // at most one a piece
    guard var joined = pieces.first else { return inserts }
    var joinedStart = 0
    func append(_ run: Run, from start: Int) {
      guard run.hasContent else {
        inserts.append(
          RGADelta.Insert(
            id: run.firstID, lamport: run.lamport, origin: run.origin,
            rightOrigin: run.rightOrigin, droppedLength: run.length))
        return
      }
      // Clamped: the content's scalars match the runs' lengths (an invariant).
      let end = Swift.min(start + run.length, scalars.count)
      inserts.append(
        RGADelta.Insert(
          id: run.firstID, lamport: run.lamport, origin: run.origin,
          rightOrigin: run.rightOrigin, content: scalars[Swift.min(start, end)..<end]))
    }
    for piece in pieces.dropFirst() {
      if piece.hasContent == joined.hasContent,
        InsertRunContinuation.continues(
          id: joined.firstID, lamport: joined.lamport, length: joined.length,
          rightOrigin: joined.rightOrigin,
          by: (piece.firstID, piece.lamport, piece.origin, piece.rightOrigin))
      {
        joined.length += piece.length
        continue
      }
      append(joined, from: joinedStart)
      if joined.hasContent { joinedStart += joined.length }
      joined = piece
    }
    append(joined, from: joinedStart)
    return inserts
  }

  /// The deletes of the delete log with the dots `counters` of `replica`, sorted by dot.
  private func deletes(of replica: ReplicaID, counters: ClosedRange<UInt64>)
    -> [RGADelta.Delete]
  {
    var deletes: [RGADelta.Delete] = []
    lookups.read { lookups in
      guard let log = lookups.pointee.deleteLog[replica] else { return }
      let lower = counters.lowerBound
      var position = log.partitioningIndex { $0.dot.counter + $0.count > lower }
      while position < log.count, log[position].dot.counter <= counters.upperBound {
        let delete = log[position]
        let from = Swift.max(lower, delete.dot.counter)
        let to = Swift.min(counters.upperBound, delete.dot.counter + (delete.count - 1))
        deletes.append(delete.slice(from: from - delete.dot.counter, count: to - from + 1))
        position += 1
      }
    }
    return deletes
  }
}
