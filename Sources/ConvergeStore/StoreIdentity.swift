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
///
/// A rejoin (``DocumentStore/rejoin(onto:stable:heldBy:as:)``) writes, before the snapshot of
/// its new generation, a record of version 2 that also names the retired id, its counter
/// and that generation (``Rejoin``): opening uses the fresh id only if the snapshot of that
/// generation (or a later one) was recovered, and the retired id otherwise, so a crash
/// anywhere in the rejoin reopens the old state under the old id or the new state under
/// the fresh id, never one with the other's id.
///
/// The record also keeps the replica ids this device retired (``retired``: its own ids
/// before each rejoin, and the ids ``DocumentStore/retire(_:)`` was given), so that a
/// reopened store goes on dropping what arrives late waiting for their events. A record
/// that names any is of version 3; one that names none keeps version 1 or 2, so records
/// of earlier versions read as retiring nothing and a store that never retired an id
/// writes what earlier versions read.
///
/// ```text
/// version 1   [1, clean] replica, proven counter, fingerprint                      (26 bytes)
/// version 2   [2, clean] … , retired id, its counter, rejoin generation           (50 bytes)
/// version 3   [3, clean] … (six words, the rejoin's 0 if none), count, count ids  (58 + 8n)
/// ```
/// (after the frame; words are 8 bytes, little-endian).
struct StoreIdentity: Equatable, Sendable {
  static let version: UInt8 = 1
  static let rejoinVersion: UInt8 = 2
  static let retiredVersion: UInt8 = 3
  var replica: ReplicaID
  /// The largest counter of `replica` the store holds durably, written at a clean close.
  var provenCounter: UInt64
  var cleanShutdown: Bool
  var fingerprint: UInt64
  /// The id a rejoin under way retires, if any.
  var rejoin: Rejoin?
  /// The ids this device retired, ascending.
  var retired: [ReplicaID] = []

  /// A rejoin under way: the retired id, its counter, and the generation whose snapshot
  /// holds the state of the fresh id.
  struct Rejoin: Equatable, Sendable {
    var retired: ReplicaID
    var retiredCounter: UInt64
    var generation: UInt64
  }

  var encoded: [UInt8] {
    var words = [replica.rawValue, provenCounter, fingerprint]
    let version: UInt8
    if retired.isEmpty {
      if let rejoin {
        words += [rejoin.retired.rawValue, rejoin.retiredCounter, rejoin.generation]
      }
      version = rejoin == nil ? Self.version : Self.rejoinVersion
    } else {
      words += [
        rejoin?.retired.rawValue ?? 0, rejoin?.retiredCounter ?? 0, rejoin?.generation ?? 0,
        UInt64(retired.count),
      ]
      words += retired.map(\.rawValue)
      version = Self.retiredVersion
    }
    return RecordFrame.framed(
      [version, cleanShutdown ? 1 : 0] + RecordFrame.littleEndianBytes(words))
  }

  /// The record in `bytes`, or `nil` if they are damaged or of an unknown version.
  init?(decoding bytes: [UInt8]) {
    guard let payload = RecordFrame.onlyRecord(in: bytes), let version = payload.first,
      (version == Self.version && payload.count == 26)
        || (version == Self.rejoinVersion && payload.count == 50)
        || (version == Self.retiredVersion && payload.count >= 58 && payload.count % 8 == 2)
    else { return nil }
    let flag = payload[payload.startIndex + 1]
    guard flag <= 1 else { return nil }
    func word(_ index: Int) -> UInt64 { RecordFrame.littleEndianWord(payload, at: 2 + index * 8) }
    guard word(0) != 0 else { return nil }
    self.init(
      replica: ReplicaID(rawValue: word(0)), provenCounter: word(1), cleanShutdown: flag == 1,
      fingerprint: word(2))
    if version == Self.rejoinVersion || (version == Self.retiredVersion && word(3) != 0) {
      guard word(3) != 0 else { return nil }
      rejoin = Rejoin(
        retired: ReplicaID(rawValue: word(3)), retiredCounter: word(4), generation: word(5))
    }
    if version == Self.retiredVersion {
      // The count must be exactly what the payload holds (compared, never multiplied).
      let count = (payload.count - 58) / 8
      guard word(6) == UInt64(count), count > 0 else { return nil }
      retired = (0..<count).map { ReplicaID(rawValue: word(7 + $0)) }
      guard retired.allSatisfy({ $0.rawValue != 0 }),
        zip(retired, retired.dropFirst()).allSatisfy({ $0.rawValue < $1.rawValue })
      else { return nil }
    }
  }

  init(
    replica: ReplicaID, provenCounter: UInt64, cleanShutdown: Bool, fingerprint: UInt64,
    rejoin: Rejoin? = nil, retired: Set<ReplicaID> = []
  ) {
    self.replica = replica
    self.provenCounter = provenCounter
    self.cleanShutdown = cleanShutdown
    self.fingerprint = fingerprint
    self.rejoin = rejoin
    self.retired = retired.sorted { $0.rawValue < $1.rawValue }
  }

  /// The identity a store recovered at `generation` continues: this one, or the retired
  /// one if the rejoin's snapshot was not recovered.
  func resolved(atGeneration generation: UInt64) -> StoreIdentity {
    guard let rejoin else { return self }
    guard generation < rejoin.generation else {
      return StoreIdentity(
        replica: replica, provenCounter: provenCounter, cleanShutdown: cleanShutdown,
        fingerprint: fingerprint, retired: Set(retired).union([rejoin.retired]))
    }
    return StoreIdentity(
      replica: rejoin.retired, provenCounter: rejoin.retiredCounter,
      cleanShutdown: cleanShutdown, fingerprint: fingerprint, retired: Set(retired))
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
  /// The device rejoined after its relay retired it (silent longer than the space's
  /// horizon): its edits the current state lacked were re-applied on it under a fresh id
  /// (``DocumentStore/rejoin(onto:stable:heldBy:as:)``).
  case retired
}
