import Converge

extension RGA {
  /// Every item in document order, tombstones included, with the origins it was typed
  /// between, as ``checkNonInterleaving(_:)`` reads a list.
  public var originRecords: [OriginRecord<Dot>] {
    itemOrigins.map {
      OriginRecord(id: $0.id, leftOrigin: $0.leftOrigin, rightOrigin: $0.rightOrigin)
    }
  }

  /// Every item's id in document order, tombstones included, as
  /// ``checkStrongListOrder(observations:final:)`` reads an observation.
  public var itemIDs: [Dot] { itemOrigins.map(\.id) }
}

/// Every text field of `document`, by entity and field name, for the order checks.
public func textFields(of document: Document) -> [(key: EntityKey, field: String, text: RGA)] {
  var result: [(key: EntityKey, field: String, text: RGA)] = []
  for key in document.keys {
    for name in document.fieldNames(of: key) where document.fieldKind(name, of: key) == .text {
      if let text = document.sequence(of: name, in: key) { result.append((key, name, text)) }
    }
  }
  return result
}

/// Checks every text field of a converged document with the non-interleaving checker;
/// returns one readable line per field that fails.
public func nonInterleavingFailures(of document: Document) -> [String] {
  var failures: [String] = []
  for field in textFields(of: document) {
    do {
      try checkNonInterleaving(field.text.originRecords)
    } catch {
      failures.append("text \(field.key)/\(field.field): \(error)")
    }
  }
  return failures
}
