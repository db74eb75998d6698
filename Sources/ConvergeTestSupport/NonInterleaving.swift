/// One element of a converged list as the non-interleaving checker sees it: its id and the
/// neighbours it was typed between (nil: the start or the end), tombstones included.
public struct OriginRecord<ID: Hashable & Sendable>: Sendable, Hashable {
  public var id: ID
  public var leftOrigin: ID?
  public var rightOrigin: ID?

  public init(id: ID, leftOrigin: ID?, rightOrigin: ID?) {
    self.id = id
    self.leftOrigin = leftOrigin
    self.rightOrigin = rightOrigin
  }
}

/// A way a merged list scrambles concurrent typing, as the checker reports it.
public struct InterleavingViolation<ID: Hashable & Sendable>: Error, Sendable,
  CustomStringConvertible
{
  public enum Kind: String, Sendable {
    /// `intruder` sits between `anchor` and `element`, which was typed right after `anchor`,
    /// yet was itself typed somewhere left of `anchor`.
    case forward
    /// `intruder` sits between `element` and `anchor`, which `element` was typed right
    /// before, yet was itself typed before something right of `anchor`.
    case backward
    /// Two elements typed into the same gap (same origins) are not ordered by id.
    case tie
    /// Two elements changed their relative order at some replica over time.
    case strongList
    /// An origin or observed element is not in the list.
    case unknownElement
  }

  public var kind: Kind
  public var element: ID
  public var anchor: ID? = nil
  public var intruder: ID? = nil

  public var description: String {
    "\(kind.rawValue) interleaving: element \(element), anchor \(anchor.map { "\($0)" } ?? "-"), "
      + "intruder \(intruder.map { "\($0)" } ?? "-")"
  }
}

/// Checks a converged list (every element in order, tombstones included) against the
/// FugueMax paper's non-interleaving conditions (Weidner and Kleppmann, arXiv:2305.00583):
///
/// - forward: if `y` was typed right after `x`, every element between them was typed at a gap
///   that lies between them too (its left origin is `x` or after it);
/// - backward: if `y` was typed right before `x`, every element between them has its right
///   origin at `x` or before it. The paper's unavoidable exception: when `y` was also typed
///   right after its left origin `w`, an element `z` whose left origin lies left of `w` can
///   sit neither between `w` and `y` (forward for `y`) nor, when ties put it after `w`, before
///   `w`; so such a `z`, and the forward passage typed after it, may sit between `y` and `x`;
/// - tie: elements typed into the same gap (same origins) order by id.
///
/// - Complexity: O(n log n) in the elements n, tombstones included.
public func checkNonInterleaving<ID: Hashable & Sendable & Comparable>(
  _ list: [OriginRecord<ID>]
) throws(InterleavingViolation<ID>) {
  var position: [ID: Int] = [:]
  position.reserveCapacity(list.count)
  for (index, record) in list.enumerated() { position[record.id] = index }
  func index(of id: ID?, absent: Int, for record: OriginRecord<ID>) throws(InterleavingViolation<
    ID
  >) -> Int {
    guard let id else { return absent }
    guard let found = position[id] else {
      throw InterleavingViolation(kind: .unknownElement, element: record.id, anchor: id)
    }
    return found
  }
  var lefts: [Int] = []
  var rights: [Int] = []
  for record in list {
    lefts.append(try index(of: record.leftOrigin, absent: -1, for: record))
    rights.append(try index(of: record.rightOrigin, absent: list.count, for: record))
  }
  let leftMinimum = RangeExtremum(lefts, prefers: <)
  for (y, x) in lefts.enumerated() where x >= 0 && x + 1 < y {
    if let z = leftMinimum.index(in: (x + 1)..<y), lefts[z] < x {
      throw InterleavingViolation(
        kind: .forward, element: list[y].id, anchor: list[x].id, intruder: list[z].id)
    }
  }
  // Backward: an element between y and x whose right origin is past x, unless the forward
  // passage it belongs to starts left of y's left origin (moving it before y would put it
  // between y and y's left origin, breaking forward non-interleaving for y).
  let rightMaximum = RangeExtremum(rights, prefers: >)
  for (y, x) in rights.enumerated() where x < list.count && y + 1 < x {
    var ranges = [(y + 1)..<x]
    while let range = ranges.popLast() {
      guard let z = rightMaximum.index(in: range), rights[z] > x else { continue }
      // Where z's forward passage entered the range: follow left origins while inside it.
      var entry = z
      while lefts[entry] > y { entry = lefts[entry] }
      if lefts[entry] >= lefts[y] {
        throw InterleavingViolation(
          kind: .backward, element: list[y].id, anchor: list[x].id, intruder: list[z].id)
      }
      ranges.append(range.lowerBound..<z)
      ranges.append((z + 1)..<range.upperBound)
    }
  }
  var firstInGap: [Pair<ID>: Int] = [:]
  for (index, record) in list.enumerated() {
    let gap = Pair(left: record.leftOrigin, right: record.rightOrigin)
    if let earlier = firstInGap[gap], list[earlier].id > record.id {
      throw InterleavingViolation(
        kind: .tie, element: record.id, anchor: nil, intruder: list[earlier].id)
    }
    firstInGap[gap] = index
  }
}

/// Checks the strong list specification (Attiya et al., PODC 2016) on what replicas saw over
/// time: each observation (one replica's list at one moment, tombstones included) keeps the
/// order of `final`, so no two elements ever swapped places anywhere.
public func checkStrongListOrder<ID: Hashable & Sendable>(
  observations: [[ID]], final: [ID]
) throws(InterleavingViolation<ID>) {
  var position: [ID: Int] = [:]
  for (index, id) in final.enumerated() { position[id] = index }
  for observation in observations {
    var previous: (id: ID, index: Int)?
    for id in observation {
      guard let index = position[id] else {
        throw InterleavingViolation(kind: .unknownElement, element: id)
      }
      if let previous, previous.index >= index {
        throw InterleavingViolation(kind: .strongList, element: id, intruder: previous.id)
      }
      previous = (id, index)
    }
  }
}

private struct Pair<ID: Hashable>: Hashable {
  var left: ID?
  var right: ID?
}

/// A sparse table answering "where is the preferred value in this range" in O(1) after
/// O(n log n) preparation.
private struct RangeExtremum {
  private var levels: [[Int]]
  private let values: [Int]
  private let prefers: (Int, Int) -> Bool

  init(_ values: [Int], prefers: @escaping (Int, Int) -> Bool) {
    self.values = values
    self.prefers = prefers
    levels = [Array(values.indices)]
    var width = 1
    while width * 2 <= values.count {
      let previous = levels[levels.count - 1]
      levels.append(
        (0...(values.count - width * 2)).map { start in
          let a = previous[start]
          let b = previous[start + width]
          return prefers(values[b], values[a]) ? b : a
        })
      width *= 2
    }
  }

  func index(in range: Range<Int>) -> Int? {
    guard !range.isEmpty else { return nil }
    var level = 0
    while 1 << (level + 1) <= range.count { level += 1 }
    let a = levels[level][range.lowerBound]
    let b = levels[level][range.upperBound - (1 << level)]
    return prefers(values[b], values[a]) ? b : a
  }
}
