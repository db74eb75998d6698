extension RGA {
  /// The leaves of a text by id, the first held inline: almost every text is one leaf (a
  /// note's body, a title), which an array would hold in a block of its own (64 bytes
  /// with its header, for a 24-byte leaf).
  struct LeafList: Sendable, RandomAccessCollection, MutableCollection {
    private var first = Leaf()
    /// Leaves 1, 2, …
    private var rest: [Leaf] = []

    /// One empty leaf.
    init() {}

    /// `leaves`, at least one.
    init(_ leaves: [Leaf]) {
      first = leaves.first ?? Leaf()
      rest = Array(leaves.dropFirst())
    }

    var startIndex: Int { 0 }
    var endIndex: Int { rest.count + 1 }
    var count: Int { rest.count + 1 }

    subscript(leaf: Int) -> Leaf {
      // Yielded, not returned: `leaves[id].runs[i]` reads in place, as an array's does.
      @inline(__always) _read {
        if leaf == 0 {
          yield first
        } else {
          yield rest[leaf - 1]
        }
      }
      @inline(__always) _modify {
        if leaf == 0 {
          yield &first
        } else {
          yield &rest[leaf - 1]
        }
      }
    }

    /// Adds a leaf with the next id.
    mutating func append(_ leaf: Leaf) { rest.append(leaf) }
  }
}
