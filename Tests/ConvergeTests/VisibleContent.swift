@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// What a user sees of documents, for tests that compare two ways of reaching a state
/// (the rebase against the ordinary merge).
enum VisibleContent {
  /// What a user sees of a document, entity by entity (an empty field shows as none),
  /// with the order of texts and lists left out unless `ordered`: the ordinary merge and
  /// the rebase may order concurrent inserts at one place differently.
  static func lines(of document: Document, ordered: Bool = false) -> [EntityKey: String] {
    var content: [EntityKey: String] = [:]
    for key in document.keys {
      var line = ""
      for field in document.fieldNames(of: key) {
        switch document.fieldKind(field, of: key) {
        case .register:
          if let value = document.value(of: field, in: key) { line += " \(field)=\(value)" }
        case .set:
          let elements = document.elements(of: field, in: key)
          if !elements.isEmpty { line += " \(field)=\(elements)" }
        case .text:
          let scalars = document.text(of: field, in: key).unicodeScalars
          let shown = ordered ? Array(scalars) : scalars.sorted { $0.value < $1.value }
          if !shown.isEmpty { line += " \(field)=\(String(String.UnicodeScalarView(shown)))" }
        case .list:
          let items = document.list(of: field, in: key)
          if !items.isEmpty { line += " \(field)=\(ordered ? items : items.sorted())" }
        case .parent:
          let parent = document.forest(of: field).parent(of: key)
          line += " \(field)=\(parent.map { "\($0.type)/\($0.id)" } ?? "root")"
        case nil: break
        }
      }
      content[key] = line
    }
    return content
  }
}
