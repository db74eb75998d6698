/// A value held behind one reference, copied before a change while the reference is
/// shared, and absent while empty: for state most instances never fill (a text's inserts
/// waiting for their origin, the blocks of a text that never split), so that those
/// instances pay one word for it instead of the value's inline size.
///
/// The value sits in a `ManagedBuffer`'s header and is read and changed through its
/// pointer, in place: a class's stored property would pay a dynamic exclusivity check
/// at every access, which the blocks of a long text take at every keystroke.
///
/// `@unchecked Sendable`: the value is changed only through a reference known to be
/// unique, so no two threads ever see one box change (as ``TextStorage``).
///
/// `@usableFromInline`, so that its inlinable members are: without it the compiler keeps
/// the bodies of a `package` type's inlinable members out of the module it exports, and
/// the document's presences called them unspecialized, through the runtime's metadata.
@usableFromInline
package struct OutOfLine<Value: Sendable>: @unchecked Sendable {
  @usableFromInline final class Box: ManagedBuffer<Value, UInt8> {}

  @usableFromInline var box: Box?

  /// Empty.
  @inlinable package init() {}

  /// Holding `value`.
  @inlinable package init(_ value: Value) { box = Self.makeBox(value) }

  @inlinable static func makeBox(_ value: Value) -> Box {
    unsafeDowncast(Box.create(minimumCapacity: 0) { _ in value }, to: Box.self)
  }

  /// Whether there is no value.
  @inlinable package var isEmpty: Bool { box == nil }

  /// A copy of the value, or `nil` while empty.
  @inlinable package var value: Value? { read { $0.pointee } }

  /// What `body` returns for the value, which it reads in place through the pointer
  /// (passed as an argument, the value would be copied, arrays retained and all);
  /// `nil` while empty.
  @inlinable @inline(__always)
  package func read<Result>(_ body: (UnsafePointer<Value>) throws -> Result) rethrows -> Result? {
    // Chained, not bound: a bound reference is retained and released at every read.
    try box?.withUnsafeMutablePointerToHeader { try body($0) }
  }

  /// Moves the part at `path` out of the value, leaving `empty` there, so that the
  /// caller holds it alone and edits it in place; `empty` while there is no value (and
  /// no value is made). The caller puts the part back.
  @inlinable @inline(__always)
  package mutating func take<Part>(_ path: WritableKeyPath<Value, Part>, empty: Part) -> Part {
    // Not bound: a bound reference would defeat the uniqueness check.
    guard box != nil else { return empty }
    if !isKnownUniquelyReferenced(&box) { box = Self.makeBox(box.unsafelyUnwrapped.header) }
    var part = empty
    // Made or found unique just above.
    box.unsafelyUnwrapped.withUnsafeMutablePointerToHeader {
      swap(&part, &$0.pointee[keyPath: path])
    }
    return part
  }

  /// Runs `body` on the value in place, made by `initial` first while empty, and copied
  /// first while another instance shares it.
  @inlinable @inline(__always)
  package mutating func update<Result>(
    creating initial: () -> Value, _ body: (inout Value) throws -> Result
  ) rethrows -> Result {
    if !isKnownUniquelyReferenced(&box) { box = Self.makeBox(box?.header ?? initial()) }
    // Made or found unique just above; reached through the stored reference, as a bound
    // one would be retained and released at every change.
    return try box.unsafelyUnwrapped.withUnsafeMutablePointerToHeader { try body(&$0.pointee) }
  }

  /// Drops the value.
  @inlinable package mutating func empty() { box = nil }
}
