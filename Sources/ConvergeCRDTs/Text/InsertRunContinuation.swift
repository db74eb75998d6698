import ConvergeCore

/// The one rule by which a run of inserted scalars continues another, so that the two are
/// one run: the text's storage (``RGA/canJoin(_:_:)``), a delta's runs
/// (``RGADelta/Insert/isContinued(by:)``) and the wire's (the codec's `TextWire.continues`,
/// which an encoder joins and a decoder refuses unjoined) all ask it, each adding only
/// what its own form keeps beside the ids (content, a tombstone flag).
///
/// A run continues the run of `length` ids from `id` when it holds the next ids of the
/// same replica with the next Lamport numbers, its left origin is that run's last id and
/// its right origin is that run's: its scalars were typed forward at the same place, one
/// after another. Ids and Lamport numbers are checked for overflow, since remote runs may
/// carry any counters.
///
/// Inlinable: the storage asks it at every keystroke, the codec for every run it writes.
@usableFromInline
package enum InsertRunContinuation {
  @inlinable @inline(__always)
  package static func continues(
    id: Dot, lamport: UInt64, length: Int, rightOrigin: Dot?,
    by next: (id: Dot, lamport: UInt64, origin: Dot?, rightOrigin: Dot?)
  ) -> Bool {
    let count = UInt64(truncatingIfNeeded: length)
    let (end, idOverflow) = id.counter.addingReportingOverflow(count)
    let (lamportEnd, lamportOverflow) = lamport.addingReportingOverflow(count)
    guard length > 0, !idOverflow, !lamportOverflow, next.id.replica == id.replica else {
      return false
    }
    let last = Dot(replica: id.replica, counter: end &- 1)
    return next.id.counter == end && next.lamport == lamportEnd && next.origin == last
      && next.rightOrigin == rightOrigin
  }
}
