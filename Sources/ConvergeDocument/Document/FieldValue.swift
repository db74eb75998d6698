#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A value stored in a register field or as an element of a set field.
///
/// The cases cover what offline-first apps store in their records: flags, numbers,
/// names, dates, small blobs, and small nested records such as a board position
/// `{x, y, column}`. Values compare structurally; doubles and dates compare by their bit
/// patterns, so `NaN == NaN` and `0.0 != -0.0`. That makes equality, hashing and the
/// wire encoding agree on every device, which a CRDT needs more than IEEE semantics.
public enum FieldValue: Sendable {
  /// No value; an optional property's `nil`.
  case null
  /// A flag.
  case bool(Bool)
  /// A signed 64-bit integer.
  case int(Int64)
  /// A double, compared and stored by its bit pattern.
  case double(Double)
  /// A string, compared by its Unicode scalars.
  case string(String)
  /// A point in time, stored as seconds since 2001 like `Date`.
  case date(Date)
  /// A small blob.
  case bytes([UInt8])
  /// A small nested record, e.g. a board position.
  case record([String: FieldValue])
}

extension FieldValue: Hashable {
  /// Structural equality; doubles and dates compare by bit pattern.
  public static func == (lhs: FieldValue, rhs: FieldValue) -> Bool {
    switch (lhs, rhs) {
    case (.null, .null): true
    case (.bool(let a), .bool(let b)): a == b
    case (.int(let a), .int(let b)): a == b
    case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
    case (.string(let a), .string(let b)): a == b
    case (.date(let a), .date(let b)):
      a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
    case (.bytes(let a), .bytes(let b)): a == b
    case (.record(let a), .record(let b)): a == b
    default: false
    }
  }

  /// Hashes the kind and the value, doubles and dates by bit pattern, consistently
  /// with `==`.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(kind.rawValue)
    switch self {
    case .null: break
    case .bool(let value): hasher.combine(value)
    case .int(let value): hasher.combine(value)
    case .double(let value): hasher.combine(value.bitPattern)
    case .string(let value): hasher.combine(value)
    case .date(let value): hasher.combine(value.timeIntervalSinceReferenceDate.bitPattern)
    case .bytes(let value): hasher.combine(value)
    case .record(let value): hasher.combine(value)
    }
  }

  /// The kinds of values in their canonical order: a kind's raw value is its rank, and
  /// also the value's tag on the wire.
  package enum Kind: UInt8 { case null, bool, int, double, string, date, bytes, record }

  package var kind: Kind {
    switch self {
    case .null: .null
    case .bool: .bool
    case .int: .int
    case .double: .double
    case .string: .string
    case .date: .date
    case .bytes: .bytes
    case .record: .record
    }
  }
}

extension FieldValue: Comparable {
  /// A total order used to list set elements and record keys canonically: by kind, then
  /// by value (strings by their Unicode scalars, doubles and dates by bit pattern).
  public static func < (lhs: FieldValue, rhs: FieldValue) -> Bool {
    if lhs.kind != rhs.kind { return lhs.kind.rawValue < rhs.kind.rawValue }
    switch (lhs, rhs) {
    case (.bool(let a), .bool(let b)): return !a && b
    case (.int(let a), .int(let b)): return a < b
    case (.double(let a), .double(let b)): return a.bitPattern < b.bitPattern
    case (.string(let a), .string(let b)):
      return utf8Precedes(a, b)  // the same order as their scalars
    case (.date(let a), .date(let b)):
      return a.timeIntervalSinceReferenceDate.bitPattern
        < b.timeIntervalSinceReferenceDate.bitPattern
    case (.bytes(let a), .bytes(let b)): return a.lexicographicallyPrecedes(b)
    case (.record(let a), .record(let b)):
      let left = a.sorted { FieldValue.string($0.key) < FieldValue.string($1.key) }
      let right = b.sorted { FieldValue.string($0.key) < FieldValue.string($1.key) }
      return left.lexicographicallyPrecedes(right) { x, y in
        x.key != y.key ? FieldValue.string(x.key) < FieldValue.string(y.key) : x.value < y.value
      }
    default: return false
    }
  }
}

extension FieldValue: CustomStringConvertible {
  /// A short, readable form, records with sorted keys: `{column: "todo", x: 1}`.
  public var description: String {
    switch self {
    case .null: "null"
    case .bool(let value): "\(value)"
    case .int(let value): "\(value)"
    case .double(let value): "\(value)"
    case .string(let value): "\"\(value)\""
    case .date(let value): "date(\(value.timeIntervalSince1970))"
    case .bytes(let value): "bytes(\(value.count))"
    case .record(let value):
      "{"
        + value.sorted { FieldValue.string($0.key) < FieldValue.string($1.key) }
        .map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
    }
  }
}
