import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// ``Document/authorshipViolation(in:grantedTo:)``: a sender that may author only replica
/// A's events cannot make, re-stamp or hide replica B's, in any field kind, and can still
/// send its own edits of B's data and re-send what it received.
@Suite struct AuthorshipTests {
  let note = EntityKey(type: "note", id: "n1")
  let a = ReplicaID(rawValue: 0xA)
  let b = ReplicaID(rawValue: 0xB)
  /// A counter far above anything B made.
  let future: UInt64 = 1 << 40

  /// The receiver (a relay's replica), and the sender A, both holding B's note: a title,
  /// a tag and the body "hello".
  func setup() -> (receiver: Replica, sender: Replica, victim: Replica) {
    var victim = Replica(id: b, wallClock: .fixed(1_000))
    var sender = Replica(id: a, wallClock: .fixed(1_000))
    var receiver = Replica(wallClock: .fixed(1_000))
    let made = victim.transact { tx in
      tx.create(note)
      tx.setValue(.string("B's title"), for: "title", of: note)
      tx.insert(.string("b-tag"), into: "tags", of: note)
      tx.insertText("hello", at: 0, in: "body", of: note)
    }
    receiver.apply(made.delta)
    sender.apply(made.delta)
    return (receiver, sender, victim)
  }

  func violation(_ delta: DocumentDelta, at receiver: Replica) -> AuthorshipViolation? {
    receiver.document.authorshipViolation(in: delta, grantedTo: [a])
  }

  /// A delta from A (context `A:1`) carrying `entity` for the note.
  func forged(_ entity: EntityDelta, context: CausalContext? = nil) -> DocumentDelta {
    var delta = DocumentDelta()
    delta.context = context ?? CausalContext(dots: [Dot(replica: a, counter: 1)])
    delta.entities[note] = entity
    return delta
  }

  func dotA(_ counter: UInt64) -> Dot { Dot(replica: a, counter: counter) }
  /// B's latest event the receiver holds.
  func latestOfB(_ receiver: Replica) -> UInt64 {
    receiver.document.context.counters(of: b).maximum
  }
  /// The receiver's text of the body as every run.
  func body(_ receiver: Replica) -> RGADelta? {
    guard case .text(let storage)? = receiver.document.entities[note]?.fields["body"] else {
      return nil
    }
    return storage.text.delta(since: CausalContext())
  }
  func dotB(_ counter: UInt64) -> Dot { Dot(replica: b, counter: counter) }

  // MARK: Legitimate deltas

  @Test func theSendersOwnEditsOfAnotherReplicasDataAreAccepted() {
    let (receiver, sender, _) = setup()
    let edits: [(inout DocumentTransaction) -> Void] = [
      { $0.setValue(.string("A's title"), for: "title", of: note) },
      { $0.remove(.string("b-tag"), from: "tags", of: note) },
      { $0.insert(.string("a-tag"), into: "tags", of: note) },
      { $0.insertText(" world", at: 5, in: "body", of: note) },
      { $0.deleteText(1..<4, in: "body", of: note) },
      { $0.delete(note) },
    ]
    for edit in edits {
      var copy = sender
      let commit = copy.transact(edit)
      #expect(violation(commit.delta, at: receiver) == nil)
      // A's own keystroke into B's text needs no look-up; a removal or a delete of B's
      // characters does.
      var fromRelay = receiver
      fromRelay.apply(commit.delta)
      #expect(latestOfB(fromRelay) == latestOfB(receiver))
    }
  }

  @Test func aDeltaNamingOnlyGrantedReplicasNeedsNoLookUp() {
    var sender = Replica(id: a, wallClock: .fixed(1_000))
    let commit = sender.transact { tx in
      tx.create(note)
      tx.insertText("mine", at: 0, in: "body", of: note)
    }
    #expect(commit.delta.isAuthored(onlyBy: [a]))
    #expect(!commit.delta.isAuthored(onlyBy: [b]))
    #expect(Replica().document.authorshipViolation(in: commit.delta, grantedTo: [a]) == nil)
  }

