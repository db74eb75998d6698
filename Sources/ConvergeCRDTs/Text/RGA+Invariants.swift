import ConvergeCore

/// One maximal run of the logical content, independent of how storage split it.
struct CanonicalRun: Equatable {
  package var replica: ReplicaID
  package var counter: UInt64
  package var lamport: UInt64
  package var origin: Dot?
  package var rightOrigin: Dot?
  package var length: Int
  package var deleted: Bool
}

extension RGA: Equatable {
  /// Two texts are equal when they integrated the same inserts and deletes and buffer
  /// the same ones, whatever the order of delivery and the shape of their storage. The
  /// content of deleted scalars (and of buffered ones a known delete targets) does not
  /// count: it may have been dropped.
  ///
  /// - Complexity: O(n + p + e).
  public static func == (lhs: RGA, rhs: RGA) -> Bool {
    guard lhs.count == rhs.count, lhs.utf16Count == rhs.utf16Count else { return false }
    let left = lhs.canonicalItems()
    let right = rhs.canonicalItems()
    return left.runs == right.runs && left.scalars == right.scalars
      && lhs.canonicalDeleteLog() == rhs.canonicalDeleteLog()
      && lhs.canonicalPending() == rhs.canonicalPending()
  }

  /// Every item in document order, as maximal runs, and every visible scalar.
  func canonicalItems() -> (runs: [CanonicalRun], scalars: [Unicode.Scalar]) {
    var runs: [CanonicalRun] = []
    var scalars: [Unicode.Scalar] = []
    for leafID in leafOrder.documentOrder {
      for run in leaves[leafID].runs {
        if !run.deleted {
          scalars += self.scalars(of: run, from: 0, count: run.length)
        }
        if let last = runs.last, last.replica == run.replica, last.deleted == run.deleted,
          last.counter + UInt64(last.length) == run.counter,
          last.lamport + UInt64(last.length) == run.lamport,
          run.origin == Dot(replica: run.replica, counter: run.counter - 1),
          run.rightOrigin == last.rightOrigin
        {
          runs[runs.count - 1].length += run.length
        } else {
          runs.append(
            CanonicalRun(
              replica: run.replica, counter: run.counter, lamport: run.lamport,
              origin: run.origin, rightOrigin: run.rightOrigin, length: run.length,
              deleted: run.deleted))
        }
      }
    }
    return (runs, scalars)
  }

  /// The delete log joined greedily, one delete dot at a time, so that any split of the
  /// same deletes gives the same list.
  func canonicalDeleteLog() -> [RGADelta.Delete] {
    var result: [RGADelta.Delete] = []
    for (replica, _) in deleteLog.sorted(by: { $0.0 < $1.0 }) {
      var current: RGADelta.Delete?
      for delete in deleteLog[replica] ?? [] {
        guard let open = current else {
          current = delete
          continue
        }
        if let joined = open.joined(with: delete) {
          current = joined
        } else if let joined = open.joined(with: delete.slice(from: 0, count: 1)) {
          result.append(joined)
          current = delete.slice(from: 1, count: delete.count - 1)
        } else {
          result.append(open)
          current = delete
        }
      }
      if let open = current { result.append(open) }
    }
    return result
  }

  /// The buffered inserts sorted by id and joined, without the content of the scalars
  /// a buffered delete targets.
  func canonicalPending() -> [RGADelta.Insert] {
    var result: [RGADelta.Insert] = []
    for insert in pendingInserts.sorted(by: { $0.id < $1.id }) {
      for piece in unresolvedDeletes.splitDroppingTargets(insert) {
        if let last = result.last, last.isContinued(by: piece) {
          result[result.count - 1].append(piece)
        } else {
          result.append(piece)
        }
      }
    }
    return result
  }

