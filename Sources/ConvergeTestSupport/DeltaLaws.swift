import Converge

/// Checks delta decomposition on a run of random mutations.
///
/// Starting from `subject` (a state, or a simulated replica that owns one), `mutate` is
/// called `steps` times; each call changes the subject and returns the delta it made.
/// Then, comparing with `equivalent`:
/// 1. `previous ⊔ delta ≡ next` for every step (the delta is the mutation);
/// 2. `next ⊔ delta ≡ next` (re-applying a delta changes nothing);
/// 3. the deltas, shuffled, joined into random groups (`d1 ⊔ d2 ⊔ …`) and applied to the
///    first state in random order, give the last state;
/// 4. the first state joined with a `concurrent` one, then the deltas in shuffled order
///    with duplicates, gives `concurrent ⊔ last`;
/// 5. `concurrent` alone, given the deltas in two different shuffled orders with
///    duplicates, converges, and agrees with `concurrent ⊔ (d1 ⊔ … ⊔ dn)`.
///
/// - Throws: ``LawViolation`` naming the first law that fails and the states involved.
public func checkDeltaLaws<Subject, State>(
  from subject: Subject,
  state: (Subject) -> State,
  concurrent: State,
  steps: Int = 4,
  using generator: inout SeededGenerator,
  join: (State, State) -> State,
  equivalent: (State, State) -> Bool,
  describe: (State) -> String = { String(describing: $0) },
  mutate: (inout Subject, inout SeededGenerator) -> State
) throws {
  let seed = generator.seed
  func violation(_ law: String, _ witnesses: [(String, State)]) -> LawViolation {
    LawViolation(
      law: law, seed: seed,
      witnesses: witnesses.map { .init(label: $0.0, state: describe($0.1)) })
  }

  var subject = subject
  let first = state(subject)
  var previous = first
  var deltas: [State] = []
  for step in 1...Swift.max(steps, 1) {
    let delta = mutate(&subject, &generator)
    let next = state(subject)
    let applied = join(previous, delta)
    guard equivalent(applied, next) else {
      throw violation(
        "state ⊔ delta = mutated state (step \(step))",
        [("state", previous), ("delta", delta), ("mutated", next), ("state ⊔ delta", applied)])
    }
    let reapplied = join(next, delta)
    guard equivalent(reapplied, next) else {
      throw violation(
        "re-applying a delta changes nothing (step \(step))",
        [("mutated", next), ("delta", delta), ("mutated ⊔ delta", reapplied)])
    }
    deltas.append(delta)
    previous = next
  }
  let last = previous

  // 3. Random groups, each joined into one delta, applied in random order.
  let groups = randomGroups(of: deltas.shuffled(using: &generator), using: &generator)
  var grouped = first
  for group in groups.shuffled(using: &generator) {
    grouped = join(grouped, group.dropFirst().reduce(group[0], join))
  }
  guard equivalent(grouped, last) else {
    throw violation(
      "grouped deltas applied in any order give the mutated state",
      [("state", first), ("mutated", last), ("grouped result", grouped)]
        + deltas.enumerated().map { ("delta \($0.offset + 1)", $0.element) })
  }

  // 4. A concurrent replica that has the first state and receives the deltas.
  let expected = join(concurrent, last)
  var received = join(concurrent, first)
  for delta in deliveries(of: deltas, using: &generator) { received = join(received, delta) }
  guard equivalent(received, expected) else {
    throw violation(
      "a concurrent replica receiving shuffled, duplicated deltas converges",
      [
        ("concurrent", concurrent), ("state", first), ("mutated", last),
        ("concurrent ⊔ mutated", expected), ("received", received),
      ]
        + deltas.enumerated().map { ("delta \($0.offset + 1)", $0.element) })
  }

  // 5. A concurrent replica without the first state, in two orders and as one group.
  var once = concurrent
  for delta in deliveries(of: deltas, using: &generator) { once = join(once, delta) }
  var twice = concurrent
  for delta in deliveries(of: deltas, using: &generator) { twice = join(twice, delta) }
  let allAtOnce = join(concurrent, deltas.dropFirst().reduce(deltas[0], join))
  guard equivalent(once, twice), equivalent(once, allAtOnce) else {
    throw violation(
      "deltas delivered in any order, with duplicates, converge",
      [
        ("concurrent", concurrent), ("one order", once), ("another order", twice),
        ("joined group", allAtOnce),
      ]
        + deltas.enumerated().map { ("delta \($0.offset + 1)", $0.element) })
  }
}

/// ``checkDeltaLaws(from:state:concurrent:steps:using:join:equivalent:describe:mutate:)``
/// for a simulated replica of a ``Mergeable`` and `Equatable` type, compared with `==`.
public func checkDeltaLaws<State: Mergeable & Equatable>(
  from replica: SimulatedReplica<State>,
  concurrent: State,
  steps: Int = 4,
  using generator: inout SeededGenerator,
  mutate: (inout SimulatedReplica<State>, inout SeededGenerator) -> State
) throws {
  try checkDeltaLaws(
    from: replica, state: \.state, concurrent: concurrent, steps: steps, using: &generator,
    join: { $0.merging($1) }, equivalent: (==), mutate: mutate)
}

/// ``checkDeltaLaws(from:state:concurrent:steps:using:join:equivalent:describe:mutate:)``
/// for a state of a ``Mergeable`` and `Equatable` type, compared with `==`.
public func checkDeltaLaws<State: Mergeable & Equatable>(
  from state: State,
  concurrent: State,
  steps: Int = 4,
  using generator: inout SeededGenerator,
  mutate: (inout State, inout SeededGenerator) -> State
) throws {
  try checkDeltaLaws(
    from: state, state: { $0 }, concurrent: concurrent, steps: steps, using: &generator,
    join: { $0.merging($1) }, equivalent: (==), mutate: mutate)
}

/// Splits `items` (non-empty) into consecutive non-empty groups of random sizes.
private func randomGroups<T>(of items: [T], using generator: inout SeededGenerator) -> [[T]] {
  var groups: [[T]] = []
  var current: [T] = []
  for item in items {
    current.append(item)
    if Bool.random(using: &generator) {
      groups.append(current)
      current = []
    }
  }
  if !current.isEmpty { groups.append(current) }
  return groups
}

/// The deltas in a random order, some of them twice, as a faulty network delivers them.
private func deliveries<T>(of deltas: [T], using generator: inout SeededGenerator) -> [T] {
  var result = deltas
  for delta in deltas where Int.random(in: 0..<3, using: &generator) == 0 {
    result.append(delta)
  }
  return result.shuffled(using: &generator)
}