  /// A device's answer may include B's events it received a moment earlier: accepted
  /// when the receiver holds them already.
  @Test func reSendingAnotherReplicasEventsTheReceiverHoldsIsAccepted() {
    let (receiver, sender, victim) = setup()
    var sender2 = sender
    _ = sender2.transact { $0.setValue(.string("A's"), for: "title", of: note) }
    let answer = sender2.document.delta(since: CausalContext())
    #expect(!answer.isAuthored(onlyBy: [a]))
    #expect(violation(answer, at: receiver) == nil)
    // The same answer to a receiver that lacks B's events is refused.
    #expect(violation(answer, at: Replica())?.kind == .context)
    _ = victim
  }

  // MARK: Events of another replica

  @Test func aRegisterWriteStampedWithAnotherReplicasDotIsRefused() {
    let (receiver, _, _) = setup()
    for counter in [UInt64(2), 1, future] {  // B's own dot 2, B's title write 1, a future one
      let stamp = LWWRegister<FieldValue>.Stamp(
        timestamp: Timestamp(wallMilliseconds: 9_000), dot: dotB(counter))
      var entity = EntityDelta(presence: .add(dotA(1)))
      entity.fields["title"] = .register(LWWRegister(value: .string("forged"), stamp: stamp))
      let found = violation(forged(entity), at: receiver)
      #expect(found?.kind == .registerWrite, "B:\(counter)")
      #expect(found?.dot == dotB(counter))
      #expect(found?.isObservation == false)
    }
  }

  @Test func reSendingAnotherReplicasRegisterWriteAsItWasIsAccepted() throws {
    let (receiver, _, _) = setup()
    let held = try #require(receiver.document.entities[note]?.fields["title"])
    var entity = EntityDelta(presence: .add(dotA(1)))
    entity.fields["title"] = held.travelling
    #expect(violation(forged(entity), at: receiver) == nil)
  }

  @Test func anEntityVersionOfAnotherReplicaIsRefused() {
    let (receiver, _, _) = setup()
    let entity = EntityDelta(presence: Presence(added: VersionVector([a: 1, b: 99])))
    #expect(violation(forged(entity), at: receiver)?.kind == .entityVersion)
  }

  @Test func aRemovalClaimingFutureEventsOfAnotherReplicaIsRefused() {
    let (receiver, _, _) = setup()
    let entity = EntityDelta(
      presence: Presence(added: VersionVector([a: 1]), removed: VersionVector([a: 1, b: future])))
    let found = violation(forged(entity), at: receiver)
    #expect(found?.kind == .entityRemoval)
    #expect(found?.isObservation == true)
    // Observing what B made (its latest event on the note) is a removal anyone may make.
    let latest = latestOfB(receiver)
    let honest = EntityDelta(
      presence: Presence(added: VersionVector([a: 1]), removed: VersionVector([a: 1, b: latest])))
    #expect(violation(forged(honest), at: receiver) == nil)
  }

  @Test func aSetAddOrRemovalOfAnotherReplicaBeyondWhatIsHeldIsRefused() {
    let (receiver, _, _) = setup()
    var add = EntityDelta(presence: .add(dotA(1)))
    add.fields["tags"] = .set([.string("forged"): .add(dotB(future))])
    #expect(violation(forged(add), at: receiver)?.kind == .setAdd)
    var removal = EntityDelta(presence: .add(dotA(1)))
    removal.fields["tags"] = .set([
      .string("b-tag"): Presence(
        added: VersionVector([a: 1]), removed: VersionVector([a: 1, b: future]))
    ])
    #expect(violation(forged(removal), at: receiver)?.kind == .setRemoval)
  }

  @Test func textRunsWithAnotherReplicasIdsAreRefused() throws {
    let (receiver, _, _) = setup()
    let title = try #require(receiver.document.entities[note]?.fields["title"])
    guard case .register(let register) = title, let stamp = register.stamp else {
      Issue.record("no title")
      return
    }
    // B's next ids, and B's title write's id, which exists but is no character: refused
    // either way.
    for first in [latestOfB(receiver) + 1, stamp.dot.counter] {
      let run = RGADelta.Insert(
        id: dotB(first), lamport: 100, origin: nil, rightOrigin: nil,
        scalars: Array("forged".unicodeScalars))
      var entity = EntityDelta(presence: .add(dotA(1)))
      entity.fields["body"] = .text(RGADelta(inserts: [run], deletes: []))
      #expect(violation(forged(entity), at: receiver)?.kind == .textInsert, "B:\(first)")
    }
  }

