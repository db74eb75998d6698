import Converge

/// The issue's random passage cases: two to four replicas each type one short passage at
/// the same position of a shared text, forward (the cursor advances) or backward (the cursor
/// stays, as when typing before a word just written), then all merge. A case is interleaved
/// when some replica's passage is not one contiguous block of the merged text.
public struct PassageCase: Sendable, Hashable {
  /// One replica's passage.
  public struct Passage: Sendable, Hashable {
    public var text: String
    public var forward: Bool

    public init(text: String, forward: Bool) {
      self.text = text
      self.forward = forward
    }
  }

  /// The text every replica starts from (digits, so passages never collide with it).
  public var base: String
  /// Where every passage is typed.
  public var position: Int
  /// One passage per replica; replica `r` types only letters of its own alphabet.
  public var passages: [Passage]

  public init(base: String, position: Int, passages: [Passage]) {
    self.base = base
    self.position = position
    self.passages = passages
  }

  private static let alphabets = ["abcdef", "ghijkl", "mnopqr", "stuvwx"].map(Array.init)

  /// A case drawn from `random`.
  public static func random<R: RandomNumberGenerator>(using random: inout R) -> PassageCase {
    let base = String("0123".prefix(Int.random(in: 0...4, using: &random)))
    let passages = alphabets.prefix(Int.random(in: 2...4, using: &random)).map { alphabet in
      Passage(
        text: String(alphabet.prefix(Int.random(in: 2...6, using: &random))),
        forward: Bool.random(using: &random))
    }
    return PassageCase(
      base: base, position: Int.random(in: 0...base.count, using: &random), passages: passages)
  }

  /// Whether some passage is split in `merged`.
  public func isInterleaved(_ merged: String) -> Bool {
    let characters = Array(merged)
    return passages.contains { passage in
      let positions = characters.indices.filter { passage.text.contains(characters[$0]) }
      guard let first = positions.first, let last = positions.last else { return true }
      return last - first + 1 != passage.text.count
    }
  }

  /// The characters of `passage` in the order they are typed.
  private func keystrokes(_ passage: Passage) -> [(Character, Int)] {
    passage.text.enumerated().map { offset, character in
      (character, passage.forward ? position + offset : position)
    }
  }

  /// Each replica's text after merging everything, through the public `SharedText` API, every
  /// replica receiving the others' deltas in a shuffled order.
  public func mergedWithText<R: RandomNumberGenerator>(using random: inout R) -> [String] {
    var author = SharedText(replica: ReplicaID(rawValue: 1_000))
    let baseDelta = author.insert(base, at: 0)
    var replicas = passages.indices.map { SharedText(replica: ReplicaID(rawValue: UInt64($0 + 1))) }
    var deltas: [[RGADelta]] = []
    for index in replicas.indices {
      _ = replicas[index].apply(baseDelta)
      deltas.append(
        keystrokes(passages[index]).map { character, at in
          replicas[index].insert(String(character), at: at)
        })
    }
    for index in replicas.indices {
      var incoming = deltas.indices.filter { $0 != index }.flatMap { deltas[$0] }
      incoming.shuffle(using: &random)
      for delta in incoming { _ = replicas[index].apply(delta) }
    }
    return replicas.map(\.string)
  }

  /// Each replica's text after merging everything on the reference FugueMax, every replica
  /// receiving the others' operations in a shuffled order (held back until ready).
  public func mergedWithReference<R: RandomNumberGenerator>(using random: inout R) -> [String] {
    var author = FugueMaxReference(replica: 1_000)
    let baseOperations = base.enumerated().map { offset, character in
      author.insert(character, at: offset)
    }
    var replicas = passages.indices.map { FugueMaxReference(replica: $0 + 1) }
    var operations: [[FugueMaxReference.Operation]] = []
    for index in replicas.indices {
      for operation in baseOperations { replicas[index].apply(operation) }
      operations.append(
        keystrokes(passages[index]).map { character, at in
          replicas[index].insert(character, at: at)
        })
    }
    for index in replicas.indices {
      var waiting = operations.indices.filter { $0 != index }.flatMap { operations[$0] }
      waiting.shuffle(using: &random)
      while let ready = waiting.firstIndex(where: replicas[index].canApply) {
        replicas[index].apply(waiting.remove(at: ready))
      }
    }
    return replicas.map(\.string)
  }
}

/// How many of `count` random passage cases, from `seed`, came out interleaved or diverged.
public struct PassageTally: Sendable, Hashable, CustomStringConvertible {
  public var cases = 0
  public var interleaved = 0
  public var diverged = 0
  /// The first interleaved case and its merge, to show what went wrong.
  public var example: String?

  public var description: String {
    "\(interleaved) of \(cases) interleaved, \(diverged) diverged"
      + (example.map { " (e.g. \($0))" } ?? "")
  }

  /// Runs `count` cases from `seed` through `merge` (one merged text per replica).
  public static func run(
    count: Int, seed: UInt64,
    merge: (PassageCase, inout SeededGenerator) -> [String]
  ) -> PassageTally {
    var random = SeededGenerator(seed: seed)
    var tally = PassageTally()
    for _ in 0..<count {
      let passageCase = PassageCase.random(using: &random)
      let merged = merge(passageCase, &random)
      tally.cases += 1
      if Set(merged).count != 1 { tally.diverged += 1 }
      if let text = merged.first, passageCase.isInterleaved(text) {
        tally.interleaved += 1
        if tally.example == nil {
          let typed = passageCase.passages.map { "\($0.text)\($0.forward ? "→" : "←")" }
          tally.example =
            "base \"\(passageCase.base)\" at \(passageCase.position), "
            + "\(typed.joined(separator: " ")) merged to \"\(text)\""
        }
      }
    }
    return tally
  }
}
