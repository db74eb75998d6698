import Converge

/// The bench's text as an app declares it: a typed model whose one `String` property is
/// the text field `SequentialTrace.benchField` of `SequentialTrace.benchKey`.
package struct TraceDocument: EntityModel {
  package static let entityType = SequentialTrace.benchKey.type
  package var text = ""
  package static let schema = EntitySchema<TraceDocument>(
    .text(SequentialTrace.benchField, \.text))
  package init() {}
}

/// The figures of `converge replay --through-handle`: the same trace typed into a
/// document's text field by name and through an ``EntityText`` of a typed model, in one
/// transaction and one transaction per edit.
package struct HandleReplayTimes: Sendable {
  /// Every patch in one transaction, by entity key and field name.
  package var transactionMilliseconds: Double
  /// Every patch in one transaction, through the handle.
  package var handleMilliseconds: Double
  /// One transaction per patch, by entity key and field name (no delta encoded).
  package var transactionPerEditMilliseconds: Double
  /// One transaction per patch, through the handle.
  package var handlePerEditMilliseconds: Double
  /// Whether every replay ended with the trace's end content.
  package var matches: Bool
}

extension SequentialTrace {
  /// Times the four document replays once each. Each pair runs in the order `handleFirst`
  /// says; a caller alternates it, so that warming up and the machine's load fall on both
  /// sides alike.
  package func timeHandleReplays(handleFirst: Bool) throws -> HandleReplayTimes {
    let clock = ContinuousClock()
    let handle = try EntityText(\TraceDocument.text, of: Self.benchKey.id)
    // Each patch's text made before the clock starts, as a text view hands an edit over
    // (`replayLocally()` gives `SharedText` the patches' scalars as they are): building a
    // `String` from each patch's scalars was 14–19% of the handle's time (callgrind).
    let texts = insertedStrings()
    func timed(_ replay: () -> Replica) -> (Replica, Double) {
      let start = clock.now
      let replica = replay()
      return (replica, milliseconds(clock.now - start))
    }
    func pair(_ replay: (Bool) -> Replica) -> (
      byName: (Replica, Double), byHandle: (Replica, Double)
    ) {
      if handleFirst {
        let byHandle = timed { replay(false) }
        return (timed { replay(true) }, byHandle)
      }
      let byName = timed { replay(true) }
      return (byName, timed { replay(false) })
    }
    let whole = pair {
      $0
        ? replayByName(perEdit: false, inserting: texts)
        : replayThroughHandle(handle, perEdit: false, inserting: texts)
    }
    let perEdit = pair {
      $0
        ? replayByName(perEdit: true, inserting: texts)
        : replayThroughHandle(handle, perEdit: true, inserting: texts)
    }
    let replicas = [whole.byName.0, whole.byHandle.0, perEdit.byName.0, perEdit.byHandle.0]
    let matches = replicas.allSatisfy {
      $0.get(TraceDocument.self, id: Self.benchKey.id)?.text == endContent
    }
    return HandleReplayTimes(
      transactionMilliseconds: whole.byName.1, handleMilliseconds: whole.byHandle.1,
      transactionPerEditMilliseconds: perEdit.byName.1,
      handlePerEditMilliseconds: perEdit.byHandle.1,
      matches: matches && replicas[0].document == replicas[1].document
        && replicas[2].document == replicas[3].document)
  }

  /// Types every patch into a typed model's text by entity key and field name, in one
  /// transaction or one a patch (a keystroke each, as an editor commits them). The entity
  /// is created first, as an app creates a note before typing. Apart from
  /// ``replayThroughHandle(_:perEdit:)`` so that a profiler counts each alone
  /// (`--toggle-collect='*replayByName*'`).
  /// `texts` are the patches' inserted texts (``insertedStrings()``, made when `nil`).
  @inline(never)
  package func replayByName(perEdit: Bool, inserting texts: [String]? = nil) -> Replica {
    let texts = texts ?? insertedStrings()
    var replica = Self.replicaHoldingTheModel()
    if perEdit {
      for (patch, text) in zip(patches, texts) {
        replica.transact {
          patch.apply(in: &$0, field: Self.benchField, of: Self.benchKey, inserting: text)
        }
      }
    } else {
      replica.transact { tx in
        for (patch, text) in zip(patches, texts) {
          patch.apply(in: &tx, field: Self.benchField, of: Self.benchKey, inserting: text)
        }
      }
    }
    return replica
  }

  /// Each patch's inserted scalars as a `String`.
  package func insertedStrings() -> [String] {
    patches.map { String(String.UnicodeScalarView($0.inserted)) }
  }

  /// The same as ``replayByName(perEdit:)``, through the text handle `handle`.
  @inline(never)
  package func replayThroughHandle(
    _ handle: EntityText, perEdit: Bool, inserting texts: [String]? = nil
  ) -> Replica {
    let texts = texts ?? insertedStrings()
    var replica = Self.replicaHoldingTheModel()
    // Each patch's position and length read in place, as a text view hands them over: a
    // copy of the whole patch retained and released its scalars (which the handle does
    // not take) every edit, 40 instructions of the loop's 130 (callgrind), and `zip`
    // copied the string too.
    func type(_ index: Int, in tx: inout DocumentTransaction) {
      let position = patches[index].position
      let deleted = patches[index].deleted
      if deleted > 0 { tx.deleteText(position..<position + deleted, in: handle) }
      if !texts[index].isEmpty { tx.insertText(texts[index], at: position, in: handle) }
    }
    if perEdit {
      for index in patches.indices {
        replica.transact { type(index, in: &$0) }
      }
    } else {
      replica.transact { tx in
        for index in patches.indices { type(index, in: &tx) }
      }
    }
    return replica
  }

  private static func replicaHoldingTheModel() -> Replica {
    var replica = Replica(id: ReplicaID(rawValue: 1), wallClock: .fixed(0))
    replica.create(TraceDocument(), id: benchKey.id)
    return replica
  }
}

extension TracePatch {
  /// Types this patch by entity key and field name, as ``apply(in:field:of:)`` does, its
  /// inserted scalars given as `string`.
  func apply(
    in tx: inout DocumentTransaction, field: String, of key: EntityKey, inserting string: String
  ) {
    if deleted > 0 {
      tx.deleteText(position..<position + deleted, in: field, of: key)
    }
    if !string.isEmpty {
      tx.insertText(string, at: position, in: field, of: key)
    }
  }
}
