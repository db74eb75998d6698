import Converge
import ConvergeTestSupport

/// The oracle's verdict on a set of replicas.
public struct OracleVerdict: Sendable {
  /// Whether every check passed.
  public var converged: Bool { failures.isEmpty }
  /// What went wrong, one readable line each.
  public var failures: [String]
  /// The SHA-256 of each replica's state fingerprint, in replica order.
  public var stateDigests: [String]
  /// The visible entities of the first replica.
  public var entityCount: Int
  /// The length of all visible text of the first replica, in Unicode scalars.
  public var textLength: Int
}

/// Decides whether replicas converged by comparing their states, never by trusting that
/// nothing was left to send.
///
/// For every replica: its internal invariants hold (`_checkInvariants()`, which traps on
/// a broken invariant), its encoded state loads back equal to it, nothing waits for
/// missing dependencies (`hasPendingChanges`), its
/// state fingerprint equals the first replica's, its document equals the first's
/// (`==`, which also compares what is not visible, such as tombstones and deleted
/// entities), and its visible content read through the typed facade is the same. The
/// converged texts must interleave no concurrent passage (``checkNonInterleaving(_:)``,
/// FugueMax's guarantee), and forgetting the deleted entities under the replicas' stable
/// cut must change nothing visible and keep them equal (``forgettingFailures(of:)``).
public enum Oracle {
  ///
  /// With `pendingExplained`, edits waiting for missing dependencies are not a failure:
  /// the run lost some dots for good (a device restored from a stale backup took back
  /// edits nobody else had received), so edits made on top of them wait forever, on
  /// every replica alike.
  ///
  /// With `presenceChecked`, every presence must name only adds its replica holds
  /// (`Document.presenceNamingAbsentEvent()`): true of every run unless a store lost a
  /// file from the middle of its history (a snapshot), which replays newer deltas
  /// without what they were computed against.
  public static func check(
    _ replicas: [Replica], pendingExplained: Bool = false, presenceChecked: Bool = true
  ) -> OracleVerdict {
    var failures: [String] = []
    var digests: [String] = []
    guard let first = replicas.first else {
      return OracleVerdict(failures: [], stateDigests: [], entityCount: 0, textLength: 0)
    }
    let reference = first.document.encoded()
    let referenceNotes = first.all(SimulatedNote.self)
    let referenceTasks = first.all(SimulatedTask.self)
    for (index, replica) in replicas.enumerated() {
      let document = replica.document
      document._checkInvariants()
      if presenceChecked, let absent = document.presenceNamingAbsentEvent() {
        failures.append(
          "replica \(index) (\(replica.id)): a presence names an absent add, \(absent)")
      }
      if document.hasPendingChanges && !pendingExplained {
        failures.append("replica \(index) (\(replica.id)) still has pending changes")
      }
      let fingerprint = index == 0 ? reference : document.encoded()
      digests.append(SHA256Hasher.hexDigest(of: fingerprint))
      // What a device saves must load back as the document it has in memory: a loader
      // that orders or drops something differently shows here, on every run, whether or
      // not a device restarted.
      if (try? Document(decoding: fingerprint)) != document {
        failures.append(
          "replica \(index) (\(replica.id)) does not load back equal from its own bytes")
      }
      guard index > 0 else { continue }
      if fingerprint != reference {
        failures.append(
          "replica \(index) (\(replica.id)) fingerprint \(digests[index].prefix(16)) differs "
            + "from replica 0's \(digests[0].prefix(16))"
            + firstDifference(
              DocumentFingerprint.bytes(of: first.document), DocumentFingerprint.bytes(of: document)
            ))
      }
      if document != first.document {
        failures.append("replica \(index) (\(replica.id)) document != replica 0's document")
      }
      let notes = replica.all(SimulatedNote.self)
      let tasks = replica.all(SimulatedTask.self)
      if !notes.elementsEqual(referenceNotes, by: { $0.id == $1.id && $0.value == $1.value })
        || !tasks.elementsEqual(referenceTasks, by: { $0.id == $1.id && $0.value == $1.value })
      {
        failures.append("replica \(index) (\(replica.id)) shows different notes or tasks")
      }
    }
    if failures.isEmpty { failures += nonInterleavingFailures(of: first.document) }
    if failures.isEmpty { failures += forgettingFailures(of: replicas) }
    var textLength = 0
    for key in first.document.keys {
      for name in first.document.fieldNames(of: key)
      where first.document.fieldKind(name, of: key) == .text {
        textLength += first.document.sequence(of: name, in: key)?.count ?? 0
      }
    }
    return OracleVerdict(
      failures: failures, stateDigests: digests, entityCount: first.document.keys.count,
      textLength: textLength)
  }

  /// The first line where two textual fingerprints differ, for the failure message.
  static func firstDifference(_ left: [UInt8], _ right: [UInt8]) -> String {
    let leftLines = left.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    let rightLines = right.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    for (index, pair) in zip(leftLines, rightLines).enumerated() where pair.0 != pair.1 {
      return "; first difference at line \(index + 1): "
        + excerpt(pair.0) + " vs " + excerpt(pair.1)
    }
    return "; one fingerprint is a prefix of the other"
  }

  private static func excerpt(_ line: ArraySlice<UInt8>) -> String {
    let text = String(decoding: line.prefix(120), as: UTF8.self)
    return "«" + text + (line.count > 120 ? "…" : "") + "»"
  }
}
