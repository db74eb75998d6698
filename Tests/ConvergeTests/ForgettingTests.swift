import Converge
import ConvergeTestSupport
import Testing

/// The laws of the stable-context meet, seeded.
@Suite struct StableContextMeetTests {
  /// A random context over three replicas, with gaps.
  private func randomContext(using random: inout SeededGenerator) -> CausalContext {
    var context = CausalContext()
    for _ in 0..<Int.random(in: 0...8, using: &random) {
      let replica = ReplicaID(rawValue: UInt64.random(in: 1...3, using: &random))
      let lower = UInt64.random(in: 1...30, using: &random)
      context.insert(
        replica: replica, counters: lower...(lower + UInt64.random(in: 0...6, using: &random)))
    }
    return context
  }

  private func dots(_ context: CausalContext) -> Set<Dot> {
    var dots = Set<Dot>()
    for (replica, counters) in context.entries {
      for range in counters.ranges {
        for counter in range { dots.insert(Dot(replica: replica, counter: counter)) }
      }
    }
    return dots
  }

  @Test func meetIsCommutativeAssociativeIdempotentAndBelowEachInput() {
    let start = baseSeed(0x5AB1E)
    for offset in 0..<UInt64(fuzzIterations(300)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      let a = randomContext(using: &random)
      let b = randomContext(using: &random)
      let c = randomContext(using: &random)
      let ab = a.intersection(b)
      #expect(ab == b.intersection(a), "seed \(seed)")
      #expect(ab.intersection(c) == a.intersection(b.intersection(c)), "seed \(seed)")
      #expect(a.intersection(a) == a, "seed \(seed)")
      #expect(a.includes(ab) && b.includes(ab), "seed \(seed)")
      #expect(dots(ab) == dots(a).intersection(dots(b)), "seed \(seed)")
      // The meet of a context with one it includes is the smaller one.
      #expect(a.union(b).intersection(a) == a, "seed \(seed)")
    }
  }

  @Test func stableCutWaitsUntilTheReceiverHoldsEveryReport() {
    let a = CausalContext(dots: [Dot(replica: ReplicaID(rawValue: 1), counter: 1)])
    var b = a
    b.insert(Dot(replica: ReplicaID(rawValue: 2), counter: 1))
    #expect(CausalContext.stableCut(of: [a, b], seenBy: a).isEmpty)
    #expect(CausalContext.stableCut(of: [a, b], seenBy: b) == a)
    #expect(CausalContext.stableCut(of: [], seenBy: b).isEmpty)
  }
}

/// Forgetting deleted entities: what is dropped, what survives, and convergence with
/// replicas that forget later or never.
@Suite struct ForgettingTests {
  private static func note(_ index: Int) -> EntityKey { EntityKey(type: "note", id: "n\(index)") }

  private static func body(_ index: Int) -> String {
    "secret-body-\(index)-" + String(repeating: "x", count: 40)
  }

  /// What any API shows of a document: its visible keys with every field's content.
  static func visible(_ document: Document) -> [String] {
    document.keys.map { key in
      var line = "\(key.type)/\(key.id):"
      for field in document.fieldNames(of: key) {
        switch document.fieldKind(field, of: key) {
        case .register:
          line += " \(field)=\(String(describing: document.value(of: field, in: key)))"
        case .set: line += " \(field)=\(document.elements(of: field, in: key))"
        case .text: line += " \(field)=\(document.text(of: field, in: key))"
        case .list: line += " \(field)=\(document.list(of: field, in: key))"
        case .parent:
          line += " \(field)=\(String(describing: document.parentMove(of: field, in: key)))"
        case nil: break
        }
      }
      return line
    }
  }

  private static func contains(_ bytes: [UInt8], _ needle: String) -> Bool {
    let needle = Array(needle.utf8)
    guard bytes.count >= needle.count else { return false }
    return (0...(bytes.count - needle.count)).contains {
      bytes[$0..<$0 + needle.count].elementsEqual(needle)
    }
  }

