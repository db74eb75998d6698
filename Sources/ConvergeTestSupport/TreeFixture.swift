import Converge

/// The scenario behind `tree-v2.bin` and `tree-move-delta-v2.bin`: a project with two
/// tasks, where one device moves X under Y while another moves Y under X (the later
/// write refused by the forest), then the phone's move of Y under the project alone.
package enum TreeFixture {
  package static let project = EntityKey(type: "task", id: "project")
  package static let x = EntityKey(type: "task", id: "x")
  package static let y = EntityKey(type: "task", id: "y")

  /// The phone's document after the exchange, and its last move's delta.
  package static let (document, move): (Document, DocumentDelta) = {
    var devices = FixtureDevices()
    devices.shared { tx in
      tx.setValue(.string("Trip"), for: "title", of: project)
      tx.setParent(project, of: x, in: "parent")
      tx.setParent(project, of: y, in: "parent")
    }
    devices.exchanged(
      phone: { $0.setParent(y, of: x, in: "parent") },
      laptop: { $0.setParent(x, of: y, in: "parent") })
    let last = devices.phone.transact { $0.setParent(nil, of: y, in: "parent") }
    return (devices.phone.document, last.delta)
  }()
}
