import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The run-length sequence orders concurrent inserts as FugueMax does: it matches the
/// per-character reference (`FugueMaxReference`) on random multi-replica histories, local
/// edits and remote deltas alike, delivered shuffled, joined, through the wire and through
/// a saved state, and keeps the issue's scenarios whole.
@Suite struct FugueMaxTextTests {
  typealias ID = FugueMaxReference.ID

  static func dot(_ id: ID) -> Dot {
    Dot(replica: ReplicaID(rawValue: UInt64(id.replica)), counter: UInt64(id.counter))
  }

  /// The text's items (tombstones included) as the reference lists its elements.
  static func items(_ text: RGA) -> [String] {
    text.itemOrigins.map { "\($0.id)\($0.isDeleted ? "~" : "")" }
  }

  static func items(_ elements: [FugueMaxReference.Element]) -> [String] {
    elements.map { "\(dot($0.id))\($0.isDeleted ? "~" : "")" }
  }

  /// `delta` written as a text delta and read back, as a peer receives it.
  static func throughWire(_ delta: RGADelta) throws -> RGADelta {
    var reader = ByteReader(encodeTextRuns(delta))
    var decoded = try DecodedReplicaTable(from: &reader)
    let result = try RGADelta(fromDelta: &reader, replicas: &decoded)
    try reader.expectEnd()
    return result
  }

  struct Mismatch: Error, CustomStringConvertible { var description: String }

  /// Remote integration: every operation of a random reference history, as deltas,
  /// shuffled, joined into random batches, some through the wire, applied to one text,
  /// gives the reference's list; its saved state loads to the same list.
  @Test func remoteDeltasMatchTheReference() throws {
    try forEachSeed(count: 300, base: 0xF0_6E_20) { random in
      let history = FugueMaxHistory.random(
        replicaCount: Int.random(in: 2...4, using: &random),
        steps: Int.random(in: 10...120, using: &random), using: &random)
      var lamports: [ID: UInt64] = [:]
      var deleteCounter: UInt64 = 0
      var deltas: [RGADelta] = []
      for operation in history.operations {
        switch operation {
        case .insert(let id, let value, let left, let right, _):
          let lamport =
            Swift.max(left.flatMap { lamports[$0] } ?? 0, right.flatMap { lamports[$0] } ?? 0) + 1
          lamports[id] = lamport
          let insert = RGADelta.Insert(
            id: Self.dot(id), lamport: lamport, origin: left.map(Self.dot),
            rightOrigin: right.map(Self.dot), scalars: Array(String(value).unicodeScalars))
          deltas.append(RGADelta(inserts: [insert], deletes: []))
        case .delete(let id):
          deleteCounter += 1
          let delete = RGADelta.Delete(
            dot: Dot(replica: ReplicaID(rawValue: 99), counter: deleteCounter),
            target: Self.dot(id), count: 1, isDescending: false)
          deltas.append(RGADelta(inserts: [], deletes: [delete]))
        }
      }
      deltas.shuffle(using: &random)
      var text = RGA()
      var next = 0
      while next < deltas.count {
        let end = Swift.min(deltas.count, next + Int.random(in: 1...4, using: &random))
        var batch = RGADelta()
        for delta in deltas[next..<end] { batch.merge(delta) }
        if Bool.random(using: &random) { batch = try Self.throughWire(batch) }
        text.apply(batch)
        next = end
      }
      text._checkInvariants()
      let expected = Self.items(history.replicas[0].elements)
      guard Self.items(text) == expected, text.pendingCount == 0 else {
        throw Mismatch(description: "\(Self.items(text))\nvs reference\n\(expected)")
      }
      let loaded = try loadTextState(encodeTextState(text))
      guard Self.items(loaded) == expected, loaded == text else {
        throw Mismatch(description: "loaded state \(Self.items(loaded)) vs \(expected)")
      }
    }
  }

