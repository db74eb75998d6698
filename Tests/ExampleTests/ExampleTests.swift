import ConvergeTestSupport
import Foundation
import Testing

/// Runs each example program as a user would and checks what it prints.
@Suite struct ExampleTests {
  static func run(_ product: String) throws -> (status: Int32, output: String) {
    let (status, data) = try BuiltProduct.run(product, includingStandardError: true)
    return (status, String(decoding: data, as: UTF8.self))
  }

  @Test func notesOnTwoDevicesMergeThroughAFolder() throws {
    let (status, output) = try Self.run("NotesTwoDevices")
    #expect(status == 0, "\(output)")
    #expect(
      output.contains(
        #"groceries: "Shopping" [home, weekly] archived=false body="oat milk, eggs""#), "\(output)")
    #expect(
      output.contains(#"trip: "Trip" [] archived=true body="book train, pack charger""#),
      "\(output)")
    #expect(output.contains("phone and laptop hold identical bytes"))
    // The exchange takes each device's outbox for the drive and records what the drive
    // holds: the badge clears, and what a device read is never written back.
    #expect(output.contains("phone: 2 notes not on the drive\n"), "\(output)")
    #expect(output.contains("phone: 0 notes not on the drive after the upload"), "\(output)")
    #expect(output.contains("pending: phone 0, laptop 0"), "\(output)")
    #expect(output.contains("files on the drive: 3"), "\(output)")
  }

  @Test func aTaskBoardOnThreeDevicesMergesAndKeepsTheEditedTask() throws {
    let (status, output) = try Self.run("TaskBoard")
    #expect(status == 0, "\(output)")
    // Columns are lists; a card dragged into two columns at once shows in one.
    #expect(output.contains("  Inbox: Call plumber\n"), "\(output)")
    #expect(output.contains("  Next: \n"), "\(output)")
    #expect(output.contains("  Waiting: Renew passport, File taxes\n"), "\(output)")
    #expect(output.contains("- File taxes [Waiting] next, priority high"), "\(output)")
    #expect(output.contains("tags [2026, money]"), "\(output)")
    #expect(
      output.contains("- Call plumber [Inbox] inbox, priority none, no due date, flagged=true"),
      "\(output)")
    #expect(output.contains("- Renew passport [Waiting] waiting"), "\(output)")
    // Subtasks nested both ways at once: the earlier move stands, no cycle.
    #expect(
      output.contains("  Renew passport\n    Fill in the form\n      Take photos\n"), "\(output)")
    #expect(output.contains("all three devices hold identical bytes"))
  }

  @Test func liveTypingSendsFramesAndRepairsADroppedConnection() throws {
    let (status, output) = try Self.run("LiveTyping")
    #expect(status == 0, "\(output)")
    #expect(output.contains("live: identical = true"), "\(output)")
    #expect(output.contains("cursor: 7 -> 14, still after \"Standup\""), "\(output)")
    #expect(output.contains("dropped: identical = false"), "\(output)")
    #expect(output.contains("reconnected: identical = true"), "\(output)")
    #expect(output.contains("Monday Standup\n- ship the sync fix\n- lunch at 12"), "\(output)")
    #expect(output.contains("phone typed 20 characters in 222 bytes"), "\(output)")
    #expect(
      output.contains("undo: the laptop reads \"Monday Standup\\n\", identical = true"),
      "\(output)")
  }

  @Test func anAppStorePersistsRestoresAndPublishes() throws {
    let (status, output) = try Self.run("AppStore")
    #expect(status == 0, "\(output)")
    #expect(output.contains("launch: first run, empty replica"), "\(output)")
    #expect(output.contains("pending 2 notes"), "\(output)")
    // Edits leave the device only once durable.
    #expect(output.contains("laptop before the sync: 0 notes"), "\(output)")
    #expect(output.contains("laptop after the sync: 2 notes, pending 0"), "\(output)")
    #expect(output.contains("ui: created [\"groceries\"]"), "\(output)")
    #expect(output.contains("ui: created [], updated [\"ideas\"]"), "\(output)")
    #expect(output.contains("launch: reopened 2 notes, pending 0"), "\(output)")
    #expect(output.contains("ideas: Ideas — a CRDT notes app"), "\(output)")
    #expect(output.contains("state survived the restart"), "\(output)")
    #expect(output.contains("kept the replica id"), "\(output)")
  }
}
