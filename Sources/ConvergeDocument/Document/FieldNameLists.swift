/// Lists of field names that entities share: the entities of one type usually have the
/// same fields, so their tables can hold one list instead of a copy each (at 50,000
/// notes, a note's own list of four names was 112 of its bytes).
///
/// A document keeps the last ``capacity`` lists its tables took; a table whose names
/// change takes a held list equal to its new names, if there is one, and a list it
/// built otherwise (which is then held). Sharing only saves memory: a table's names are
/// the same either way, and so are the document's equality and encoding.
///
/// - Complexity: O(``capacity`` · f) name comparisons to find a list of f names.
struct FieldNameLists: Sendable {
  /// How many lists are held: enough for the intermediate lists of a few entity types
  /// built a field at a time, few enough to scan.
  static let capacity = 32

  private var lists: [[String]] = []
  /// The slot the next new list replaces once `lists` is full.
  private var nextSlot = 0

  /// `names` with `name` inserted at `position`: a held list if one is equal to that.
  mutating func inserting(_ name: String, at position: Int, into names: [String]) -> [String] {
    // Names compared by their bytes, not as `String`s: a list holding a canonically
    // equivalent spelling ("e\u{301}" for "é") names other fields, in another order.
    for list in lists where list.count == names.count + 1 && utf8Equal(list[position], name) {
      if list[..<position].elementsEqual(names[..<position], by: utf8Equal)
        && list[(position + 1)...].elementsEqual(names[position...], by: utf8Equal)
      {
        return list
      }
    }
    var inserted = names
    inserted.insert(name, at: position)
    hold(inserted)
    return inserted
  }

  /// A held list equal to `names`, or `names`, which is then held.
  mutating func shared(_ names: [String]) -> [String] {
    if names.isEmpty { return names }
    for list in lists where Self.holdsTheSame(list, names) { return list }
    hold(names)
    return names
  }

  /// Whether `lhs` and `rhs` hold the same names, byte for byte: at once if they are
  /// one list (a decoder's entities share their predecessor's).
  private static func holdsTheSame(_ lhs: [String], _ rhs: [String]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    let same = lhs.withUnsafeBufferPointer { lhs in
      rhs.withUnsafeBufferPointer { lhs.baseAddress == $0.baseAddress }
    }
    return same || lhs.elementsEqual(rhs, by: utf8Equal)
  }

  private mutating func hold(_ list: [String]) {
    if lists.count < Self.capacity {
      lists.append(list)
    } else {
      lists[nextSlot] = list
      nextSlot = (nextSlot + 1) % Self.capacity
    }
  }
}
