/// One option of a command: its flag and how it sets the command's `Options`. Every command
/// reads its arguments through ``parse(_:into:operands:)``, so a flag, its value and a
/// usage error mean the same thing in all of them.
struct CommandOption<Options> {
  let flag: String
  /// Sets the option, reading its value (if it takes one) from `rest`; false on a usage error.
  private let apply: (inout Options, inout ArraySlice<String>) -> Bool

  /// A flag that takes no value and sets `keyPath` to `value`.
  static func flag(
    _ flag: String, _ keyPath: WritableKeyPath<Options, Bool>, _ value: Bool = true
  ) -> Self {
    Self(flag: flag) { options, _ in
      options[keyPath: keyPath] = value
      return true
    }
  }

  /// A flag followed by a value, read by `value` into `keyPath`; a missing or bad value is
  /// a usage error.
  static func value<Value>(
    _ flag: String, _ keyPath: WritableKeyPath<Options, Value>, _ value: ArgumentValue<Value>
  ) -> Self {
    Self(flag: flag) { options, rest in
      guard let read = rest.popFirst().flatMap(value.read) else { return false }
      options[keyPath: keyPath] = read
      return true
    }
  }

  /// The same for an option that has no default.
  static func value<Value>(
    _ flag: String, _ keyPath: WritableKeyPath<Options, Value?>, _ value: ArgumentValue<Value>
  ) -> Self {
    Self.value(flag, keyPath, ArgumentValue<Value?>(value.read))
  }
}

extension CommandOption {
  /// `arguments` read into `options` by `table`, with the arguments that are not options:
  /// at most `operands` of them, none starting with `-`. Nil on an unknown flag, a missing
  /// or bad value, or one operand too many.
  static func parse(
    _ arguments: [String], into options: Options, _ table: [Self], operands limit: Int = 0
  ) -> (options: Options, operands: [String])? {
    var options = options
    var operands: [String] = []
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      if let option = table.first(where: { $0.flag == argument }) {
        guard option.apply(&options, &rest) else { return nil }
      } else {
        guard operands.count < limit, !argument.hasPrefix("-") else { return nil }
        operands.append(argument)
      }
    }
    return (options, operands)
  }
}

/// How an option's value is read from its argument: nil when it is not one.
struct ArgumentValue<Value> {
  let read: (String) -> Value?

  init(_ read: @escaping (String) -> Value?) {
    self.read = read
  }
}

extension ArgumentValue where Value == String {
  /// Any text, such as a path.
  static var text: Self { .init { $0 } }
}

extension ArgumentValue where Value == Int {
  /// A count or size of at least `minimum`.
  static func count(minimum: Int) -> Self {
    .init { text in Int(text).flatMap { $0 >= minimum ? $0 : nil } }
  }
  /// A count or size of at least one.
  static var positive: Self { count(minimum: 1) }
}

extension ArgumentValue where Value == Double {
  /// A duration in seconds, more than zero.
  static var seconds: Self { .init { text in Double(text).flatMap { $0 > 0 ? $0 : nil } } }
  /// A probability, from 0 to 1.
  static var rate: Self { .init { text in Double(text).flatMap { $0 >= 0 && $0 <= 1 ? $0 : nil } } }
}

extension ArgumentValue where Value == UInt64 {
  /// A seed or any other unsigned 64-bit number.
  static var number: Self { .init { UInt64($0) } }
}
