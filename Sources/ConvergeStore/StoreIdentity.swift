import Converge

/// The identity record of a store directory: which replica id the device uses, the last
/// counter the store proved it issued, whether the last run closed cleanly, and a
/// fingerprint of the file itself.
///
/// The fingerprint is a hash of the device, inode number and birth time of the identity
/// file (see ``StoreFileSystem/fileIdentity(_:)``), written into the file before it is
/// renamed into place (a rename keeps all three). Copying the directory to another
/// device, or restoring it from a backup, makes new files, with new birth times even when
/// the file system hands an old inode number back, so the fingerprint no longer matches
/// and the store takes a fresh replica id. Where the system records no birth time, the
/// device and inode alone make the fingerprint. A mismatch that is not a copy (a file system that
/// renumbers inodes) only costs one fresh id. A restore that keeps inode numbers (a
/// file-system snapshot rolled back in place) is not detected here; the store then learns
/// of it when a peer shows dots of this id beyond the store's (see
/// ``DocumentStore/recordAcknowledgement(_:from:)``).
struct StoreIdentity: Equatable, Sendable {
  static let version: UInt8 = 1
  var replica: ReplicaID
  /// The largest counter of `replica` the store holds durably, written at a clean close.
  var provenCounter: UInt64
  var cleanShutdown: Bool
  var fingerprint: UInt64

  var encoded: [UInt8] {
    RecordFrame.framed(
      [Self.version, cleanShutdown ? 1 : 0]
        + RecordFrame.littleEndianBytes([replica.rawValue, provenCounter, fingerprint]))
  }

  /// The record in `bytes`, or `nil` if they are damaged or of an unknown version.
  init?(decoding bytes: [UInt8]) {
    guard let payload = RecordFrame.onlyRecord(in: bytes), payload.count == 26,
      payload.first == Self.version
    else { return nil }
    let flag = payload[payload.startIndex + 1]
    guard flag <= 1 else { return nil }
    func word(_ index: Int) -> UInt64 { RecordFrame.littleEndianWord(payload, at: 2 + index * 8) }
    guard word(0) != 0 else { return nil }
    self.init(
      replica: ReplicaID(rawValue: word(0)), provenCounter: word(1), cleanShutdown: flag == 1,
      fingerprint: word(2))
  }

  init(replica: ReplicaID, provenCounter: UInt64, cleanShutdown: Bool, fingerprint: UInt64) {
    self.replica = replica
    self.provenCounter = provenCounter
    self.cleanShutdown = cleanShutdown
    self.fingerprint = fingerprint
  }
}

/// Why a store took a fresh replica id instead of continuing the stored one.
public enum IdentityChange: Equatable, Sendable {
  /// The directory had no identity record: a first launch.
  case firstLaunch
  /// The identity record was missing or damaged while data was present.
  case identityUnreadable
  /// The directory was copied from elsewhere or restored from a backup.
  case copiedOrRestored
  /// The last run did not close cleanly and its log ended in a damaged record, so the
  /// store cannot prove which counters that run issued.
  case uncleanShutdownUnproven
  /// The identity record names a counter the snapshots and log no longer hold.
  case counterNotHeld
  /// A peer showed dots of this id beyond what the store holds.
  case peerHoldsLaterDots
  /// Opening found files lost or damaged (``StoreRecovery/losses``), so the store cannot
  /// prove which counters it issued.
  case filesLost
}
