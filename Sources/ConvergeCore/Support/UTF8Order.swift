/// Whether `lhs` comes before `rhs` in the order of their Unicode scalars: the order of
/// their UTF-8 bytes, which UTF-8 keeps. Compared over the strings' contiguous storage
/// where they have it (every native string), a byte at a time; the `utf8` views' generic
/// comparison cost several times as much.
///
/// `@inlinable` (with ``utf8Equal(_:_:)``, `EntityKey`'s `<` and `fieldNameOrder`): the
/// codec orders every entity key and field name it writes and reads with it, from
/// another module. Measured (`bench --library 1000`, instructions): encoding 207.5 M →
/// 204.9 M, the whole bench 1,521.0 M → 1,512.4 M.
@inlinable package func utf8Precedes(_ lhs: String, _ rhs: String) -> Bool {
  let compared = lhs.utf8.withContiguousStorageIfAvailable { left in
    rhs.utf8.withContiguousStorageIfAvailable { right in
      for index in 0..<Swift.min(left.count, right.count) where left[index] != right[index] {
        return left[index] < right[index]
      }
      return left.count < right.count
    }
  }
  return (compared ?? nil) ?? lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
}

/// Whether `lhs` and `rhs` have the same UTF-8 bytes (not the canonical equivalence of
/// `==`), compared over their contiguous storage as ``utf8Precedes(_:_:)`` compares.
@inlinable package func utf8Equal(_ lhs: String, _ rhs: String) -> Bool {
  let compared = lhs.utf8.withContiguousStorageIfAvailable { left in
    rhs.utf8.withContiguousStorageIfAvailable { right in
      left.count == right.count && !zip(left, right).contains { $0 != $1 }
    }
  }
  return (compared ?? nil) ?? lhs.utf8.elementsEqual(rhs.utf8)
}
