import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

// The doc-comment samples of the replicated types, the clock, the codec's building blocks
// and the test support, verbatim, kept compiling and passing (see
// `DocCommentExampleTests.swift` for the app-facing types).

@Suite struct DocCommentTypeExampleTests {
  @Test func lwwRegister() {
    let phone = ReplicaID(rawValue: 1)
    let laptop = ReplicaID(rawValue: 2)
    var onPhone = LWWRegister<String>()
    var onLaptop = LWWRegister<String>()
    let fromPhone = onPhone.set(
      "Buy milk",
      stamp: .init(
        timestamp: Timestamp(wallMilliseconds: 1_000), dot: Dot(replica: phone, counter: 1)))
    let fromLaptop = onLaptop.set(
      "Buy oat milk",
      stamp: .init(
        timestamp: Timestamp(wallMilliseconds: 1_005), dot: Dot(replica: laptop, counter: 1)))
    onPhone.merge(fromLaptop)
    onLaptop.merge(fromPhone)
    // onPhone == onLaptop, and both hold "Buy oat milk" (the greater timestamp).

    #expect(onPhone == onLaptop && onPhone.value == "Buy oat milk")
  }

  @Test func orSet() {
    let phone = ReplicaID(rawValue: 1)
    let laptop = ReplicaID(rawValue: 2)
    var onPhone = ORSet<String>()
    let added = onPhone.insert("work", replica: phone) ?? ORSet()
    var onLaptop = onPhone  // both devices start with {"work"}

    let removal = onPhone.remove("work", replica: phone) ?? ORSet()  // phone: {}
    let readd = onLaptop.insert("work", replica: laptop) ?? ORSet()  // laptop re-tags
    let urgent = onLaptop.insert("urgent", replica: laptop) ?? ORSet()

    onPhone.merge(readd.merging(urgent))
    onLaptop.merge(removal)
    // Both hold {"work", "urgent"}: the remove saw only the first "work" add, so the
    // laptop's concurrent add wins.

    #expect(onPhone == onLaptop && onPhone.elements == ["work", "urgent"])
    #expect(added.elements == ["work"])
  }

  @Test func rga() {
    let a = ReplicaID(rawValue: 1)
    let b = ReplicaID(rawValue: 2)
    var left = RGA()
    let base = left.insert("ac".unicodeScalars, at: 0, firstDot: Dot(replica: a, counter: 1))
    var right = RGA()
    right.apply(base)
    let x = left.insert("b".unicodeScalars, at: 1, firstDot: Dot(replica: a, counter: 3))
    let y = right.insert("X".unicodeScalars, at: 1, firstDot: Dot(replica: b, counter: 1))
    left.apply(y)
    right.apply(x)
    // Both read "abXc": "b" and "X" were both typed between "a" and "c", so they are
    // ordered by id, and a's replica id is the smaller. Whole passages typed there
    // concurrently would come out the same way, each in one piece.

    #expect(left.string == "abXc" && right.string == "abXc")
  }

  @Test func text() {
    var phone = SharedText(replica: ReplicaID(rawValue: 1))
    let hello = phone.insert("Hello", at: 0)
    var laptop = SharedText(replica: ReplicaID(rawValue: 2))
    laptop.apply(hello)
    let bang = laptop.insert("!", at: 5)
    let world = phone.insert(" world", at: 5)
    phone.apply(bang)
    laptop.apply(world)
    // phone.string == laptop.string: "Hello world!" or "Hello! world"

    #expect(phone.string == laptop.string)
    #expect(["Hello world!", "Hello! world"].contains(phone.string))
  }

  @Test func hybridLogicalClock() {
    let remoteTimestamp = Timestamp(wallMilliseconds: UInt64.max >> 20)

    var clock = HybridLogicalClock(wallClock: .system)
    let first = clock.tick()
    clock.observe(remoteTimestamp)
    let second = clock.tick()  // > first and > remoteTimestamp

    #expect(second > first && second > remoteTimestamp)
  }

  @Test func byteWriterAndReader() throws {
    var writer = ByteWriter()
    writer.writeVarUInt(300)  // 0xAC 0x02
    writer.writeString("hé")  // 0x03 0x68 0xC3 0xA9
    let bytes = writer.bytes

    #expect(bytes == [0xAC, 0x02, 0x03, 0x68, 0xC3, 0xA9])

    var reader = ByteReader([0xAC, 0x02])
    let value = try reader.readVarUInt()  // 300
    try reader.expectEnd()

    #expect(value == 300)
  }

  @Test func envelope() throws {
    let body: [UInt8] = [1, 2, 3]

    let message = Envelope.seal(kind: .versionVector, body: body)
    let (kind, received) = try Envelope.open(message)

    #expect(kind == .versionVector && Array(received) == body)
  }

  @Test func replicaTable() throws {
    var vector = VersionVector()
    vector[ReplicaID(rawValue: 9)] = 4
    vector[ReplicaID(rawValue: 3)] = 7

    var builder = ReplicaTable.Builder()
    builder.insert(contentsOf: vector.replicas)
    let table = builder.build()
    var writer = ByteWriter()
    table.write(to: &writer)
    for (replica, counter) in vector.entries {
      table.writeIndex(of: replica, to: &writer)
      writer.writeVarUInt(counter)
    }

    // Two ids of 8 bytes after their count, then (index, counter) pairs in id order.
    #expect(writer.bytes.count == 1 + 16 + 4)
    #expect(writer.bytes.suffix(4) == [0, 7, 1, 4])
  }

  @Test func replicaNetwork() {
    var random = SeededGenerator(seed: 47)

    var network = ReplicaNetwork(replicas: 3, initial: ORSet<UInt8>(), using: &random)
    network.run(steps: 20, using: &random) { replica, random in
      replica.state.insert(.random(in: 0..<8, using: &random), replica: replica.id) ?? ORSet()
    }
    let states = network.replicas.map(\.state)

    #expect(states.count == 3 && states.contains { !$0.elements.isEmpty })
  }
}

@Test func mergeIsAJoin() throws {
  try forEachSeed(count: 1_000, base: 0x5E7) { random in
    let network = ORSet.randomNetwork(using: &random) { UInt8.random(in: 0..<4, using: &$0) }
    let states = network.replicas.map(\.state)
    try checkJoinLaws(states[0], states[1], states[2])
  }
}
