/// A list's state or delta, whose item registers carry write timestamps that the
/// receiving replica's clock must observe (``FieldContent``'s `List`).
package protocol ListItemStamps: Sendable, Equatable {
  /// The latest timestamp among the item registers and `latest`.
  func latestTimestamp(after latest: Timestamp?) -> Timestamp?
}

extension [FieldValue: MovableListItem] {
  /// The latest timestamp among the items' registers and `latest`.
  func latestTimestamp(after latest: Timestamp?) -> Timestamp? {
    var latest = latest
    for item in values {
      if let stamp = item.position.stamp {
        latest = Swift.max(latest ?? stamp.timestamp, stamp.timestamp)
      }
    }
    return latest
  }
}

extension MovableList: ListItemStamps {
  package func latestTimestamp(after latest: Timestamp?) -> Timestamp? {
    items.latestTimestamp(after: latest)
  }
}

extension MovableListDelta: ListItemStamps {
  package func latestTimestamp(after latest: Timestamp?) -> Timestamp? {
    items.latestTimestamp(after: latest)
  }
}
