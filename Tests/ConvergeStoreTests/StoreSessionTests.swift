import Converge
import Testing

@testable import ConvergeStore

/// A store driving a ``SyncSession`` records what the peer states it holds, so the
/// pending badge clears without the app recording acknowledgements itself.
@Suite struct StoreSessionTests {
  /// Runs sessions between `store` and the plain replica `peer` until neither speaks.
  func synchronize(
    _ store: DocumentStore, _ storeSession: inout SyncSession, _ peer: inout Replica,
    _ peerSession: inout SyncSession
  ) throws {
    for _ in 0..<10 {
      let outgoing = try store.makeMessage(for: &storeSession)
      if let outgoing { peerSession.receive(outgoing, into: &peer) }
      let incoming = peerSession.makeMessage(for: peer)
      if let incoming { try store.receive(incoming, through: &storeSession, from: "laptop") }
      if outgoing == nil && incoming == nil { return }
    }
    Issue.record("the sessions did not go quiet")
  }

  @Test func aHandshakeAcknowledgesAndClearsThePendingBadge() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("hello", into: store)
    #expect(store.pendingCount == 1)
    #expect(store.isPending(note))

    var peer = Replica(id: ReplicaID(rawValue: 99), wallClock: .fixed(0))
    var storeSession = SyncSession()
    var peerSession = SyncSession()
    try synchronize(store, &storeSession, &peer, &peerSession)

    #expect(peer.document.text(of: "body", in: note) == "hello")
    #expect(store.pendingCount == 0)
    #expect(!store.isPending(note))
    #expect(store.acknowledgedContext(of: "laptop") == peer.context)
    // The outbox is the same mechanism: nothing is left for the peer.
    #expect(try store.outbox(for: "laptop").isEmpty)

    // The acknowledgement is durable, and the peer's edit was logged like an edit.
    peer.transact { $0.insertText("!", at: 5, in: "body", of: note) }
    try synchronize(store, &storeSession, &peer, &peerSession)
    try store.close()
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem))
    #expect(reopened.replica.document.text(of: "body", in: note) == "hello!")
    #expect(reopened.pendingCount == 0)
  }

  /// A message the session declines (an answer computed while an earlier message to the
  /// store was lost) is not logged either: replayed at the next open, it would leave a
  /// presence naming an event the store never received.
  @Test func aDeclinedAnswerIsNotLogged() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    var peer = Replica(id: ReplicaID(rawValue: 99), wallClock: .fixed(0))
    var third = Replica(id: ReplicaID(rawValue: 98), wallClock: .fixed(0))
    peer.transact { $0.setValue(.string("draft"), for: "title", of: note) }
    third.apply(peer.delta(since: third.context))
    var (storeSession, peerSession) = (SyncSession(), SyncSession())
    try synchronize(store, &storeSession, &peer, &peerSession)
    // The peer's edit is lost on its way; a third device's edit of the note reaches the
    // peer, whose next answer omits its own edit.
    peer.transact { $0.setValue(.string("done"), for: "status", of: note) }
    _ = peerSession.makeMessage(for: peer)
    third.transact { $0.insert(.string("home"), into: "tags", of: note) }
    peer.apply(third.delta(since: peer.context))
    let answer = peerSession.makeMessage(for: peer)
    let gapped = try #require(answer)
    let before = store.replica.document
    try store.receive(gapped, through: &storeSession, from: "laptop")
    #expect(store.replica.document == before)
    try store.close()
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem))
    #expect(reopened.replica.document == before)
    #expect(reopened.replica.document.presenceNamingAbsentEvent() == nil)
  }

  @Test func aLivePushIsNotAnAcknowledgement() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("a", into: store)
    var peer = Replica(id: ReplicaID(rawValue: 99), wallClock: .fixed(0))
    var storeSession = SyncSession()
    let commit = peer.transact { $0.insertText("b", at: 0, in: "title", of: note) }
    var peerSession = SyncSession()
    try store.receive(peerSession.push(commit, from: peer), through: &storeSession, from: "laptop")
    #expect(store.replica.document.text(of: "title", in: note) == "b")
    // The laptop holds what it pushed, and nothing of ours.
    #expect(store.acknowledgedContext(of: "laptop") == commit.delta.context)
    #expect(store.pendingCount == 1)
  }

  /// The events a peer pushed are its own: a reopened store does not count them as
  /// pending here (it once did, since only stated contexts were saved, so the badge of
  /// a device that had only received grew after a relaunch).
  @Test func aPeersPushIsNotPendingAfterAReopen() throws {
    let fileSystem = MemoryFileSystem()
    let store = try DocumentStore(directory: directory, configuration: configuration(fileSystem))
    type("a", into: store)
    var peer = Replica(id: ReplicaID(rawValue: 99), wallClock: .fixed(0))
    let other = EntityKey(type: "note", id: "other")
    let commit = peer.transact { $0.insertText("b", at: 0, in: "title", of: other) }
    var storeSession = SyncSession()
    var peerSession = SyncSession()
    try store.receive(peerSession.push(commit, from: peer), through: &storeSession, from: "laptop")
    #expect(store.pendingEntities == [note])
    try store.close()
    let reopened = try DocumentStore(
      directory: directory, configuration: configuration(fileSystem))
    #expect(reopened.pendingEntities == [note])
    #expect(reopened.acknowledgedContext(of: "laptop") == commit.delta.context)
  }
}