  @Test func textDeletesMadeWithAnotherReplicasDotsAreRefused() throws {
    let (receiver, _, _) = setup()
    let hello = try #require(body(receiver))
    let first = try #require(hello.inserts.first?.id)
    let delete = RGADelta.Delete(dot: dotB(future), target: first, count: 1, isDescending: false)
    var entity = EntityDelta(presence: .add(dotA(1)))
    entity.fields["body"] = .text(RGADelta(inserts: [], deletes: [delete]))
    #expect(violation(forged(entity), at: receiver)?.kind == .textDelete)
  }

  @Test func textDeletesOfAnotherReplicasFutureCharactersAreRefused() {
    let (receiver, _, _) = setup()
    let next = dotB(latestOfB(receiver) + 1)
    let delete = RGADelta.Delete(dot: dotA(1), target: next, count: 5, isDescending: false)
    var entity = EntityDelta(presence: .add(dotA(1)))
    entity.fields["body"] = .text(RGADelta(inserts: [], deletes: [delete]))
    let found = violation(forged(entity), at: receiver)
    #expect(found?.kind == .textDeleteTarget)
    #expect(found?.isObservation == true)
  }

  @Test func aContextNamingAnotherReplicasEventsTheReceiverLacksIsRefused() {
    let (receiver, _, _) = setup()
    let next = dotB(latestOfB(receiver) + 1)
    let context = CausalContext(dots: [dotA(1), next])
    let found = violation(
      forged(EntityDelta(presence: .add(dotA(1))), context: context), at: receiver)
    #expect(found?.kind == .context)
    #expect(found?.dot == next)
  }

