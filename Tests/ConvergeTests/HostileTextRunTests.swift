import ConvergeTestSupport
import Foundation
import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// A text's insert ids and delete dots must be events of their message's causal context,
/// as a register's write and a list's move must: a delta or a state whose text holds ids
/// beyond its context is refused whole, with a typed error, and the replica is unchanged.
/// Accepted, a delta holding this replica's ids beyond its context made the replica's own
/// next keystrokes look stale (``TextRunTests/aRunRefusesIdsTheTextAlreadyHolds()``), so
/// its typing was lost. The messages whose context is derived from their runs (a text
/// edit, kinds 8 and 6, and a frame's records) cover their runs by construction.
@Suite struct HostileTextRunTests {
  private let hostile = ReplicaID(rawValue: 0x0BAD)
  private let me = ReplicaID(rawValue: 0xB2)
  private let note = EntityKey(type: "note", id: "n1")
  private let reason = "text run that is not in the message's context"

  private func dot(_ replica: ReplicaID, _ counter: UInt64) -> Dot {
    Dot(replica: replica, counter: counter)
  }

  /// A delta of `hostile`, context `1...2`, presence `hostile:2`, whose body holds `runs`.
  private func hostileDelta(_ runs: RGADelta) -> DocumentDelta {
    var delta = DocumentDelta()
    delta.context.insert(replica: hostile, counters: CounterRanges(1...2))
    delta.entities[note] = EntityDelta(
      presence: .add(dot(hostile, 2)), fields: ["body": .text(runs)])
    return delta
  }

  /// Expects `body` to throw the refusal of a text run outside its message's context.
  private func expectOutsideContext(_ comment: Comment, _ body: () throws -> Void) {
    let error = #expect(throws: ConvergeDecodingError.self, comment) { try body() }
    guard case .invalidValue(_, let reason)? = error else {
      #expect(error == nil, "not an invalidValue; \(comment)")
      return
    }
    #expect(reason == self.reason, comment)
  }

  /// A replica `me` that made a note, and the bytes of its state.
  private func typist() -> (Replica, [UInt8]) {
    var replica = Replica(id: me, wallClock: .fixed(1_000))
    replica.transact { tx in
      tx.create(note)
      tx.insertText("hi", at: 0, in: "body", of: note)
    }
    return (replica, replica.encodedState())
  }

  /// Runs whose ids (or delete dots) lie outside a hostile delta's context: the
  /// receiver's own ids beyond its counter, the author's ids past the context, and a
  /// delete whose dots run past it.
  private var forgedRuns: [(RGADelta, Comment)] {
    let ownIDs = RGADelta.Insert(
      id: dot(me, 5), lamport: 5, origin: nil, rightOrigin: nil, scalars: ["x", "y", "z"])
    let pastContext = RGADelta.Insert(
      id: dot(hostile, 2), lamport: 2, origin: nil, rightOrigin: nil, scalars: ["a", "b"])
    let deletePastContext = RGADelta.Delete(
      dot: dot(hostile, 2), target: dot(me, 2), count: 2, isDescending: false)
    let deleteOfOthers = RGADelta.Delete(
      dot: dot(me, 7), target: dot(me, 2), count: 1, isDescending: false)
    return [
      (RGADelta(inserts: [ownIDs], deletes: []), "the receiver's ids beyond its counter"),
      (RGADelta(inserts: [pastContext], deletes: []), "an insert run past the context"),
      (RGADelta(inserts: [], deletes: [deletePastContext]), "delete dots past the context"),
      (RGADelta(inserts: [], deletes: [deleteOfOthers]), "a delete dot of another replica"),
    ]
  }

  @Test func aDeltaWhoseTextRunsLieOutsideItsContextIsRefused() throws {
    for (runs, comment) in forgedRuns {
      let bytes = hostileDelta(runs).encoded()
      #expect(try Envelope.open(bytes[...]).0 == .documentDelta, comment)
      expectOutsideContext(comment) { _ = try DocumentDelta(decoding: bytes) }
      var (replica, before) = typist()
      expectOutsideContext(comment) { try replica.apply(encodedDelta: bytes) }
      #expect(replica.encodedState() == before, comment)
      // The replica still types, and its keystrokes land.
      replica.transact { tx in tx.insertText("!", at: .max, in: "body", of: note) }
      #expect(replica.document.text(of: "body", in: note) == "hi!", comment)
      // A sync message carrying it is refused too.
      let message = SyncMessage(context: CausalContext(), delta: hostileDelta(runs)).encoded()
      expectOutsideContext(comment) { _ = try SyncMessage(decoding: message) }
    }
  }

  @Test func theSameRunsInsideTheContextAreAccepted() throws {
    let run = RGADelta.Insert(
      id: dot(hostile, 1), lamport: 1, origin: nil, rightOrigin: nil, scalars: ["a"])
    let delete = RGADelta.Delete(
      dot: dot(hostile, 2), target: dot(me, 2), count: 1, isDescending: false)
    let bytes = hostileDelta(RGADelta(inserts: [run], deletes: [delete])).encoded()
    var (replica, _) = typist()
    try replica.apply(encodedDelta: bytes)
    #expect(replica.document.text(of: "body", in: note) == "ia")
  }