  /// Checks the storage's internal consistency; traps on a violation.
  ///
  /// Runs after every mutation when compiled with `-DCONVERGE_INTERNAL_CHECKS`; tests
  /// also call it directly.
  ///
  /// - Complexity: O(n log n).
  public func _checkInvariants() {
    precondition(leafOrder.leafCount == leaves.count, "one position per leaf")
    leafOrder._checkInvariants { leaves[$0].counts }
    var covered: [ReplicaID: UInt64] = [:]
    var totalVisible = 0
    var totalUTF16 = 0
    for leafID in leafOrder.documentOrder {
      let leaf = leaves[leafID]
      precondition(leaf.runs.count <= Self.maxRunsPerLeaf, "leaf over capacity")
      precondition(!leaf.runs.isEmpty || leaves.count == 1, "empty leaf")
      var visible = 0
      var utf16 = 0
      for run in leaf.runs {
        precondition(run.length > 0, "empty run")
        if run.hasContent {
          precondition(run.contentStart >= 0 && run.contentStart + run.utf8 <= content.count)
          var bytes = content[run.contentStart..<run.contentStart + run.utf8].makeIterator()
          var decoder = UTF8()
          var (scalars, units) = (0, 0)
          decoding: while true {
            switch decoder.decode(&bytes) {
            case .scalarValue(let scalar):
              scalars += 1
              units += UTF16.width(scalar)
            case .emptyInput: break decoding
            case .error: preconditionFailure("a run's content is not UTF-8")
            }
          }
          precondition(scalars == run.length, "scalar count of a run's UTF-8")
          precondition(units == run.utf16, "UTF-16 count of a run")
        } else {
          precondition(
            run.deleted && run.utf16 == run.length && run.utf8 == run.length,
            "a run without content")
        }
        precondition(
          leaves.count == 1
            || index[run.replica]?.leaf(containing: run.counter) == leafID
              && index[run.replica]?.leaf(containing: run.counter + UInt64(run.length - 1))
                == leafID,
          "index entry of run \(run.firstID)")
        if let origin = run.origin { precondition(isIntegrated(origin), "origin missing") }
        if let right = run.rightOrigin {
          precondition(isIntegrated(right), "right origin missing")
        }
        covered[run.replica, default: 0] += UInt64(run.length)
        visible += run.visibleLength
        utf16 += run.visibleUTF16
      }
      precondition(
        leafOrder.prefix(of: leafID) == (totalVisible, totalUTF16), "prefix sums of a leaf")
      totalVisible += visible
      totalUTF16 += utf16
    }
    precondition(count == totalVisible && utf16Count == totalUTF16, "total counts")
    precondition(leaves.count > 1 || index.isEmpty, "a text of one leaf keeps no index")
    for (replica, replicaIndex) in index {
      var indexed: UInt64 = 0
      replicaIndex._checkChunks()
      var previous: ReplicaIndex.Entry?
      for entry in replicaIndex.entries {
        precondition(entry.lower < entry.upper, "empty index entry")
        if let previous {
          precondition(previous.upper <= entry.lower, "index entries overlap")
          precondition(
            previous.upper < entry.lower || previous.leaf != entry.leaf, "unjoined index")
        }
        previous = entry
        indexed += entry.upper - entry.lower
      }
      precondition(indexed == covered[replica, default: 0], "index covers exactly the runs")
    }
    pendingInserts.checkInvariants()
    for pending in pendingInserts {
      precondition(!isIntegrated(pending.id), "buffered insert already integrated")
    }
    precondition(
      unresolvedDeletes.isEmpty || unresolvedDeletes.ranges.values.contains { !$0.isEmpty },
      "buffered delete targets held while none is waited for")
    for (replica, ranges) in unresolvedDeletes.ranges {
      for (position, target) in ranges.enumerated() {
        precondition(!target.isEmpty, "empty buffered delete target")
        if position > 0 {
          precondition(ranges[position - 1].upperBound < target.lowerBound, "unjoined targets")
        }
        precondition(
          notIntegrated(of: replica, target.lowerBound, target.upperBound) == [target],
          "buffered delete target is present")
      }
    }
    for (_, log) in deleteLog {
      for (position, delete) in log.enumerated() where position > 0 {
        precondition(
          log[position - 1].dot.counter + log[position - 1].count <= delete.dot.counter,
          "delete log sorted")
      }
    }
  }
}
