/// A human-readable summary of any Converge message, for `converge inspect` and for
/// debugging what a device stored or sent.
///
/// ```swift
/// var phone = Replica(id: ReplicaID(rawValue: 0xA1), wallClock: .fixed(1_700_000_000_000))
/// let note = EntityKey(type: "note", id: "n1")
/// phone.transact { $0.setValue(.string("Groceries"), for: "title", of: note) }
/// let bytes = phone.encodedState()
/// print(try MessageSummary(decoding: bytes).text)
/// // kind: documentState (7), 68 bytes
/// // replicas: 1
/// // context: 1 replicas, 1 events
/// //   00000000000000a1: 1 ranges
/// // entities: 1 (1 visible)
/// //   type note: 1 (1 visible)
/// // note/n1:
/// //   title: register "Groceries"
/// ```
///
/// Decoding is the full, checked decode of the message's kind, so a summary is only
/// produced for a message the library would accept: a frame that continues a stream
/// shows only its header, since it decodes only after the frames before it.
public struct MessageSummary: Sendable {
  /// The summary, one fact per line.
  public let text: String

  /// Opens and decodes `bytes` by their kind and summarizes them.
  ///
  /// - Throws: the ``ConvergeDecodingError`` the decoder of the message's kind throws.
  public init(decoding message: some Collection<UInt8>) throws {
    let bytes = Array(message)
    if SessionStream.isFrame(bytes) {
      text = try Self.describeFrame(bytes).joined(separator: "\n")
      return
    }
    let kind = try Envelope.open(bytes).kind
    var lines = ["kind: \(kind) (\(kind.rawValue)), \(bytes.count) bytes"]
    switch kind {
    case .versionVector:
      let vector = try VersionVector(decoding: bytes)
      lines.append("replicas: \(vector.replicas.count)")
      for (replica, counter) in vector.entries { lines.append("  \(replica): \(counter)") }
    case .causalContext:
      lines += Self.describe(try CausalContext(decoding: bytes))
    case .documentState, .legacyDocumentState:
      lines += Self.describe(try Document(decoding: bytes))
    case .documentDelta, .textEditDelta, .legacyTextEditDelta:
      lines += Self.describe(try DocumentDelta(decoding: bytes))
    case .syncMessage:
      let message = try SyncMessage(decoding: bytes)
      if let context = message.context {
        lines.append("sender's context:")
        lines += Self.describe(context).map { "  " + $0 }
      }
      if let delta = message.delta {
        lines.append("delta:")
        lines += Self.describe(delta).map { "  " + $0 }
      } else {
        lines.append("delta: none")
      }
    }
    text = lines.joined(separator: "\n")
  }

  /// A session frame: a start frame decodes on its own; a later one only in its
  /// stream, so only its header is checked and shown.
  private static func describeFrame(_ bytes: [UInt8]) throws -> [String] {
    let header = try SessionStream.header(of: bytes[...])
    guard let stream = header.startedStream else {
      return [
        "kind: session frame (continues a stream), \(bytes.count) bytes",
        "body: \(header.bodyLength) bytes; it decodes only after the frames before it",
      ]
    }
    var decoder = SessionStream()
    let delta = try decoder.decode(bytes[...])
    let id = String(stream, radix: 16)
    return ["kind: session frame (starts stream \(id)), \(bytes.count) bytes"] + describe(delta)
  }

  private static func describe(_ context: CausalContext) -> [String] {
    var lines = [
      "context: \(context.replicas.count) replicas, \(context.eventCount) events"
        + (context.hasGaps ? ", with gaps" : "")
    ]
    for (replica, counters) in context.entries {
      lines.append("  \(replica): \(counters.ranges.count) ranges")
    }
    return lines
  }

  private static func describeTypes(_ keys: [EntityKey], visible: (EntityKey) -> Bool) -> [String] {
    var byType: [String: (total: Int, visible: Int)] = [:]
    for key in keys {
      byType[key.type, default: (0, 0)].total += 1
      if visible(key) { byType[key.type, default: (0, 0)].visible += 1 }
    }
    return byType.keys.sorted(by: fieldNameOrder).map { type in
      let counts = byType[type] ?? (0, 0)
      return "  type \(type): \(counts.total) (\(counts.visible) visible)"
    }
  }

  private static func describe(_ document: Document) -> [String] {
    var replicas = ReplicaTable.Builder()
    replicas.insert(contentsOf: document.context.replicas)
    for record in document.entities.values {
      record.collectReplicas(into: &replicas)
      for runs in record.textRuns().values { runs.collectReplicas(into: &replicas) }
    }
    var lines = ["replicas: \(replicas.build().count)"]
    lines += describe(document.context)
    let keys = document.entities.keys.sorted()
    lines.append("entities: \(keys.count) (\(document.keys.count) visible)")
    lines += describeTypes(keys) { document.contains($0) }
    for key in keys {
      guard let record = document.entities[key] else { continue }
      lines.append("\(key)\(record.isVisible ? "" : " (deleted)"):")
      for name in record.fields.keys.sorted(by: fieldNameOrder) {
        switch record.fields[name] {
        case .register(let register)?:
          lines.append("  \(name): register \(register.value.map { "\($0)" } ?? "(empty)")")
        case .parent(let register)?:
          lines.append("  \(name): parent \(register.value.map { "\($0)" } ?? "(empty)")")
        case .set(let elements)?:
          let present = elements.presences.filter(\.isPresent).count
          lines.append("  \(name): set, \(present) elements (\(elements.count) with removed)")
        case .text(let storage)?:
          let text = storage.text
          lines.append(
            "  \(name): text, \(text.count) scalars, \(text.utf16Count) UTF-16 units"
              + (text.pendingCount > 0 ? ", \(text.pendingCount) pending" : ""))
        case .list(let list)?:
          lines.append("  \(name): list, \(list.count) items (\(list.items.count) with removed)")
        case nil: break
        }
      }
    }
    return lines
  }

  private static func describe(_ delta: DocumentDelta) -> [String] {
    var replicas = ReplicaTable.Builder()
    replicas.insert(contentsOf: delta.context.replicas)
    for entity in delta.entities.values { entity.collectReplicas(into: &replicas) }
    var lines = ["replicas: \(replicas.build().count)"]
    lines += describe(delta.context)
    let keys = delta.keys
    lines.append("entities: \(keys.count)")
    lines += describeTypes(keys) { delta.entities[$0]?.presence.isPresent ?? false }
    for key in keys {
      guard let entity = delta.entities[key] else { continue }
      lines.append("\(key):")
      for name in entity.fields.keys.sorted(by: fieldNameOrder) {
        switch entity.fields[name] {
        case .register(let register)?:
          lines.append("  \(name): register \(register.value.map { "\($0)" } ?? "(empty)")")
        case .parent(let register)?:
          lines.append("  \(name): parent \(register.value.map { "\($0)" } ?? "(empty)")")
        case .set(let elements)?:
          lines.append("  \(name): set, \(elements.count) elements")
        case .text(let text)?:
          let (inserts, deletes) = text.canonicalRuns()
          let scalars = inserts.reduce(0) { $0 &+ $1.length }
          let deleted = deletes.reduce(UInt64(0)) { $0 &+ $1.count }
          lines.append(
            "  \(name): text, \(inserts.count) insert runs (\(scalars) scalars), "
              + "\(deletes.count) delete runs (\(deleted) deletes)")
        case .list(let list)?:
          lines.append(
            "  \(name): list, \(list.slots.inserts.count) slot runs, \(list.items.count) items")
        case nil: break
        }
      }
    }
    return lines
  }
}
