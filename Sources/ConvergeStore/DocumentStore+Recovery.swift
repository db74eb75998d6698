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
    /// The generation the generation record names, if it is whole.
    var recordedGeneration: UInt64?
    /// Snapshots, logs and tags of generations before the snapshot recovery started
    /// from: a compaction's leftovers, removed once the store has settled.
    var superseded: [String] = []
  }

  /// The file recording the newest generation whose log a compaction made durable, so
  /// that a lost newest log is seen (one frame of the generation's eight bytes).
  static let generationRecordName = "generation"

  /// Generations at or past this are damage, never taken for a file or record of the
  /// store: adding one to any smaller one cannot overflow.
  static let maximumGeneration: UInt64 = 1 << 62

  /// Reads the directory: removes temporary files, reads the key, the identity and the
  /// generation record, loads the newest whole snapshot (its texts deferred if its tag
  /// matches the key), replays the logs of its generation and later (cutting damaged
  /// tails), reads the acknowledgements, and reports in `report` every generation that
  /// should be there and is not.
  ///
  /// A damaged snapshot, identity or generation record is moved aside; a log damaged
  /// before whole records (or after a clean close) is copied aside and rewritten with
  /// the records before the damage. Nothing is removed here: superseded generations go
  /// once the store has settled (``DocumentStore/removeSupersededFiles()``).
  ///
  /// - Complexity: O(n) in the bytes of the snapshot and logs read, plus O(n²) in the
  ///   bytes after the damage of a damaged log (looking for whole records there).
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
      var aside = DamagedCopies(directory: directory, fileSystem: fileSystem, names: Set(names))
      var snapshots: [UInt64] = []
      var logs: [UInt64] = []
      for name in names {
        guard let (kind, generation) = parse(name) else { continue }
        if kind == "snapshot" { snapshots.append(generation) }
        if kind == "log" { logs.append(generation) }
      }
      loaded.key = try fileSystem.read(directory + "/" + keyName).flatMap(decodedKey)

      if let bytes = try fileSystem.read(directory + "/identity") {
        loaded.identityFileExisted = true
        loaded.identity = StoreIdentity(decoding: bytes)
        if loaded.identity == nil {
          report.losses.append(.damagedIdentity(copy: try aside.move("identity")))
        }
      }
      if let bytes = try fileSystem.read(directory + "/" + generationRecordName) {
        // A generation the store could never reach (it counts up from 0) is damage: the
        // next compaction adds one to it.
        loaded.recordedGeneration = decodedTag(bytes).flatMap { $0 < maximumGeneration ? $0 : nil }
        if loaded.recordedGeneration == nil {
          let copy = try aside.move(generationRecordName)
          report.losses.append(.damagedGenerationRecord(copy: copy))
        }
      }
      let closedCleanly = loaded.identity?.cleanShutdown ?? false

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
        let copy = try aside.move(name)
        report.losses.append(.damagedSnapshot(file: name, copy: copy))
      }
      let start = loaded.generation
      var emptyLogs: Set<UInt64> = []

      for generation in logs.sorted() where generation >= start {
        let name = logName(generation)
        let path = directory + "/" + name
        let bytes = try fileSystem.read(path) ?? []
        if bytes.isEmpty { emptyLogs.insert(generation) }
        let (records, validLength) = RecordFrame.records(in: bytes)
        var kept = 0
        var replayed = 0
        for record in records {
          // A record whose frame is whole but whose message does not decode is damage
          // too: the log is cut before it.
          guard
            let delta = try decodeRefusingOtherVersions(
              name, { try DocumentDelta(decoding: record) })
          else { break }
          loaded.document.apply(delta)
          kept = record.endIndex
          replayed += 1
        }
        report.replayedRecords += replayed
        if records.count == 0 || kept == records.last?.endIndex { kept = validLength }
        if kept < bytes.count {
          // Whole records dropped: an undecodable one (its frame was whole, so no torn
          // write made it), those after it, and any found past the first broken frame.
          let dropped =
            records.count - replayed + RecordFrame.wholeRecords(after: validLength, in: bytes)
          var cut = StoreRecovery.CutTail(
            file: name, keptBytes: kept, droppedBytes: bytes.count - kept)
          if dropped > 0 || closedCleanly {
            // Damage, not a torn tail: keep the whole file, then replace the log by its
            // records before the damage (a copy, so that a crash at any step leaves the
            // log or its prefix in place).
            let copy = try aside.copy(bytes, of: name)
            try fileSystem.write(Array(bytes[..<kept]), to: path + ".tmp")
            try fileSystem.sync(path + ".tmp")
            try fileSystem.rename(path + ".tmp", to: path)
            try fileSystem.syncDirectory(directory)
            cut.copy = copy
            report.losses.append(.cutLog(file: name, droppedRecords: dropped, copy: copy))
          } else {
            try fileSystem.truncate(path, to: kept)
            try fileSystem.sync(path)
          }
          report.cutTails.append(cut)
        }
        loaded.generation = Swift.max(loaded.generation, generation)
        loaded.logBytes = kept
      }

      let newest = newestWrittenGeneration(
        snapshots: snapshots, logs: logs, recorded: loaded.recordedGeneration,
        emptyLogs: emptyLogs)
      report.losses += missingGenerations(
        start: start, newest: newest, snapshots: Set(snapshots), logs: Set(logs),
        recorded: loaded.recordedGeneration)
      if newest > loaded.generation {
        loaded.generation = newest
        loaded.logBytes = 0
      }
      loaded.superseded = names.filter { parse($0).map { $0.generation < start } ?? false }

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

  /// The newest generation the files show the store wrote: the generation record's, or
  /// the newest snapshot's or log's. An empty log newer than the record and without a
  /// snapshot is left out: a compaction that a crash cut between starting its log and
  /// making the directory durable, which wrote no commit there.
  static func newestWrittenGeneration(
    snapshots: [UInt64], logs: [UInt64], recorded: UInt64?, emptyLogs: Set<UInt64>
  ) -> UInt64 {
    let snapshotSet = Set(snapshots)
    let counted = logs.filter { generation in
      !(emptyLogs.contains(generation) && generation > (recorded ?? 0)
        && !snapshotSet.contains(generation))
    }
    return ([recorded ?? 0] + snapshots + counted).max() ?? 0
  }

  /// What is missing of generation `newest`, the one the store wrote last: all a
  /// recovery needs is its snapshot (unless it is 0) and its log. Older generations go
  /// at each compaction, so their absence is no loss.
  ///
  /// The snapshot of `newest` is missing when recovery started from an older one (`start`)
  /// and no damaged copy was found (that one is reported by name). Its log is missing
  /// unless a crash cut the compaction that made it before the log became durable: its
  /// snapshot whole and the generation record not yet naming it.
  static func missingGenerations(
    start: UInt64, newest: UInt64, snapshots: Set<UInt64>, logs: Set<UInt64>,
    recorded: UInt64?
  ) -> [StoreRecovery.Loss] {
    var losses: [StoreRecovery.Loss] = []
    if newest > start && !snapshots.contains(newest) {
      losses.append(.missingSnapshot(generation: newest))
    }
    let unfinished = newest == start && recorded.map { $0 < newest } ?? (newest > 0)
    let fresh = newest == 0 && recorded == nil
    if !logs.contains(newest) && !unfinished && !fresh {
      losses.append(.missingLog(generation: newest))
    }
    return losses
  }

  /// Moves or copies damaged files aside as `damaged-<name>-<n>`, a name no other file
  /// of the directory has.
  struct DamagedCopies {
    let directory: String
    let fileSystem: any StoreFileSystem
    var names: Set<String>

    /// A free name for a copy of `name`.
    mutating func name(for name: String) -> String {
      var index = 1
      while names.contains("damaged-\(name)-\(index)") { index += 1 }
      let copy = "damaged-\(name)-\(index)"
      names.insert(copy)
      return copy
    }

    /// Renames `name` aside (durably) and returns the new name.
    mutating func move(_ name: String) throws -> String {
      let copy = self.name(for: name)
      try fileSystem.rename(directory + "/" + name, to: directory + "/" + copy)
      try fileSystem.syncDirectory(directory)
      return copy
    }

    /// Writes `bytes` (the content of `name`) to a copy, durably, and returns its name.
    mutating func copy(_ bytes: [UInt8], of name: String) throws -> String {
      let copy = self.name(for: name)
      try fileSystem.write(bytes, to: directory + "/" + copy)
      try fileSystem.sync(directory + "/" + copy)
      try fileSystem.syncDirectory(directory)
      return copy
    }
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
