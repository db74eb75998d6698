extension FugueMaxReference {
  /// Where `element` goes in `list` (tombstones included) when integrated from its two
  /// origins alone, the way YjsMod does (Gentle's reference-crdts `integrateYjsMod`).
  ///
  /// YjsMod and FugueMax merge identically (diamond-types documents this, and the seeded
  /// tests compare the two on random histories): this is the form a run-length sequence can
  /// use, since it needs no tree and no side. Scanning right from the left origin up to the
  /// right origin, an element with the same left origin and a right origin further left may
  /// still precede the new one (tentatively placed before it while its subtree is skipped);
  /// one with the same origins precedes it when its id is smaller; one with a right origin
  /// further right precedes it; one with a left origin further left ends the scan.
  /// - Precondition: both origins are in `list`.
  public static func integrationIndex(of element: Element, in list: [Element]) -> Int {
    func position(_ id: ID?, absent: Int) -> Int {
      guard let id else { return absent }
      return list.firstIndex { $0.id == id } ?? absent
    }
    let left = position(element.leftOrigin, absent: -1)
    let right = position(element.rightOrigin, absent: list.count)
    var destination = left + 1
    var scanning = false
    var index = left + 1
    while true {
      if !scanning { destination = index }
      if index == list.count || index == right { break }
      let other = list[index]
      let otherLeft = position(other.leftOrigin, absent: -1)
      let otherRight = position(other.rightOrigin, absent: list.count)
      if otherLeft < left { break }
      if otherLeft == left {
        if otherRight < right {
          scanning = true
        } else if otherRight == right {
          if element.id < other.id { break }
          scanning = false
        } else {
          scanning = false
        }
      }
      index += 1
    }
    return destination
  }
}
