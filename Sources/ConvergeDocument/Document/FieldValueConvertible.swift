#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A Swift type an app stores in a register field or a set field.
///
/// Conversions are total in one direction and partial in the other: every value becomes
/// a ``FieldValue``, but a stored value of another kind (written by a different app
/// version, say) converts back to `nil`, and the typed facade then uses the model's
/// default instead of failing.
///
/// Enums with a raw value adopt it with no code:
/// ```swift
/// enum Status: String, FieldValueConvertible { case todo, doing, done }
/// ```
public protocol FieldValueConvertible: Sendable {
  /// The value as stored in the document.
  var fieldValue: FieldValue { get }
  /// The Swift value for a stored value, or `nil` when the stored value does not fit.
  init?(fieldValue: FieldValue)
}

extension String: FieldValueConvertible {
  /// The value as ``FieldValue/string(_:)``.
  public var fieldValue: FieldValue { .string(self) }
  /// The stored value if it is a string; `nil` otherwise.
  public init?(fieldValue: FieldValue) {
    guard case .string(let value) = fieldValue else { return nil }
    self = value
  }
}

extension Bool: FieldValueConvertible {
  /// The value as ``FieldValue/bool(_:)``.
  public var fieldValue: FieldValue { .bool(self) }
  /// The stored value if it is a flag; `nil` otherwise.
  public init?(fieldValue: FieldValue) {
    guard case .bool(let value) = fieldValue else { return nil }
    self = value
  }
}

extension Int64: FieldValueConvertible {
  /// The value as ``FieldValue/int(_:)``.
  public var fieldValue: FieldValue { .int(self) }
  /// The stored value if it is an integer; `nil` otherwise.
  public init?(fieldValue: FieldValue) {
    guard case .int(let value) = fieldValue else { return nil }
    self = value
  }
}

extension Int: FieldValueConvertible {
  /// The value as ``FieldValue/int(_:)``.
  public var fieldValue: FieldValue { .int(Int64(self)) }
  /// The stored value if it is an integer that fits in `Int`; `nil` otherwise.
  public init?(fieldValue: FieldValue) {
    guard case .int(let value) = fieldValue, let exact = Int(exactly: value) else { return nil }
    self = exact
  }
}

extension Double: FieldValueConvertible {
  /// The value as ``FieldValue/double(_:)``.
  public var fieldValue: FieldValue { .double(self) }
  /// The stored value if it is a double, or an integer converted to a double; `nil` otherwise.
  public init?(fieldValue: FieldValue) {
    switch fieldValue {
    case .double(let value): self = value
    case .int(let value): self = Double(value)
    default: return nil
    }
  }
}

extension Date: FieldValueConvertible {
  /// The value as ``FieldValue/date(_:)``.
  public var fieldValue: FieldValue { .date(self) }
  /// The stored value if it is a date; `nil` otherwise.
  public init?(fieldValue: FieldValue) {
    guard case .date(let value) = fieldValue else { return nil }
    self = value
  }
}

extension Data: FieldValueConvertible {
  /// The value as ``FieldValue/bytes(_:)``.
  public var fieldValue: FieldValue { .bytes([UInt8](self)) }
  /// The stored value if it is bytes; `nil` otherwise.
  public init?(fieldValue: FieldValue) {
    guard case .bytes(let value) = fieldValue else { return nil }
    self = Data(value)
  }
}

extension FieldValue: FieldValueConvertible {
  /// The value itself.
  public var fieldValue: FieldValue { self }
  /// Any stored value.
  public init?(fieldValue: FieldValue) { self = fieldValue }
}

extension Optional: FieldValueConvertible where Wrapped: FieldValueConvertible {
  /// `nil` is stored as ``FieldValue/null``.
  public var fieldValue: FieldValue { self?.fieldValue ?? .null }
  /// `nil` for ``FieldValue/null``, the wrapped value if it converts, otherwise a failed
  /// conversion (so the model keeps its default).
  public init?(fieldValue: FieldValue) {
    if case .null = fieldValue {
      self = .none
    } else if let value = Wrapped(fieldValue: fieldValue) {
      self = .some(value)
    } else {
      return nil
    }
  }
}

extension FieldValueConvertible where Self: RawRepresentable, RawValue: FieldValueConvertible {
  /// The raw value, stored as its own ``FieldValue``.
  public var fieldValue: FieldValue { rawValue.fieldValue }
  /// The case whose raw value is stored; `nil` for an unknown raw value (a case added by
  /// a newer app version), so the model keeps its default.
  public init?(fieldValue: FieldValue) {
    guard let raw = RawValue(fieldValue: fieldValue) else { return nil }
    self.init(rawValue: raw)
  }
}

extension EntityKey: FieldValueConvertible {
  /// The key as a one-entry record, `{type: id}`: how a list of tree children and a
  /// parent field (``ParentMove``) name an entity.
  public var fieldValue: FieldValue { .record([type: .string(id)]) }
  /// The key a one-entry record `{type: id}` names; `nil` for any other value.
  public init?(fieldValue: FieldValue) {
    guard case .record(let fields) = fieldValue, fields.count == 1,
      let (type, value) = fields.first, case .string(let id) = value
    else { return nil }
    self.init(type: type, id: id)
  }
}