  @Test func forgetsStablyDeletedNotesAndKeepsTheRest() throws {
    var phone = Replica(id: ReplicaID(rawValue: 1))
    _ = phone.transact { tx in
      for index in 0..<10 {
        tx.create(Self.note(index))
        tx.setValue(.string("title \(index)"), for: "title", of: Self.note(index))
        tx.insert(.string("tag"), into: "tags", of: Self.note(index))
        tx.insertText(Self.body(index), at: 0, in: "body", of: Self.note(index))
      }
    }
    _ = phone.transact { tx in for index in 0..<7 { tx.delete(Self.note(index)) } }
    let before = Self.visible(phone.document)
    let forgotten = phone.forgetDeleted(stable: phone.document.context)
    #expect(forgotten == 7)
    #expect(Self.visible(phone.document) == before)
    let bytes = phone.document.encoded()
    for index in 0..<7 {
      #expect(!Self.contains(bytes, Self.body(index)), "body \(index) is still encoded")
      #expect(phone.document.fieldNames(of: Self.note(index)).isEmpty)
      #expect(phone.document.text(of: "body", in: Self.note(index)).isEmpty)
    }
    // Text content is Huffman-coded on the wire, so the decoded state is what tells:
    // deleted bodies are gone from it, kept ones are whole.
    let decoded = try Document(decoding: bytes)
    #expect(decoded == phone.document)
    for index in 0..<10 {
      #expect(decoded.text(of: "body", in: Self.note(index)) == (index < 7 ? "" : Self.body(index)))
    }
    // A second call finds nothing more.
    #expect(phone.forgetDeleted(stable: phone.document.context) == 0)
    // New notes still get dots the forgotten ones never had.
    let created = phone.transact { tx in tx.create(Self.note(99)) }
    #expect(!created.delta.isEmpty && phone.document.contains(Self.note(99)))
  }

  @Test func nothingOutsideTheStableContextIsForgotten() {
    var phone = Replica(id: ReplicaID(rawValue: 1))
    _ = phone.transact { tx in
      tx.create(Self.note(0))
      tx.insertText(Self.body(0), at: 0, in: "body", of: Self.note(0))
    }
    let stableBefore = phone.document.context
    _ = phone.transact { tx in tx.delete(Self.note(0)) }
    // The delete is not in the stable context yet: the note stays whole.
    #expect(phone.forgetDeleted(stable: stableBefore) == 0)
    #expect(phone.document.text(of: "body", in: Self.note(0)) == Self.body(0))
    // A stable context this document does not hold is met with its own context.
    var beyond = phone.document.context
    beyond.insert(Dot(replica: ReplicaID(rawValue: 9), counter: 1))
    #expect(phone.forgetDeleted(stable: beyond) == 1)
  }

