import Converge
import ConvergeTestSupport
import Testing

@testable import ConvergeStore

@Suite struct LaunchTests {
  /// 5,000 launches of three devices, each typing a little, syncing through a relay now
  /// and then, and sometimes dying without closing: the document's causal context keeps
  /// one replica per device.
  @Test func fiveThousandLaunchesKeepTheContextAtOneReplicaPerDevice() throws {
    let seed: UInt64 = 0x5107E
    var random = SeededGenerator(seed: seed)
    let devices = (0..<3).map { _ in MemoryFileSystem() }
    var relay = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    var crashes = 0
    var launched: Set<Int> = []
    for launch in 0..<5_000 {
      let device = Int.random(in: 0..<3, using: &random)
      var settings = configuration(devices[device])
      settings.compactionLogBytes = 1 << 10
      let store = try DocumentStore(directory: directory, configuration: settings)
      let change = store.recovery.identityChange
      #expect(
        change == nil || (change == .firstLaunch && !launched.contains(device)),
        "seed \(seed), launch \(launch)")
      launched.insert(device)
      let key = EntityKey(type: "note", id: "n\(Int.random(in: 0..<20, using: &random))")
      // Mostly a register write, sometimes a keystroke: every launch reopens the whole
      // document, so a text that grew by a run a launch would make this test measure
      // decoding rather than launches.
      if Int.random(in: 0..<10, using: &random) == 0 {
        let end = store.replica.document.text(of: "body", in: key).unicodeScalars.count
        store.transact { $0.insertText("x", at: end, in: "body", of: key) }
      } else {
        store.transact { $0.setValue(.int(Int64(launch)), for: "opened", of: key) }
      }
      if Int.random(in: 0..<10, using: &random) == 0 {
        relay.apply(try store.outbox(for: "relay"))
        try store.recordAcknowledgement(relay.context, from: "relay")
        store.apply(relay.delta(since: store.replica.context))
      }
      if Int.random(in: 0..<20, using: &random) == 0 {
        crashes += 1
        devices[device].crash()
      } else {
        try store.close()
      }
      #expect(store.replica.context.replicas.count <= 3, "seed \(seed), launch \(launch)")
    }
    #expect(crashes > 100)
    #expect(relay.context.replicas.count == 3, "seed \(seed)")
  }
}
