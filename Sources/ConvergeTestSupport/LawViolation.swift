/// A broken algebraic law, found by one of the law checkers: the law's name, the seed of
/// the random case (when it ran under ``forEachSeed(count:base:test:_:)``), and the
/// states involved, printed so the failure can be read and replayed.
public struct LawViolation: Error, CustomStringConvertible {
  /// One state involved in the violation, with its role ("a", "a ⊔ b", …).
  public struct Witness: Sendable {
    /// The state's role in the law, e.g. `"a ⊔ b"`.
    public var label: String
    /// The state, as the checker's `describe` printed it.
    public var state: String

    /// A witness named `label` showing `state`.
    public init(label: String, state: String) {
      self.label = label
      self.state = state
    }
  }

  /// The law, e.g. "join is commutative".
  public var law: String
  /// The seed of the random case, if known.
  public var seed: UInt64?
  /// The test to replay, if known.
  public var test: String?
  /// The states that show the violation.
  public var witnesses: [Witness]

  /// A violation of `law`; ``forEachSeed(count:base:test:_:)`` fills in a missing
  /// `seed` and `test`.
  public init(law: String, seed: UInt64? = nil, test: String? = nil, witnesses: [Witness]) {
    self.law = law
    self.seed = seed
    self.test = test
    self.witnesses = witnesses
  }

  /// The law, the replay command when the seed is known, and every witness, one per
  /// line.
  public var description: String {
    var lines = ["law violated: \(law)"]
    if let seed { lines.append(replayHint(seed: seed, test: test)) }
    for witness in witnesses { lines.append("  \(witness.label) = \(witness.state)") }
    return lines.joined(separator: "\n")
  }
}

/// A failed ``ensure(_:_:)`` check.
public struct ExpectationFailure: Error, CustomStringConvertible {
  /// What was expected.
  public var message: String

  /// A failure with `message`.
  public init(_ message: String) {
    self.message = message
  }

  /// `expectation failed: <message>`.
  public var description: String { "expectation failed: \(message)" }
}

/// An error thrown inside ``forEachSeed(count:base:test:_:)``, with the seed that
/// produced it.
public struct SeededFailure: Error, CustomStringConvertible {
  /// The seed of the failing case.
  public var seed: UInt64
  /// The test that ran it, for `swift test --filter`.
  public var test: String
  /// The error the body threw.
  public var underlying: any Error

  /// The failure of `test` at `seed` with `underlying`.
  public init(seed: UInt64, test: String, underlying: any Error) {
    self.seed = seed
    self.test = test
    self.underlying = underlying
  }

  /// The replay command, then the underlying error.
  public var description: String {
    replayHint(seed: seed, test: test) + "\n\(underlying)"
  }
}

/// Throws an ``ExpectationFailure`` unless `condition` holds: an assertion for code in
/// this target, which cannot import `Testing`, and for bodies run by
/// ``forEachSeed(count:base:test:_:)``, whose thrown failures print their seed.
public func ensure(_ condition: Bool, _ message: @autoclosure () -> String) throws {
  guard condition else { throw ExpectationFailure(message()) }
}

func replayHint(seed: UInt64, test: String?) -> String {
  let filter = test.map { " --filter \($0)" } ?? ""
  return "seed \(seed) — replay with CONVERGE_SEED=\(seed) swift test\(filter)"
}

extension LawViolation {
  /// Throws a violation of `law` whose one witness lists `violations`, labelled with the
  /// case's seed, if there are any.
  public static func throwIfAny(_ violations: [String], of law: String, seed: UInt64) throws {
    guard violations.isEmpty else {
      throw LawViolation(
        law: law,
        witnesses: [.init(label: "seed \(seed)", state: violations.joined(separator: "; "))])
    }
  }
}
