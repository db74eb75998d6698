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
    var phone = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(1_700_000_000_000))
    var laptop = Replica(id: ReplicaID(rawValue: 0xB2), wallClock: .fixed(1_700_000_000_100))
    let created = phone.transact { tx in
      tx.setValue(.string("Trip"), for: "title", of: project)
      tx.setParent(project, of: x, in: "parent")
      tx.setParent(project, of: y, in: "parent")
    }
    laptop.apply(created.delta)
    let onPhone = phone.transact { tx in tx.setParent(y, of: x, in: "parent") }
    let onLaptop = laptop.transact { tx in tx.setParent(x, of: y, in: "parent") }
    phone.apply(onLaptop.delta)
    laptop.apply(onPhone.delta)
    let last = phone.transact { tx in tx.setParent(nil, of: y, in: "parent") }
    return (phone.document, last.delta)
  }()
}