  @Test func aConcurrentEditKeepsTheDeletedEntityWhole() {
    var phone = Replica(id: ReplicaID(rawValue: 1))
    _ = phone.transact { tx in
      tx.create(Self.note(0))
      tx.setValue(.string("title"), for: "title", of: Self.note(0))
      tx.insertText(Self.body(0), at: 0, in: "body", of: Self.note(0))
    }
    var laptop = phone.forked(as: ReplicaID(rawValue: 2))
    let deleted = phone.transact { tx in tx.delete(Self.note(0)) }
    let edited = laptop.transact { tx in
      tx.setValue(.string("renamed"), for: "title", of: Self.note(0))
    }
    // The laptop has seen the delete since; the phone not yet the edit. The stable cut
    // of the two reports waits for the phone to hold the laptop's edit.
    laptop.apply(deleted.delta)
    let reports = [phone.document.context, laptop.document.context]
    #expect(CausalContext.stableCut(of: reports, seenBy: phone.document.context).isEmpty)
    #expect(
      phone.forgetDeleted(
        stable: CausalContext.stableCut(of: reports, seenBy: phone.document.context)) == 0)
    // Even a caller that passes the laptop's whole context forgets nothing on the
    // laptop: the edit keeps the note visible there.
    #expect(laptop.forgetDeleted(stable: laptop.document.context) == 0)
    phone.apply(edited.delta)
    let cut = CausalContext.stableCut(of: reports, seenBy: phone.document.context)
    #expect(!cut.isEmpty)
    #expect(phone.forgetDeleted(stable: cut) == 0)
    #expect(phone.document.contains(Self.note(0)))
    #expect(phone.document.text(of: "body", in: Self.note(0)) == Self.body(0))
    #expect(phone.document.value(of: "title", in: Self.note(0)) == .string("renamed"))
    #expect(Self.visible(phone.document) == Self.visible(laptop.document))
  }

  @Test func aReplicaThatHasNotForgottenCannotResurrectForgottenData() {
    var phone = Replica(id: ReplicaID(rawValue: 1))
    _ = phone.transact { tx in
      for index in 0..<4 {
        tx.create(Self.note(index))
        tx.setValue(.string("t\(index)"), for: "title", of: Self.note(index))
        tx.insertText(Self.body(index), at: 0, in: "body", of: Self.note(index))
      }
    }
    _ = phone.transact { tx in tx.delete(Self.note(0)) }
    var laptop = phone.forked(as: ReplicaID(rawValue: 2))
    #expect(phone.forgetDeleted(stable: phone.document.context) == 1)
    let forgotten = phone.document
    // The laptop's delta since the phone's context, and its whole state, bring nothing
    // back.
    phone.apply(laptop.delta(since: phone.document.context))
    #expect(phone.document == forgotten)
    phone.merge(laptop)
    #expect(phone.document == forgotten)
    var merged = forgotten
    merged.merge(laptop.document)
    #expect(merged == forgotten)
    // A delta since an understated context re-sends the note's presence and fields too.
    phone.apply(laptop.delta(since: CausalContext()))
    #expect(phone.document == forgotten)
    // The other way, the laptop keeps its data until it forgets too; both show the same.
    laptop.merge(phone)
    #expect(Self.visible(laptop.document) == Self.visible(phone.document))
    #expect(laptop.forgetDeleted(stable: laptop.document.context) == 1)
    #expect(laptop.document == phone.document)
    #expect(laptop.document.encoded() == phone.document.encoded())
  }

  /// A sync session between a replica that forgot and one that has not: the handshake
  /// and later pushes bring nothing forgotten back, and once the second forgets too the
  /// two are equal.
  @Test func aSyncSessionWithAReplicaThatHasNotForgottenConverges() {
    var phone = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(1_000))
    _ = phone.transact { tx in
      for index in 0..<6 {
        tx.create(Self.note(index))
        tx.insertText(Self.body(index), at: 0, in: "body", of: Self.note(index))
      }
    }
    var laptop = phone.forked(as: ReplicaID(rawValue: 2))
    _ = phone.transact { tx in for index in 0..<4 { tx.delete(Self.note(index)) } }
    _ = laptop.transact { tx in tx.setValue(.string("kept"), for: "title", of: Self.note(5)) }
    var (phoneSession, laptopSession) = (SyncSession(), SyncSession())
    func sync() -> Bool {
      for _ in 0..<20 {
        let fromPhone = phoneSession.makeMessage(for: phone)
        if let fromPhone { laptopSession.receive(fromPhone, into: &laptop) }
        let fromLaptop = laptopSession.makeMessage(for: laptop)
        if let fromLaptop { phoneSession.receive(fromLaptop, into: &phone) }
        if fromPhone == nil && fromLaptop == nil { return true }
      }
      return false
    }
    #expect(sync())
    let reports = [phone.document.context, laptop.document.context]
    #expect(
      phone.forgetDeleted(stable: .stableCut(of: reports, seenBy: phone.document.context)) == 4)
    // New edits on both sides, one on a note the laptop still holds deleted data of.
    _ = laptop.transact { tx in tx.insertText("more ", at: 0, in: "body", of: Self.note(4)) }
    _ = phone.transact { tx in tx.create(Self.note(6)) }
    #expect(sync())
    #expect(Self.visible(phone.document) == Self.visible(laptop.document))
    for index in 0..<4 { #expect(phone.document.fieldNames(of: Self.note(index)).isEmpty) }
    #expect(
      laptop.forgetDeleted(stable: .stableCut(of: reports, seenBy: laptop.document.context)) == 4)
    #expect(phone.document == laptop.document)
  }

  /// Seeded: three devices create, edit, type and delete notes concurrently (never
  /// re-creating a deleted one) and sync at random; at random moments one of them
  /// forgets under the stable cut of everyone's current reports. Every replica shows at
  /// every sync what a shadow run that never forgets shows, and after a final exchange
  /// and forget all encode to the same bytes.
  @Test func replicasForgettingAtDifferentTimesConverge() {
    let start = baseSeed(0xF0_4637)
    var forgottenTotal = 0
    for offset in 0..<UInt64(fuzzIterations(40)) {
      let seed = start &+ offset
      var random = SeededGenerator(seed: seed)
      let origin = Replica(id: ReplicaID(rawValue: 100), wallClock: .fixed(1_000))
      var forgetting = (1...3).map { origin.forked(as: ReplicaID(rawValue: UInt64($0))) }
      var shadow = forgetting
      var nextNote = 0
      for _ in 0..<60 {
        let device = Int.random(in: 0..<3, using: &random)
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<5:
          // A local edit, made the same way on both runs.
          let visible = forgetting[device].document.keys
          let choice = Int.random(in: 0..<6, using: &random)
          let pick =
            visible.isEmpty ? nil : visible[Int.random(in: 0..<visible.count, using: &random)]
          let word = "w\(Int.random(in: 0..<1000, using: &random))"
          let body: (inout DocumentTransaction) -> Void = { tx in
            if let pick, choice < 2 {
              tx.setValue(.string(word), for: "title", of: pick)
            } else if let pick, choice < 4 {
              tx.insertText(word, at: 0, in: "body", of: pick)
            } else if let pick, choice == 4 {
              tx.delete(pick)
            } else {
              let key = EntityKey(type: "note", id: "s\(seed)-\(nextNote)")
              tx.create(key)
              tx.insertText(word, at: 0, in: "body", of: key)
            }
          }
          if choice == 5 || pick == nil { nextNote += 1 }
          _ = forgetting[device].transact(body)
          _ = shadow[device].transact(body)
        case 5..<8:
          // One device sends another what it lacks, or its whole state.
          let to = Int.random(in: 0..<3, using: &random)
          let whole = Bool.random(using: &random)
          let known = whole ? CausalContext() : forgetting[to].document.context
          forgetting[to].apply(forgetting[device].delta(since: known))
          shadow[to].apply(
            shadow[device].delta(since: whole ? CausalContext() : shadow[to].document.context))
          #expect(
            Self.visible(forgetting[to].document) == Self.visible(shadow[to].document),
            "seed \(seed): device \(to) shows other notes than its shadow")
        default:
          let reports = forgetting.map(\.document.context)
          let cut = CausalContext.stableCut(
            of: reports, seenBy: forgetting[device].document.context)
          forgottenTotal += forgetting[device].forgetDeleted(stable: cut)
          #expect(
            Self.visible(forgetting[device].document) == Self.visible(shadow[device].document),
            "seed \(seed): forgetting changed what device \(device) shows")
        }
      }
      // Everyone exchanges everything, then forgets under the final cut.
      for _ in 0..<2 {
        for from in 0..<3 {
          for to in 0..<3 where to != from {
            forgetting[to].apply(forgetting[from].delta(since: forgetting[to].document.context))
            shadow[to].apply(shadow[from].delta(since: shadow[to].document.context))
          }
        }
      }
      let reports = forgetting.map(\.document.context)
      for device in 0..<3 {
        let cut = CausalContext.stableCut(of: reports, seenBy: forgetting[device].document.context)
        forgottenTotal += forgetting[device].forgetDeleted(stable: cut)
        #expect(
          Self.visible(forgetting[device].document) == Self.visible(shadow[device].document),
          "seed \(seed)")
        #expect(!forgetting[device].document.hasPendingChanges, "seed \(seed)")
      }
      let encoded = forgetting.map { $0.document.encoded() }
      #expect(
        encoded.allSatisfy { $0 == encoded[0] }, "seed \(seed): replicas differ after forgetting")
      // Whole states merged back in resurrect nothing.
      var first = forgetting[0]
      first.merge(shadow[1])
      #expect(
        first.document.encoded() == encoded[0], "seed \(seed): a shadow state resurrected data")
    }
    // The runs did forget: the checks above are not about an empty operation.
    #expect(forgottenTotal > 0, "seeds from \(start): nothing was forgotten")
  }
}
