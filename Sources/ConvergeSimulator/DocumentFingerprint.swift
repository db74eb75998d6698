import Converge

/// A canonical, deterministic text dump of a document, written from its public reading
/// API: the causal context, then every visible entity in key order with its fields in
/// name order; set elements sorted; text in full; pending text counted.
///
/// Every string is length-prefixed so that no content can imitate the dump's structure,
/// and numbers are written exactly (doubles and dates by bit pattern). Nothing depends on
/// hash order, so the dump is the same in every process. The ``Oracle`` names states by
/// their encoded bytes and shows where two states differ by this dump, which does not
/// depend on the binary codec.
public enum DocumentFingerprint {
  /// The dump as UTF-8 bytes.
  public static func bytes(of document: Document) -> [UInt8] {
    Array(text(of: document).utf8)
  }

  /// The dump.
  ///
  /// - Complexity: O(n log n) for n entities, fields, elements and characters.
  public static func text(of document: Document) -> String {
    var out = "context " + hexString(document.context.encoded()) + "\n"
    for key in document.keys {
      out += "entity " + quoted(key.type) + " " + quoted(key.id) + "\n"
      for name in document.fieldNames(of: key) {
        out += "  " + quoted(name) + " "
        switch document.fieldKind(name, of: key) {
        case .register?:
          out += "register " + (document.value(of: name, in: key).map(canonical) ?? "unset")
        case .set?:
          out +=
            "set [" + document.elements(of: name, in: key).map(canonical).joined(separator: " ")
          out += "]"
        case .text?:
          let pending = document.sequence(of: name, in: key)?.pendingCount ?? 0
          out += "text " + quoted(document.text(of: name, in: key)) + " pending \(pending)"
        case .list?:
          let pending = document.movableList(of: name, in: key)?.pendingCount ?? 0
          out +=
            "list [" + document.list(of: name, in: key).map(canonical).joined(separator: " ")
          out += "] pending \(pending)"
        case .parent?:
          // The write as made, and where the forest puts the node.
          let move = document.parentMove(of: name, in: key)
          let parent = document.forest(of: name).parent(of: key)
          out += "parent " + (move.map { canonical($0.fieldValue) } ?? "unset")
          out += " resolved " + (parent.map { canonical($0.fieldValue) } ?? "root")
        case nil:
          out += "missing"
        }
        out += "\n"
      }
    }
    return out
  }

  /// A value written with its kind, exactly.
  static func canonical(_ value: FieldValue) -> String {
    switch value {
    case .null: "null"
    case .bool(let flag): flag ? "true" : "false"
    case .int(let number): "int(\(number))"
    case .double(let number): "double(" + String(number.bitPattern, radix: 16) + ")"
    case .string(let string): "string" + quoted(string)
    case .date(let date):
      "date(" + String(date.timeIntervalSinceReferenceDate.bitPattern, radix: 16) + ")"
    case .bytes(let bytes): "bytes(" + hexString(bytes) + ")"
    case .record(let fields):
      "record{"
        + fields.keys.sorted { FieldValue.string($0) < FieldValue.string($1) }
        .map { quoted($0) + ":" + canonical(fields[$0] ?? .null) }.joined(separator: ",") + "}"
    }
  }

  /// A string prefixed by its UTF-8 length.
  static func quoted(_ string: String) -> String {
    "\(string.utf8.count)'" + string + "'"
  }
}
