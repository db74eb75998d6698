/// The texts of a snapshot loaded without decoding them: the message's bytes and the
/// decoder state their texts need (the replica table and the content code), shared by
/// every text of the load.
///
/// ``Document/init(decoding:tag:key:)`` reads a snapshot whose tag shows it is one this
/// store wrote. Its entities, registers and sets are read and checked as in any load;
/// each text's runs are read and checked too, but its content (most of a library's
/// bytes, and most of the work of loading it) is left coded, and the canonical check of
/// the content code, which needs every text's content, is skipped. The text is decoded
/// again from its bytes when read: every read of a text no one has edited decodes it,
/// and the first edit keeps it decoded (``EntityRecord/takeText(at:)``).
///
/// Only a text that waits for nothing is deferred: one whose origins, right origins and
/// delete targets are all ids of its own runs. A snapshot's other texts (those holding
/// edits whose causes never arrived) are decoded at once, so that a document knows which
/// of its texts wait (``Document/hasPendingChanges``) without decoding any.
final class DeferredTexts: DeferredContent {
  private let storage: ArraySlice<UInt8>
  private let origin: Int
  /// The message's table, decoding content without counting it.
  private let table: DecodedReplicaTable

  init(reading reader: ByteReader, table: DecodedReplicaTable) {
    (storage, origin) = reader.source
    var table = table
    table.contentReading = .uncounted
    self.table = table
  }

  /// The text whose state the message holds at `offsets` (from the message's start).
  ///
  /// The bytes were checked when the message was read, but for their content, which the
  /// tag vouches for: a text that still fails to decode (a key known to someone else, a
  /// bug) is read as an empty text rather than trapping.
  func text(at offsets: Range<Int>) -> RGA {
    var reader = ByteReader(
      storage: storage, range: origin + offsets.lowerBound..<origin + offsets.upperBound,
      origin: origin, maximumDepth: ByteReader.defaultMaximumDepth)
    var table = table
    guard let text = try? RGA(from: &reader, replicas: &table), reader.isAtEnd else {
      return RGA()
    }
    return text
  }
}

/// A text field read by a load that deferred it (``DeferredTexts``): its bytes in the
/// message, decoded on every read. Never edited: ``EntityRecord/takeText(at:)`` hands
/// out a decoded copy instead.
final class DeferredTextStorage: DeferredText {
  private let texts: DeferredTexts
  private let offsets: Range<Int>
  /// The text's latest event (insert or delete) when all its events are one replica's
  /// (a note typed on one device): what ``mayHaveEvents(unknownTo:)`` needs, without
  /// decoding the text. `nil` for a text of several replicas.
  private let latest: Dot?

  init(_ texts: DeferredTexts, at offsets: Range<Int>, latest: Dot?) {
    self.texts = texts
    self.offsets = offsets
    self.latest = latest
  }

  var text: RGA { texts.text(at: offsets) }

  func mayHaveEvents(unknownTo prefix: VersionVector) -> Bool {
    guard let latest else { return text.mayHaveEvents(unknownTo: prefix) }
    return latest.counter > prefix[latest.replica]
  }
}

extension TextStorage {
  /// Reads a document state's text field: its whole state, or, in a load that defers
  /// texts (``ContentReading/deferred(_:)``) and for a text that waits for nothing, its
  /// runs alone, keeping where its bytes are for ``DeferredTexts/text(at:)``. Either
  /// way its runs' ids and delete dots are checked against the message's context
  /// (``FieldChecks/checkRuns(_:_:of:)``) now, so that a bad message is refused whole.
  static func read(
    from reader: inout ByteReader, replicas table: inout DecodedReplicaTable,
    checks: inout FieldChecks
  ) throws -> TextStorage {
    var state = try TextWire.readState(from: &reader, replicas: &table)
    checks.checkRuns(state.headers, state.deletes, of: .text)
    guard let deferral = table.contentReading.deferral as? DeferredTexts else {
      return TextStorage(try RGA(state))
    }
    if TextWire.waitsForNothing(state.headers, state.deletes) {
      return TextStorage.deferred(
        DeferredTextStorage(
          deferral, at: state.start..<reader.offset,
          latest: TextWire.latestEvent(state.headers, state.deletes)))
    }
    // Its content was left coded: decoded now, as a deferred text's would be.
    state.content.bytes =
      try table.documentContent?.decodeUncounted(state.content.bytes, offset: state.content.offset)
      ?? []
    return TextStorage(try RGA(state))
  }
}

extension TextWire {
  /// Whether every origin, right origin and delete target of a text's runs is an id of
  /// one of them (or the head or end): then, as every run is younger than its origins,
  /// integrating them leaves nothing waiting.
  static func waitsForNothing(_ headers: [RunHeader], _ deletes: [RGADelta.Delete]) -> Bool {
    if headers.count == 1, deletes.isEmpty, headers[0].origin == nil,
      headers[0].rightOrigin == nil
    {
      return true
    }
    let ids = InsertIDs(sortedRuns: headers)
    for header in headers {
      for dot in [header.origin, header.rightOrigin] {
        guard let dot else { continue }
        guard ids.covers(dot.replica, dot.counter, dot.counter) else { return false }
      }
    }
    for delete in deletes {
      let first = delete.target.counter
      let span = delete.count &- 1
      let (lower, upper) = delete.isDescending ? (first &- span, first) : (first, first &+ span)
      guard ids.covers(delete.target.replica, lower, upper) else { return false }
    }
    return true
  }
}

extension TextWire {
  /// The latest event of a text's runs (the largest insert id or delete dot) when all
  /// are one replica's; `nil` otherwise (or for a text without runs).
  static func latestEvent(_ headers: [RunHeader], _ deletes: [RGADelta.Delete]) -> Dot? {
    guard let replica = headers.first?.id.replica ?? deletes.first?.dot.replica else {
      return nil
    }
    var latest: UInt64 = 0
    for header in headers {
      guard header.id.replica == replica else { return nil }
      latest = Swift.max(latest, header.id.counter &+ UInt64(header.length &- 1))
    }
    for delete in deletes {
      guard delete.dot.replica == replica else { return nil }
      latest = Swift.max(latest, delete.dot.counter &+ (delete.count &- 1))
    }
    return Dot(replica: replica, counter: latest)
  }
}

extension TextWire.InsertIDs {
  /// Whether the ranges of `replica` hold every counter of `lower ... upper`.
  func covers(_ replica: ReplicaID, _ lower: UInt64, _ upper: UInt64) -> Bool {
    guard let list = ranges[replica] else { return false }
    // The first range ending after `lower`, then ranges that follow on without a gap.
    var index = list.partitioningIndex { $0.upperBound > lower }
    guard index < list.count, list[index].lowerBound <= lower else { return false }
    while list[index].upperBound <= upper {
      index += 1
      guard index < list.count, list[index].lowerBound == list[index - 1].upperBound else {
        return false
      }
    }
    return true
  }
}

extension Document {
  /// How many of the document's texts are still deferred (``DeferredTexts``): for tests
  /// and benches, which check that a load took the path they measure.
  package var deferredTextCount: Int {
    var count = 0
    for record in entities.values {
      for case .text(let storage) in record.fields.values where storage.isDeferred {
        count += 1
      }
    }
    return count
  }
}
