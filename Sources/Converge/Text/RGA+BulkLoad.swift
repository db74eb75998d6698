/// Building a text from its whole state, as loading a saved document does.
///
/// A text's state lists its insert runs sorted by id (`FORMAT.md`, "RGA text"). Where a
/// run goes depends on its two origins and on the runs already placed between them
/// (FugueMax's order, see ``RGA/apply(_:)``), so the loader integrates the runs through
/// the one integration path, in Lamport order: every origin comes before the runs that
/// name it, and a run typed where nothing concurrent was typed lands at once, without a
/// scan.
///
/// It accepts exactly the states that applying the runs to an empty text accepts: a run
/// that apply would ignore (not younger than an origin, or whose right origin does not
/// follow its origin) has no encoding and is refused.
///
/// - Complexity: O(h (log h + s) + d log d + c) for h insert runs, d delete runs, c
///   scalars of content and s concurrent runs skipped per run.
extension RGA {
  /// The text holding exactly the given runs, as ``apply(_:)`` builds it from an empty
  /// text.
  ///
  /// - Parameters:
  ///   - headers: the insert runs, sorted by id, disjoint, each well formed (checked by
  ///     the reader: counters from 1, no range past `UInt64.max`, Lamport numbers below
  ///     ``lamportLimit``, no origin inside its own run).
  ///   - deletes: the delete runs, well formed.
  ///   - content: the UTF-8 of every scalar no delete run targets, in run order.
  ///   - start: the offset of the text in the message, for errors.
  /// - Throws: `invalidUTF8` or `invalidValue` when the content does not match the runs,
  ///   `invalidValue` for a run the text cannot hold.
  init(
    loading headers: [TextWire.RunHeader], deletes: [RGADelta.Delete],
    content: (bytes: ArraySlice<UInt8>, offset: Int), at start: Int
  ) throws {
    let inserts = try TextWire.attachContent(
      content, to: headers, deleted: TextWire.Targets(deletes))
    self.init()
    apply(RGADelta(inserts: inserts, deletes: deletes))
    for insert in inserts {
      let lower = insert.id.counter
      let upper = lower + UInt64(insert.length)
      guard
        isIntegrated(insert.id)
          || pendingInserts.overlaps(replica: insert.id.replica, lower..<upper)
      else {
        throw ConvergeDecodingError.invalidValue(
          offset: start, reason: "text run the sequence cannot hold")
      }
    }
  }
}
