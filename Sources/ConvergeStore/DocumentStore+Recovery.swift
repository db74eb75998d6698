import Converge

extension DocumentStore {
  /// What the files of a directory hold after repair.
  struct Loaded {
    var document = Document()
    var generation: UInt64 = 0
    var logBytes = 0
    var snapshotBytes = 0
    var identity: StoreIdentity?
    /// The store's key, if its file was whole.
    var key: SnapshotKey?
    var identityFileExisted = false
    var acknowledged: [String: CausalContext] = [:]
    var acknowledgementsReset = false
  }

  /// Reads the directory: removes temporary files, reads the key, loads the newest whole
  /// snapshot (its texts deferred if its tag matches the key), replays the logs of its
  /// generation and later (cutting damaged tails), and reads the identity and
  /// acknowledgements.
  ///
  /// - Complexity: O(n) in the bytes of the snapshot and logs read.
  static func recover(
    _ directory: String, _ fileSystem: any StoreFileSystem, _ report: inout StoreRecovery
  ) throws(StoreError) -> Loaded {
    var loaded = Loaded()
    try attempt {
      try fileSystem.createDirectory(directory)
      let names = try fileSystem.contents(ofDirectory: directory)
      for name in names where name.hasSuffix(".tmp") {
        try fileSystem.remove(directory + "/" + name)
      }
      var snapshots: [UInt64] = []
      var logs: [UInt64] = []
      for name in names {
        guard let (kind, generation) = parse(name) else { continue }
        if kind == "snapshot" { snapshots.append(generation) }
        if kind == "log" { logs.append(generation) }
      }
      loaded.key = try fileSystem.read(directory + "/" + keyName).flatMap(decodedKey)

      for generation in snapshots.sorted(by: >) {
        let name = snapshotName(generation)
        let bytes = try fileSystem.read(directory + "/" + name) ?? []
        if let payload = RecordFrame.onlyRecord(in: bytes) {
          // A whole record is the store's own: one of another format version is refused,
          // never taken for damage and passed over for an older snapshot.
          // Bytes this store wrote (their tag matches its key) load with their texts
          // deferred; any others with every check.
          let tag = try fileSystem.read(directory + "/" + tagName(generation)).flatMap(decodedTag)
          let tagged = tag != nil && loaded.key.map { $0.tag(of: payload) } == tag
          let decoded = try decodeRefusingOtherVersions(name) {
            try Document.decode(payload, deferringTexts: tagged)
          }
          if let document = decoded {
            loaded.document = document
            loaded.generation = generation
            loaded.snapshotBytes = bytes.count
            report.snapshotGeneration = generation
            report.snapshotTagged = tagged
            break
          }
        }
        report.damagedSnapshots.append(name)
      }

      for generation in logs.sorted() where generation >= loaded.generation {
        let name = logName(generation)
        let path = directory + "/" + name
        let bytes = try fileSystem.read(path) ?? []
        let (records, validLength) = RecordFrame.records(in: bytes)
        var kept = 0
        for record in records {
          // A record whose frame is whole but whose message does not decode is damage
          // too: the log is cut before it.
          guard
            let delta = try decodeRefusingOtherVersions(
              name, { try DocumentDelta(decoding: record) })
          else { break }
          loaded.document.apply(delta)
          kept = record.endIndex
          report.replayedRecords += 1
        }
        if records.count == 0 || kept == records.last?.endIndex { kept = validLength }
        if kept < bytes.count {
          try fileSystem.truncate(path, to: kept)
          try fileSystem.sync(path)
          report.cutTails.append(
            StoreRecovery.CutTail(file: name, keptBytes: kept, droppedBytes: bytes.count - kept))
        }
        loaded.generation = Swift.max(loaded.generation, generation)
        loaded.logBytes = kept
      }

      if let bytes = try fileSystem.read(directory + "/identity") {
        loaded.identityFileExisted = true
        loaded.identity = StoreIdentity(decoding: bytes)
      }
      if let bytes = try fileSystem.read(directory + "/" + acknowledgementsName) {
        if let acknowledged = try decodeAcknowledgements(bytes, file: acknowledgementsName) {
          loaded.acknowledged = acknowledged
        } else {
          loaded.acknowledgementsReset = true
        }
      }
    }
    return loaded
  }

  /// The value `decode` returns, or `nil` if it fails (damage); a message of a format
  /// version this build does not read throws ``StoreError/unsupportedFormatVersion(file:found:supported:)``
  /// instead, so that another version's files are refused, never cut or skipped.
  static func decodeRefusingOtherVersions<Value>(
    _ file: String, _ decode: () throws -> Value
  ) throws(StoreError) -> Value? {
    do {
      return try decode()
    } catch ConvergeDecodingError.unsupportedVersion(let found) {
      throw .unsupportedFormatVersion(
        file: file, found: found, supported: Envelope.formatVersion)
    } catch {
      return nil
    }
  }
}
