import Converge
import ConvergeTestSupport
import Testing

/// The conflicts offline-first apps meet, each on two devices that edit offline and then
/// exchange their deltas in both orders.
@Suite struct DocumentConflictTests {
  let note = EntityKey(type: "note", id: "n1")

  /// Two replicas that share the entity `note` with a title, a tag and a body.
  func twoDevices(phoneSkew: Int64 = 0, laptopSkew: Int64 = 0) -> (Replica, Replica) {
    var random = SeededGenerator(seed: 7)
    var phone = Replica.seeded(using: &random, skewMilliseconds: phoneSkew)
    var laptop = Replica.seeded(using: &random, skewMilliseconds: laptopSkew)
    let setup = phone.transact { tx in
      tx.create(note)
      tx.setValue(.string("Groceries"), for: "title", of: note)
      tx.insert(.string("home"), into: "tags", of: note)
      tx.insertText("milk", at: 0, in: "body", of: note)
    }
    laptop.apply(setup.delta)
    return (phone, laptop)
  }

  /// Exchanges the two deltas in both orders and checks both replicas end equal.
  func exchange(_ phone: inout Replica, _ laptop: inout Replica, _ a: Commit, _ b: Commit) {
    phone.apply(b.delta)
    laptop.apply(a.delta)
    #expect(phone.document == laptop.document)
  }

  @Test func differentFieldsEditedOfflineBothSurvive() {
    var (phone, laptop) = twoDevices()
    let a = phone.transact { $0.setValue(.string("Shopping"), for: "title", of: note) }
    let b = laptop.transact { $0.insert(.string("urgent"), into: "tags", of: note) }
    exchange(&phone, &laptop, a, b)
    #expect(phone.document.value(of: "title", in: note) == .string("Shopping"))
    #expect(phone.document.elements(of: "tags", in: note) == [.string("home"), .string("urgent")])
  }

  @Test func sameFieldEditedOnBothTheLaterClockWinsEverywhere() {
    var (phone, laptop) = twoDevices(phoneSkew: 0, laptopSkew: 5_000)
    let a = phone.transact { $0.setValue(.string("Phone"), for: "title", of: note) }
    let b = laptop.transact { $0.setValue(.string("Laptop"), for: "title", of: note) }
    exchange(&phone, &laptop, a, b)
    #expect(phone.document.value(of: "title", in: note) == .string("Laptop"))
  }

  @Test func aWriteAfterSeeingAnotherWinsEvenWithAClockHoursBehind() {
    var (phone, laptop) = twoDevices(phoneSkew: -3 * 3_600_000, laptopSkew: 0)
    let laptopWrite = laptop.transact { $0.setValue(.string("Laptop"), for: "title", of: note) }
    phone.apply(laptopWrite.delta)
    let phoneWrite = phone.transact { $0.setValue(.string("Phone, later"), for: "title", of: note) }
    laptop.apply(phoneWrite.delta)
    #expect(laptop.document.value(of: "title", in: note) == .string("Phone, later"))
    #expect(phone.document == laptop.document)
  }

  @Test func tagRemovedOnOneWhileAddedOnTheOtherAddWins() {
    var (phone, laptop) = twoDevices()
    let a = phone.transact { $0.remove(.string("home"), from: "tags", of: note) }
    let b = laptop.transact { $0.insert(.string("home"), into: "tags", of: note) }
    exchange(&phone, &laptop, a, b)
    #expect(phone.document.elements(of: "tags", in: note) == [.string("home")])
  }

  @Test func noteDeletedOnOneWhileEditedOnTheOtherStaysAliveAndWhole() {
    var (phone, laptop) = twoDevices()
    let a = phone.transact { $0.delete(note) }
    #expect(!phone.document.contains(note))
    let b = laptop.transact { $0.setValue(.bool(true), for: "pinned", of: note) }
    exchange(&phone, &laptop, a, b)
    #expect(phone.document.contains(note))
    #expect(phone.document.value(of: "title", in: note) == .string("Groceries"))
    #expect(phone.document.elements(of: "tags", in: note) == [.string("home")])
    #expect(phone.document.value(of: "pinned", in: note) == .bool(true))
  }

  @Test func aDeleteBeatsTheEditsItSaw() {
    var (phone, laptop) = twoDevices()
    let edit = laptop.transact { $0.setValue(.string("Seen"), for: "title", of: note) }
    phone.apply(edit.delta)
    let delete = phone.transact { $0.delete(note) }
    laptop.apply(delete.delta)
    #expect(!laptop.document.contains(note) && !phone.document.contains(note))
    // Arriving again, late, the edit does not bring the note back.
    laptop.apply(edit.delta)
    #expect(!laptop.document.contains(note))
  }

  @Test func aRemoveArrivingBeforeTheAddItObservedStillRemovesIt() {
    var random = SeededGenerator(seed: 11)
    var a = Replica.seeded(using: &random)
    var b = Replica.seeded(using: &random)
    var c = Replica.seeded(using: &random)
    let add = a.transact { $0.insert(.string("red"), into: "tags", of: note) }
    b.apply(add.delta)
    let remove = b.transact { $0.remove(.string("red"), from: "tags", of: note) }
    c.apply(remove.delta)
    c.apply(add.delta)
    #expect(c.document.elements(of: "tags", in: note).isEmpty)
    a.apply(remove.delta)
    #expect(a.document == c.document)
  }

