import ConvergeCore

/// One item of a text with the origins it was typed between, for the non-interleaving
/// checker of the package's tests, simulator and fuzz targets.
package struct TextItemOrigins: Sendable, Hashable {
  package var id: Dot
  /// The item it was typed after; `nil` is the head of the text.
  package var leftOrigin: Dot?
  /// The item that followed the insertion point; `nil` is the end of the text.
  package var rightOrigin: Dot?
  package var isDeleted: Bool
}

extension RGA {
  /// Every integrated item in document order, tombstones included, with its origins.
  ///
  /// - Complexity: O(n), one record per item.
  package var itemOrigins: [TextItemOrigins] {
    var result: [TextItemOrigins] = []
    for leafID in leafOrder.documentOrder {
      for run in leaves[leafID].runs {
        for offset in 0..<run.length {
          let id = Dot(replica: run.replica, counter: run.counter + UInt64(offset))
          result.append(
            TextItemOrigins(
              id: id,
              leftOrigin: offset == 0
                ? run.origin : Dot(replica: run.replica, counter: id.counter - 1),
              rightOrigin: run.rightOrigin, isDeleted: run.deleted))
        }
      }
    }
    return result
  }
}