  /// Local edits: replicas type (runs of several scalars at once) and delete through
  /// `RGA`, beside reference replicas doing the same; each local insert records the
  /// reference's origins, and deliveries keep every pair equal.
  @Test func localEditsMatchTheReference() throws {
    try forEachSeed(count: 200, base: 0xF0_6E_21) { random in
      let count = Int.random(in: 2...4, using: &random)
      var texts = (0..<count).map { _ in RGA() }
      var references = (0..<count).map { FugueMaxReference(replica: $0 + 1) }
      var counters = Array(repeating: UInt64(0), count: count)
      var ids: [ID: Dot] = [:]
      // Every operation with the delta that carries it; each replica's unseen ones.
      var log: [(operation: FugueMaxReference.Operation, delta: RGADelta)] = []
      var seen = Array(repeating: Set<Int>(), count: count)
      // Every replica's items after every step, for the strong list specification.
      var observations: [[Dot]] = []
      for _ in 0..<Int.random(in: 10...60, using: &random) {
        let r = Int.random(in: 0..<count, using: &random)
        let visible = references[r].string.count
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<5:
          let at = Int.random(in: 0...visible, using: &random)
          let length = Int.random(in: 1...4, using: &random)
          let letters = (0..<length).map { Unicode.Scalar(UInt8(97 + r * 6 + $0)) }
          let first = Dot(replica: ReplicaID(rawValue: UInt64(r + 1)), counter: counters[r] + 1)
          counters[r] += UInt64(length)
          let delta = texts[r].insert(letters, at: at, firstDot: first)
          guard let insert = delta.inserts.first else { throw Mismatch(description: "no run") }
          for (offset, letter) in letters.enumerated() {
            let operation = references[r].insert(Character(letter), at: at + offset)
            guard case .insert(let id, _, let left, let right, _) = operation else { continue }
            let mine = Dot(replica: first.replica, counter: first.counter + UInt64(offset))
            ids[id] = mine
            let piece = insert.slice(from: offset, length: 1)
            guard piece.origin == left.flatMap({ ids[$0] }),
              piece.rightOrigin == right.flatMap({ ids[$0] })
            else {
              throw Mismatch(description: "origins of \(piece) differ from \(operation)")
            }
            log.append((operation, offset == 0 ? delta : RGADelta()))
            seen[r].insert(log.count - 1)
          }
        case 5..<7 where visible > 0:
          let at = Int.random(in: 0..<visible, using: &random)
          counters[r] += 1
          let delta = texts[r].delete(
            at..<at + 1,
            firstDot: Dot(replica: ReplicaID(rawValue: UInt64(r + 1)), counter: counters[r]))
          log.append((references[r].delete(at: at), delta))
          seen[r].insert(log.count - 1)
        default:
          try Self.deliver(
            to: r, all: Bool.random(using: &random), log: log, seen: &seen[r], text: &texts[r],
            reference: &references[r], using: &random)
        }
        observations.append(texts[r].itemIDs)
        guard texts[r].string == references[r].string else {
          throw Mismatch(description: "replica \(r): \(texts[r].string) vs \(references[r].string)")
        }
      }
      for r in 0..<count {
        try Self.deliver(
          to: r, all: true, log: log, seen: &seen[r], text: &texts[r], reference: &references[r],
          using: &random)
        texts[r]._checkInvariants()
        let expected = references[r].elements.compactMap { element in
          ids[element.id].map { "\($0)\(element.isDeleted ? "~" : "")" }
        }
        guard Self.items(texts[r]) == expected else {
          throw Mismatch(description: "replica \(r): \(Self.items(texts[r])) vs \(expected)")
        }
      }
      for r in 1..<count where texts[r] != texts[0] {
        throw Mismatch(description: "replica \(r) diverged")
      }
      try checkNonInterleaving(texts[0].originRecords)
      try checkStrongListOrder(observations: observations, final: texts[0].itemIDs)
    }
  }

  /// Hands replica `r` unseen operations, shuffled (all of them, or a random part),
  /// applying each to both sides once the reference can; text deltas sometimes go
  /// through the wire.
  private static func deliver(
    to r: Int, all: Bool, log: [(operation: FugueMaxReference.Operation, delta: RGADelta)],
    seen: inout Set<Int>, text: inout RGA, reference: inout FugueMaxReference,
    using random: inout SeededGenerator
  ) throws {
    var waiting = log.indices.filter { !seen.contains($0) && (all || Bool.random(using: &random)) }
    waiting.shuffle(using: &random)
    var progress = true
    while progress {
      progress = false
      for index in waiting where !seen.contains(index) && reference.canApply(log[index].operation) {
        // A multi-scalar run travels with its first operation; the rest are in it.
        var first = index
        while first > 0, log[first].delta.isEmpty, case .insert = log[first].operation {
          first -= 1
        }
        var group = [first]
        var next = first + 1
        while next < log.count, log[next].delta.isEmpty, case .insert = log[next].operation {
          group.append(next)
          next += 1
        }
        guard group.allSatisfy({ !seen.contains($0) }) else { continue }
        guard reference.canApply(log[first].operation) else { continue }
        let delta =
          Bool.random(using: &random) ? try throughWire(log[first].delta) : log[first].delta
        text.apply(delta)
        for member in group {
          reference.apply(log[member].operation)
          seen.insert(member)
        }
        progress = true
      }
    }
  }

  /// A state typed without concurrency loads through the tree walk (its walk is the
  /// FugueMax order); one with concurrent passages at one place does not, and loads
  /// through apply; both load to the text saved.
  @Test func loadingWalksTheTreeOnlyWhenItIsTheOrder() throws {
    var random = SeededGenerator(seed: 0xF0_6E_22)
    var single = SharedText(replica: ReplicaID(rawValue: 1))
    for _ in 0..<300 {
      if single.count > 0, Int.random(in: 0..<4, using: &random) == 0 {
        let at = Int.random(in: 0..<single.count, using: &random)
        single.delete(at..<Swift.min(single.count, at + 3))
      } else {
        single.insert("abc", at: Int.random(in: 0...single.count, using: &random))
      }
    }
    #expect(single.rga.isRightOriginOrder)
    let loadedSingle = try loadTextState(encodeTextState(single.rga))
    #expect(loadedSingle == single.rga && loadedSingle.isRightOriginOrder)

    var left = SharedText(replica: ReplicaID(rawValue: 1))
    var right = SharedText(replica: ReplicaID(rawValue: 2))
    let base = left.insert("0123", at: 0)
    right.apply(base)
    let typedLeft = (0..<4).map { _ in left.insert("a", at: 2) }
    let typedRight = (0..<4).map { _ in right.insert("b", at: 2) }
    for delta in typedRight { left.apply(delta) }
    for delta in typedLeft { right.apply(delta) }
    #expect(left.string == right.string && left.string == "01aaaabbbb23")
    #expect(!left.rga.isRightOriginOrder)
    let loaded = try loadTextState(encodeTextState(left.rga))
    #expect(loaded == left.rga && loaded.string == left.string)
  }

  /// Hostile right origins: one inside its own run, one not after the run's origin, and
  /// one that never arrives are ignored or buffered alike on every replica, whatever the
  /// order of delivery; a right origin that arrives late releases its run.
  @Test func hostileRightOriginsAreIgnoredOrBufferedAlike() {
    let a = ReplicaID(rawValue: 1)
    let b = ReplicaID(rawValue: 2)
    var base = RGA()
    let abc = base.insert("abc".unicodeScalars, at: 0, firstDot: Dot(replica: a, counter: 1))
    func run(_ counter: UInt64, _ origin: UInt64?, _ right: Dot?) -> RGADelta {
      RGADelta(
        inserts: [
          RGADelta.Insert(
            id: Dot(replica: b, counter: counter), lamport: 10 + counter,
            origin: origin.map { Dot(replica: a, counter: $0) }, rightOrigin: right,
            scalars: ["x", "y"])
        ], deletes: [])
    }
    let insideItself = run(1, 1, Dot(replica: b, counter: 2))
    let beforeItsOrigin = run(3, 2, Dot(replica: a, counter: 1))
    let itsOrigin = run(5, 2, Dot(replica: a, counter: 2))
    let missing = run(7, 1, Dot(replica: a, counter: 9))
    let deltas = [abc, insideItself, beforeItsOrigin, itsOrigin, missing]
    var texts: [RGA] = []
    for order in [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 0, 4, 1, 3]] {
      var text = RGA()
      for index in order { text.apply(deltas[index]) }
      text._checkInvariants()
      #expect(text.string == "abc")
      #expect(text.pendingCount == 2, "the run waiting for #1@9")
      texts.append(text)
    }
    #expect(texts.allSatisfy { $0 == texts[0] })
    // #1@9 arrives after "c": the waiting run, typed between "a" and it, goes after "bc",
    // whose right origin (the end) lies further right than its own.
    var text = texts[0]
    text.apply(
      RGADelta(
        inserts: [
          RGADelta.Insert(
            id: Dot(replica: a, counter: 9), lamport: 4, origin: Dot(replica: a, counter: 3),
            rightOrigin: nil, scalars: ["d"])
        ], deletes: []))
    #expect(text.pendingCount == 0)
    #expect(text.string == "abcxyd")
  }
}