  @Test func twoDevicesCreatingTheSameEntityEndWithOneEntityHoldingBothEdits() {
    var random = SeededGenerator(seed: 5)
    var phone = Replica.seeded(using: &random)
    var laptop = Replica.seeded(using: &random)
    let a = phone.transact { tx in
      tx.create(note)
      tx.setValue(.string("From phone"), for: "title", of: note)
      tx.insert(.string("home"), into: "tags", of: note)
    }
    let b = laptop.transact { tx in
      tx.create(note)
      tx.setValue(.bool(true), for: "flagged", of: note)
      tx.insert(.string("work"), into: "tags", of: note)
    }
    exchange(&phone, &laptop, a, b)
    #expect(phone.document.keys == [note])
    #expect(phone.document.value(of: "title", in: note) == .string("From phone"))
    #expect(phone.document.value(of: "flagged", in: note) == .bool(true))
    #expect(phone.document.elements(of: "tags", in: note) == [.string("home"), .string("work")])
  }

  @Test func deltaSinceCarriesRemovalsOfWhatThePeerHolds() {
    var (phone, laptop) = twoDevices()
    phone.transact { tx in
      tx.remove(.string("home"), from: "tags", of: note)
      tx.delete(note)
    }
    let missing = phone.delta(since: laptop.context)
    laptop.apply(missing)
    #expect(laptop.document == phone.document)
    #expect(!laptop.document.contains(note))
    // And nothing is re-sent once the peer is up to date.
    #expect(phone.delta(since: laptop.context).isEmpty)
  }

  @Test func changeEventsNameCreatedDeletedAndChangedFields() {
    var (phone, laptop) = twoDevices()
    let edit = phone.transact { tx in
      tx.setValue(.string("New"), for: "title", of: note)
      tx.insert(.string("x"), into: "tags", of: note)
      tx.create(EntityKey(type: "note", id: "n2"))
    }
    #expect(edit.changes.created == [EntityKey(type: "note", id: "n2")])
    #expect(edit.changes[note]?.fields == ["tags", "title"])
    let received = laptop.apply(edit.delta)
    #expect(received == edit.changes)
    let deletion = laptop.transact { $0.delete(note) }
    #expect(deletion.changes.deleted == [note])
    // Applying the same delta again changes nothing and reports nothing.
    #expect(laptop.apply(edit.delta).isEmpty)
  }
}

/// Merge laws and delta decomposition on random documents with all three field kinds.
@Suite struct DocumentLawTests {
  @Test func documentMergeIsAJoin() throws {
    try forEachSeed(count: 400, base: 0xD0C) { random in
      let network = DocumentNetwork(replicaCount: 3, rounds: 10, using: &random)
      let states = network.replicas.map(\.document)
      try checkJoinLaws(states[0], states[1], states[2], seed: random.seed)
    }
  }

  @Test func transactionDeltasDecompose() throws {
    try forEachSeed(count: 400, base: 0xDE17A) { random in
      let network = DocumentNetwork(replicaCount: 2, rounds: 6, using: &random)
      try checkDeltaLaws(
        from: network.replicas[0], state: \.document, concurrent: network.replicas[1].document,
        steps: 4, using: &random,
        join: { $0.merging($1) }, equivalent: (==),
        mutate: { replica, random in
          var asDocument = Document()
          asDocument.apply(replica.randomTransaction(using: &random).delta)
          return asDocument
        })
    }
  }

  @Test func deltaSinceIsExactlyWhatThePeerLacks() throws {
    try forEachSeed(count: 400, base: 0x51CE) { random in
      let network = DocumentNetwork(replicaCount: 2, rounds: 12, using: &random)
      let (sender, receiver) = (network.replicas[0], network.replicas[1])
      var synced = receiver.document
      synced.apply(sender.delta(since: receiver.context))
      try ensure(synced == receiver.document.merging(sender.document), "delta(since:) ⊔ receiver")
      try ensure(synced.context.includes(sender.context), "the receiver knows all the sender knew")
      try ensure(sender.delta(since: synced.context).isEmpty, "nothing is left to send")
    }
  }

  @Test func groupedDeltasApplyLikeTheirParts() throws {
    try forEachSeed(count: 300, base: 0x6209) { random in
      var network = DocumentNetwork(replicaCount: 2, rounds: 4, using: &random)
      var parts: [DocumentDelta] = []
      for _ in 0..<4 { parts.append(network.replicas[0].randomTransaction(using: &random).delta) }
      var onePerPart = network.replicas[1].document
      for part in parts.shuffled(using: &random) { onePerPart.apply(part) }
      var grouped = network.replicas[1].document
      grouped.apply(parts.shuffled(using: &random).reduce(DocumentDelta()) { $0.merging($1) })
      try ensure(onePerPart == grouped, "grouped delta equals its parts")
    }
  }
}

/// A key hashes its type and id once, when made or changed: equal keys hash alike however
/// they were made, and a changed key is the key of its new type and id.
@Suite struct EntityKeyHashingTests {
  @Test func equalKeysHashAlikeAndAChangedKeyIsItsNewValue() throws {
    try forEachSeed(count: 20, base: 0xE17) { random in
      let names = ["note", "task", "tag", "", "é", "note/1"]
      func pick() -> String { names.randomElement(using: &random) ?? "" }
      let (type, id) = (pick(), pick())
      var changed = EntityKey(type: pick(), id: pick())
      changed.type = type
      changed.id = id
      let fresh = EntityKey(type: type, id: id)
      try ensure(changed == fresh && changed.hashValue == fresh.hashValue, "\(fresh)")
      try ensure(Set([changed, fresh]).count == 1, "one element")
      let other = EntityKey(type: type, id: id + "x")
      try ensure(other != fresh && Set([other, fresh]).count == 2, "distinct keys")
    }
  }
}
