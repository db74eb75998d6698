import ConvergeTestSupport
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// Entities with the same field names share one list of them, whichever way the
/// document was built; sharing never changes what a table holds.
@Suite struct FieldNameListsTests {
  static let names = ["body", "due", "pinned", "tags", "title", "é", "e\u{301}"]

  /// Where a list's elements live: equal for two tables sharing one list.
  static func storage(of names: [String]) -> UnsafeRawPointer? {
    names.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
  }

  @Test func insertingMatchesAPlainInsert() throws {
    try forEachSeed(count: 300, base: 0xF1E1D) { random in
      var lists = FieldNameLists()
      var plain: [[String]] = Array(repeating: [], count: 4)
      var shared = plain
      for _ in 0..<40 {
        let table = Int.random(in: 0..<plain.count, using: &random)
        let name = Self.names.randomElement(using: &random) ?? "title"
        guard !plain[table].contains(name) else { continue }
        let position = plain[table].partitioningIndex { !fieldNameOrder($0, name) }
        plain[table].insert(name, at: position)
        shared[table] = lists.inserting(name, at: position, into: shared[table])
        guard shared == plain else {
          throw ExpectationFailure("shared lists \(shared) differ from \(plain)")
        }
      }
      for (index, list) in shared.enumerated() {
        guard lists.shared(list) == plain[index] else {
          throw ExpectationFailure("shared(\(list)) changed the names")
        }
      }
    }
  }

  @Test func anEqualListIsReturnedOnlyWhileHeld() {
    var lists = FieldNameLists()
    let first = lists.inserting("title", at: 0, into: [])
    let again = lists.inserting("title", at: 0, into: [])
    #expect(Self.storage(of: first) == Self.storage(of: again))
    // Filling every slot with other lists lets the first go.
    for index in 0..<FieldNameLists.capacity {
      _ = lists.shared(["f\(index)"])
    }
    let later = lists.inserting("title", at: 0, into: [])
    #expect(later == first)
    #expect(Self.storage(of: later) != Self.storage(of: first))
  }

  @Test func notesShareTheirNamesAfterEditsAndAfterDecoding() throws {
    var replica = Replica(id: ReplicaID(rawValue: 1))
    let keys = (0..<3).map { EntityKey(type: "note", id: "\($0)") }
    for key in keys {
      replica.transact { tx in
        tx.create(key)
        tx.setValue(.string("Title"), for: "title", of: key)
        tx.insert(.string("home"), into: "tags", of: key)
        tx.insertText("Body", at: 0, in: "body", of: key)
      }
    }
    // A remote field arriving in another order, and a field another note lacks.
    var peer = Replica(id: ReplicaID(rawValue: 2))
    peer.apply(replica.document.delta(since: CausalContext()))
    let pinned = peer.transact { tx in tx.setValue(.bool(true), for: "pinned", of: keys[2]) }
    replica.apply(pinned.delta)

    let decoded = try Document(decoding: replica.document.encoded())
    for document in [replica.document, peer.document, decoded] {
      let lists = keys.compactMap { document.entities[$0]?.fields.keys }
      #expect(lists[0] == ["body", "tags", "title"])
      #expect(lists[2] == ["body", "pinned", "tags", "title"])
      #expect(Self.storage(of: lists[0]) == Self.storage(of: lists[1]))
      #expect(Self.storage(of: lists[0]) != Self.storage(of: lists[2]))
    }
    #expect(decoded == replica.document)
  }

  /// Two spellings of one name (canonically equivalent, other bytes) are two lists: an
  /// entity given the other's list would hold, encode and send its field under the other
  /// spelling, and two replicas' bytes would differ.
  @Test func aCanonicallyEquivalentNameKeepsItsOwnBytes() throws {
    let (precomposed, decomposed) = ("\u{E9}", "e\u{301}")
    let (first, second) = (EntityKey(type: "note", id: "a"), EntityKey(type: "note", id: "b"))
    var replica = Replica(id: ReplicaID(rawValue: 1))
    var peer = Replica(id: ReplicaID(rawValue: 2))
    let commit = replica.transact { tx in
      tx.create(first)
      tx.setValue(.int(1), for: "d", of: first)
      tx.setValue(.int(2), for: precomposed, of: first)
      tx.create(second)
      tx.setValue(.int(3), for: "d", of: second)
      tx.setValue(.int(4), for: decomposed, of: second)
    }
    peer.apply(commit.delta)
    for document in [replica.document, peer.document] {
      let names = [first, second].map { document.entities[$0]?.fields.keys ?? [] }
      #expect(
        names.map { $0.map { Array($0.utf8) } }
          == [["d", precomposed], ["d", decomposed]].map {
            $0.map { Array($0.utf8) }
          })
    }
    let bytes = replica.document.encoded()
    #expect(bytes == peer.document.encoded())
    #expect(try Document(decoding: bytes).encoded() == bytes)
  }
}