  /// A device applying a peer's delta under the peer's grant refuses a forgery and
  /// changes nothing.
  @Test func aReplicaApplyingAPeersForgeryThrowsAndStaysUnchanged() throws {
    var (receiver, _, _) = setup()
    let before = receiver.document
    let entity = EntityDelta(
      presence: Presence(added: VersionVector([a: 1]), removed: VersionVector([a: 1, b: future])))
    #expect(throws: AuthorshipViolation.self) {
      try receiver.apply(forged(entity), authoredBy: [a])
    }
    #expect(receiver.document == before)
    try receiver.apply(forged(EntityDelta(presence: .add(dotA(1)))), authoredBy: [a])
    #expect(receiver.document.context.contains(dotA(1)))
  }

  /// The refusal protects B: its next edits of every kind still show after a refused
  /// forgery (which the receiver never applied).
  @Test func afterARefusedForgeryTheVictimsEditsShow() {
    var (receiver, _, victim) = setup()
    let entity = EntityDelta(
      presence: Presence(added: VersionVector([a: 1]), removed: VersionVector([a: 1, b: future])))
    #expect(violation(forged(entity), at: receiver) != nil)
    let next = victim.transact { $0.setValue(.string("B again"), for: "title", of: note) }
    #expect(victim.document.authorshipViolation(in: next.delta, grantedTo: [b]) == nil)
    receiver.apply(next.delta)
    #expect(receiver.document.value(of: "title", in: note) == .string("B again"))
  }

  // MARK: Property

  /// Random documents of three replicas: every delta a replica makes or answers with is
  /// accepted under its own grant by a receiver holding what it received, and every
  /// forgery of one id of another replica is refused; no accepted delta brings the
  /// receiver an event outside the grant.
  @Test func noDeltaAcceptedForAGrantCarriesAnotherReplicasNewEvents() throws {
    try forEachSeed(count: 200, base: 0xA07) { random in
      var replicas = (0..<3).map { _ in Replica.seeded(using: &random) }
      var receiver = Replica.seeded(using: &random)
      for _ in 0..<12 {
        let index = Int.random(in: 0..<3, using: &random)
        let granted: Set<ReplicaID> = [replicas[index].id]
        let delta: DocumentDelta
        if Bool.random(using: &random) {
          delta = replicas[index].randomTransaction(using: &random).delta
        } else {
          // An answer: what the receiver lacks of what this replica holds.
          delta = replicas[index].document.delta(since: receiver.document.context)
        }
        let answerHoldsOnlyOwnNews = delta.context.subtracting(receiver.document.context)
          .replicas.allSatisfy(granted.contains)
        let found = receiver.document.authorshipViolation(in: delta, grantedTo: granted)
        if answerHoldsOnlyOwnNews, let found {
          throw PropertyFailure(message: "an honest delta refused: \(found)")
        }
        if found == nil {
          try checkForgeriesRefused(delta, at: receiver, sender: granted, using: &random)
          let before = receiver.document.context
          receiver.apply(delta)
          let new = receiver.document.context.subtracting(before)
          guard new.replicas.allSatisfy(granted.contains) else {
            throw PropertyFailure(message: "an accepted delta brought \(new)")
          }
          // Every replica receives it, as the relay would forward it.
          for other in replicas.indices { replicas[other].apply(delta) }
        }
      }
    }
  }

  /// Rewrites one id of another replica into `delta` and expects a refusal.
  func checkForgeriesRefused(
    _ delta: DocumentDelta, at receiver: Replica, sender granted: Set<ReplicaID>,
    using random: inout SeededGenerator
  ) throws {
    let victim = ReplicaID(rawValue: 0x7777)
    let forgedDot = Dot(replica: victim, counter: future)
    guard let key = delta.keys.randomElement(using: &random), let entity = delta.entities[key]
    else { return }
    var forgeries: [EntityDelta] = []
    var presence = entity.presence
    presence.mergeAdd(forgedDot)
    forgeries.append(EntityDelta(presence: presence, fields: entity.fields))
    var removal = entity.presence
    removal.merge(Presence(added: VersionVector(), removed: VersionVector([victim: future])))
    forgeries.append(EntityDelta(presence: removal, fields: entity.fields))
    for (name, field) in entity.fields {
      var copy = entity
      switch field {
      case .register(let register):
        guard let stamp = register.stamp, let value = register.value else { continue }
        copy.fields[name] = .register(
          LWWRegister(value: value, stamp: .init(timestamp: stamp.timestamp, dot: forgedDot)))
      case .parent(let register):
        guard let stamp = register.stamp, let value = register.value else { continue }
        copy.fields[name] = .parent(
          LWWRegister(value: value, stamp: .init(timestamp: stamp.timestamp, dot: forgedDot)))
      case .set(let elements):
        guard let (element, _) = elements.first(where: { _ in true }) else { continue }
        copy.fields[name] = .set([element: .add(forgedDot)])
      case .text(let runs):
        if var run = runs.inserts.first {
          run.id = forgedDot
          copy.fields[name] = .text(RGADelta(inserts: [run], deletes: []))
        } else if var delete = runs.deletes.first {
          delete.dot = forgedDot
          copy.fields[name] = .text(RGADelta(inserts: [], deletes: [delete]))
        } else {
          continue
        }
      case .list(let list):
        // A slot, and a move, made in the victim's name.
        if var run = list.slots.inserts.first {
          run.id = forgedDot
          copy.fields[name] = .list(
            MovableListDelta(slots: RGADelta(inserts: [run], deletes: []), items: [:]))
          forgeries.append(copy)
        }
        guard let (value, item) = list.items.first(where: { _ in true }) else { continue }
        var forged = item
        forged.position = LWWRegister<Dot>()
        forged.position.set(
          forgedDot, stamp: .init(timestamp: Timestamp(rawValue: 1), dot: forgedDot))
        copy.fields[name] = .list(MovableListDelta(slots: RGADelta(), items: [value: forged]))
      }
      forgeries.append(copy)
    }
    for forgery in forgeries {
      var forgedDelta = delta
      forgedDelta.entities[key] = forgery
      guard receiver.document.authorshipViolation(in: forgedDelta, grantedTo: granted) != nil
      else { throw PropertyFailure(message: "a forgery accepted in \(key)") }
    }
  }
}

/// A property that failed; ``forEachSeed(count:base:test:_:)`` adds the seed.
struct PropertyFailure: Error, CustomStringConvertible {
  var message: String
  var description: String { message }
}

extension FieldState {
  /// The field as a delta carries it (text as every run).
  fileprivate var travelling: FieldDelta {
    switch self {
    case .register(let register): .register(register)
    case .set(let elements): .set(elements)
    case .text(let storage): .text(storage.text.delta(since: CausalContext()))
    case .list(let list): .list(list.delta(since: CausalContext()))
    case .parent(let register): .parent(register)
    }
  }
}
