import Converge

/// Checks that `join` is a join on the three given states: idempotent, commutative and
/// associative, with results compared by `equivalent`.
///
/// This is the general form, for any state type and any merge (a wrapper with a
/// deliberately wrong merge, a document merged through its encoding); a ``Mergeable``
/// and `Equatable` type uses ``checkJoinLaws(_:_:_:seed:canonicalBytes:)``.
///
/// The states should come from one simulated history (see ``ReplicaNetwork``): states
/// invented independently could reuse a dot for two different events, which no real
/// replicas do.
///
/// - Throws: ``LawViolation`` naming the first law that fails and the states involved.
public func checkJoinLaws<State>(
  _ a: State, _ b: State, _ c: State,
  seed: UInt64? = nil,
  join: (State, State) -> State,
  equivalent: (State, State) -> Bool,
  describe: (State) -> String = { String(describing: $0) }
) throws {
  func violation(_ law: String, _ witnesses: [(String, State)]) -> LawViolation {
    LawViolation(
      law: law, seed: seed,
      witnesses: witnesses.map { .init(label: $0.0, state: describe($0.1)) })
  }
  for (name, state) in [("a", a), ("b", b), ("c", c)] {
    let twice = join(state, state)
    guard equivalent(twice, state) else {
      throw violation("join is idempotent", [(name, state), ("\(name) ⊔ \(name)", twice)])
    }
  }
  for ((leftName, left), (rightName, right)) in [
    (("a", a), ("b", b)), (("b", b), ("c", c)), (("a", a), ("c", c)),
  ] {
    let forward = join(left, right)
    let backward = join(right, left)
    // Both laws below show the pair and its join, then the state that broke them.
    let pair = [(leftName, left), (rightName, right), ("\(leftName) ⊔ \(rightName)", forward)]
    guard equivalent(forward, backward) else {
      throw violation("join is commutative", pair + [("\(rightName) ⊔ \(leftName)", backward)])
    }
    // Joining what is already included changes nothing: x ⊔ (x ⊔ y) = x ⊔ y.
    let absorbed = join(left, forward)
    guard equivalent(absorbed, forward) else {
      throw violation(
        "join is idempotent (absorbs an included state)",
        pair + [("\(leftName) ⊔ (\(leftName) ⊔ \(rightName))", absorbed)])
    }
  }
  let leftFirst = join(join(a, b), c)
  let rightFirst = join(a, join(b, c))
  guard equivalent(leftFirst, rightFirst) else {
    throw violation(
      "join is associative",
      [("a", a), ("b", b), ("c", c), ("(a ⊔ b) ⊔ c", leftFirst), ("a ⊔ (b ⊔ c)", rightFirst)])
  }
}

/// Checks that `merge` is a join on the three given states: idempotent, commutative and
/// associative. Results are compared with `==` and, when `canonicalBytes` is given, also
/// by their encodings, so equal states must encode to equal bytes.
///
/// - Throws: ``LawViolation`` naming the first law that fails and the states involved.
public func checkJoinLaws<State: Mergeable & Equatable>(
  _ a: State, _ b: State, _ c: State,
  seed: UInt64? = nil,
  canonicalBytes: ((State) -> [UInt8])? = nil
) throws {
  try checkJoinLaws(
    a, b, c, seed: seed,
    join: { $0.merging($1) },
    equivalent: { left, right in
      guard left == right else { return false }
      guard let canonicalBytes else { return true }
      return canonicalBytes(left) == canonicalBytes(right)
    })
}

/// Checks the law behind anti-entropy sync: a receiver that merges what `deltaFor`
/// computes for it from the sender ends in the same state as if it had merged the
/// sender's whole state, `receiver ⊔ deltaFor(sender, receiver) ≡ receiver ⊔ sender`.
///
/// - Throws: ``LawViolation`` with the receiver, the sender, the delta and both results.
public func checkDeltaSyncLaw<State>(
  receiver: State, sender: State,
  seed: UInt64? = nil,
  join: (State, State) -> State,
  equivalent: (State, State) -> Bool,
  describe: (State) -> String = { String(describing: $0) },
  deltaFor: (_ sender: State, _ receiver: State) -> State
) throws {
  let delta = deltaFor(sender, receiver)
  let viaDelta = join(receiver, delta)
  let viaState = join(receiver, sender)
  guard equivalent(viaDelta, viaState) else {
    throw LawViolation(
      law: "receiver ⊔ delta-for-receiver = receiver ⊔ sender", seed: seed,
      witnesses: [
        .init(label: "receiver", state: describe(receiver)),
        .init(label: "sender", state: describe(sender)),
        .init(label: "delta", state: describe(delta)),
        .init(label: "receiver ⊔ delta", state: describe(viaDelta)),
        .init(label: "receiver ⊔ sender", state: describe(viaState)),
      ])
  }
}

/// ``checkDeltaSyncLaw(receiver:sender:seed:join:equivalent:describe:deltaFor:)`` for a
/// ``Mergeable`` and `Equatable` type, compared with `==`.
public func checkDeltaSyncLaw<State: Mergeable & Equatable>(
  receiver: State, sender: State, seed: UInt64? = nil,
  deltaFor: (_ sender: State, _ receiver: State) -> State
) throws {
  try checkDeltaSyncLaw(
    receiver: receiver, sender: sender, seed: seed, join: { $0.merging($1) },
    equivalent: (==), deltaFor: deltaFor)
}