  @Test func aStateWhoseTextRunsLieOutsideItsContextIsRefused() throws {
    for (runs, comment) in forgedRuns {
      // Applied in memory, a delta's context is not checked: the document then holds
      // runs its context lacks, and its state is the forged one.
      var (replica, _) = typist()
      replica.apply(hostileDelta(runs))
      let bytes = replica.encodedState()
      expectOutsideContext(comment) { _ = try Document(decoding: bytes) }
      expectOutsideContext(comment) { _ = try Replica(restoring: bytes, wallClock: .fixed(0)) }
      // A store's own snapshot, its texts deferred, is refused whole as well: each text is
      // checked from its runs when it is deferred, not at its first read.
      let key = SnapshotKey(low: 0x5EED, high: 0xC0DE)
      let tag = key.tag(of: bytes)
      expectOutsideContext(comment) { _ = try Document(decoding: bytes, tag: tag, key: key) }
      let legacy = replica.document.legacyEncoded()
      expectOutsideContext(comment) { _ = try Document(decoding: legacy) }
    }
  }

  /// The deferred load of a snapshot whose texts are all within its context defers them
  /// (the check reads their runs, not their content).
  @Test func aGoodSnapshotStillDefersItsTexts() throws {
    let (_, bytes) = typist()
    let key = SnapshotKey(low: 1, high: 2)
    let loaded = try Document(decoding: bytes, tag: key.tag(of: bytes), key: key)
    #expect(loaded.deferredTextCount == 1)
    #expect(loaded == (try Document(decoding: bytes)))
  }

  /// A text edit message (kind 8), its earlier form (kind 6) and a frame state no
  /// context: the decoder derives it from the runs, so it covers every id they hold.
  /// Runs that name the receiver's ids then advance its counter, and its next keystroke
  /// takes a fresh dot and lands.
  @Test func aTextEditsDerivedContextCoversItsRuns() throws {
    let run = RGADelta.Insert(
      id: dot(me, 5), lamport: 5, origin: nil, rightOrigin: nil, scalars: ["x", "y"])
    let delete = RGADelta.Delete(
      dot: dot(me, 9), target: dot(me, 2), count: 1, isDescending: false)
    for runs in [
      RGADelta(inserts: [run], deletes: []), RGADelta(inserts: [], deletes: [delete]),
    ] {
      let edit = try #require(DocumentDelta.textEdit(runs, field: "body", of: note))
      var stream = SessionStream(streamID: 7)
      var receiving = SessionStream()
      let forms: [(DocumentDelta, Comment)] = [
        (try DocumentDelta(decoding: edit.encoded()), "kind 8"),
        (try DocumentDelta(decoding: edit.legacyEncoded()), "kind 6"),
        (try receiving.decode(stream.encode(edit)[...]), "frame"),
      ]
      #expect(try Envelope.open(edit.encoded()[...]).0 == .textEditDelta)
      for (decoded, comment) in forms {
        let field = try #require(decoded.entities[note]?.fields["body"]?.runs, comment)
        for insert in field.inserts {
          let last = insert.id.counter + UInt64(insert.length) - 1
          #expect(
            decoded.context.counters(of: insert.id.replica).contains(insert.id.counter...last),
            comment)
        }
        for delete in field.deletes {
          let last = delete.dot.counter + delete.count - 1
          #expect(
            decoded.context.counters(of: delete.dot.replica).contains(delete.dot.counter...last),
            comment)
        }
        var (replica, _) = typist()
        replica.apply(decoded)
        replica.transact { tx in tx.insertText("!", at: 0, in: "body", of: note) }
        #expect(replica.document.text(of: "body", in: note).hasPrefix("!"), comment)
      }
    }
  }

  /// No false refusals: every message the library writes over random histories of
  /// concurrent replicas (each commit, deltas joined, handshake answers, states and
  /// tagged snapshots, before and after forgetting stable deletes) still decodes.
  @Test func everyMessageTheLibraryWritesStillDecodes() throws {
    try forEachSeed(count: 60, base: 0x7E47_C7A0) { random in
      var network = DocumentNetwork(replicaCount: 3, rounds: 24, using: &random)
      try checkDecodes(network, using: &random)
      // Everyone learns everything; the deletes are then stable and forgotten.
      for index in network.replicas.indices {
        for delta in network.deltas { network.replicas[index].apply(delta) }
      }
      let stable = network.replicas[0].context
      for index in network.replicas.indices {
        network.replicas[index].forgetDeleted(stable: stable)
      }
      for _ in 0..<6 {
        let author = Int.random(in: 0..<3, using: &random)
        network.deltas.append(network.replicas[author].randomTransaction(using: &random).delta)
      }
      try checkDecodes(network, using: &random)
    }
  }

  private func checkDecodes(_ network: DocumentNetwork, using random: inout SeededGenerator)
    throws
  {
    var messages: [[UInt8]] = network.deltas.map { $0.encoded() }
    var joined = DocumentDelta()
    for delta in network.deltas where Bool.random(using: &random) {
      joined.merge(delta)
      messages.append(joined.encoded())
    }
    for replica in network.replicas {
      messages.append(replica.delta(since: CausalContext()).encoded())
      for peer in network.replicas {
        messages.append(replica.delta(since: peer.context).encoded())
      }
    }
    for bytes in messages {
      _ = try DocumentDelta(decoding: bytes)
    }
    for (replica, loaded) in try network.taggedLoads(using: &random) {
      #expect(try Document(decoding: replica.encodedState()) == loaded)
    }
  }
}
