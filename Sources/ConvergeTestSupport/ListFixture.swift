import Converge

/// The scenario behind `list-v2.bin` and `list-move-delta-v2.bin`: a board column whose
/// cards two devices reorder concurrently (the same card moved on both, a card removed
/// on one and moved on the other, a card inserted), and the phone's last move alone.
package enum ListFixture {
  package static let column = EntityKey(type: "column", id: "todo")

  /// The phone's document after the exchange, and its last move's delta.
  package static let (document, move): (Document, DocumentDelta) = {
    var devices = FixtureDevices()
    devices.shared { tx in
      tx.setValue(.string("Todo"), for: "title", of: column)
      for (index, card) in ["A", "B", "C", "D"].enumerated() {
        tx.insert(.string(card), at: index, intoList: "cards", of: column)
      }
    }
    devices.exchanged(
      phone: { tx in
        tx.move(from: 0, to: 3, inList: "cards", of: column)
        tx.remove(at: 0, fromList: "cards", of: column)
      },
      laptop: { tx in
        tx.move(from: 0, to: 1, inList: "cards", of: column)
        tx.move(from: 2, to: 0, inList: "cards", of: column)
        tx.insert(.string("E"), at: 4, intoList: "cards", of: column)
      })
    let last = devices.phone.transact { $0.move(from: 0, to: 2, inList: "cards", of: column) }
    return (devices.phone.document, last.delta)
  }()
}

/// The fixed board session behind `session-list-frames-v2.bin`: cards inserted into a
/// column, a card another device inserted moved (its slot's origins name that device), a
/// move to the end and to the front, and a removal (which travels embedded), sent as the
/// frames of one stream (`FORMAT.md` §8.7, the list item record).
package enum ListFramesFixture {
  /// The frames, and the deltas they carry.
  package static func frames() -> (frames: [[UInt8]], deltas: [DocumentDelta]) {
    let column = ListFixture.column
    let devices = FixtureDevices()
    var (phone, laptop) = (devices.phone, devices.laptop)
    var commits: [Commit] = []
    for (index, card) in ["A", "B", "C"].enumerated() {
      commits.append(
        phone.transact { $0.insert(.string(card), at: index, intoList: "cards", of: column) })
    }
    laptop.apply(phone.delta(since: laptop.context))
    let fromLaptop = laptop.transact {
      $0.insert(.string("D"), at: 1, intoList: "cards", of: column)
    }
    phone.apply(fromLaptop.delta)
    commits.append(phone.transact { $0.move(from: 1, to: 3, inList: "cards", of: column) })
    commits.append(phone.transact { $0.move(from: 0, to: 2, inList: "cards", of: column) })
    commits.append(phone.transact { $0.remove(at: 0, fromList: "cards", of: column) })
    commits.append(phone.transact { $0.move(from: 2, to: 0, inList: "cards", of: column) })
    var encoder = SessionStream(streamID: 0x4C15_7F4A)
    let frames = commits.map { encoder.encode($0.delta) }
    return (frames, commits.map(\.delta))
  }

  /// The file: every frame, length-prefixed, in order.
  package static var stream: [UInt8] { SessionFramesFixture.file(of: frames().frames) }
}
