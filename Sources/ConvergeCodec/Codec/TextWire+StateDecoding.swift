/// Decoding helpers of the text state loader (`RGA+BulkLoad.swift`): the content
/// decoder and the delete reader's id ranges, built without per-run hashing.
extension TextWire.InsertIDs {
  /// The id ranges of `headers`, which are sorted by id: one list per replica, each
  /// built at once.
  init(sortedRuns headers: [TextWire.RunHeader]) {
    var start = 0
    for index in headers.indices
    where index + 1 == headers.count || headers[index + 1].id.replica != headers[index].id.replica {
      ranges[headers[index].id.replica] = headers[start...index].map {
        $0.id.counter..<$0.id.counter + UInt64($0.length)
      }
      start = index + 1
    }
  }
}

extension TextWire {
  /// The scalars of strictly valid UTF-8 (``UTF8Scalars/decode(_:)``), and whether any
  /// lies outside the Basic Multilingual Plane (takes two UTF-16 code units).
  ///
  /// - Throws: `invalidUTF8` at `offset`.
  static func decodeScalars(_ bytes: ArraySlice<UInt8>, offset: Int) throws -> (
    scalars: [Unicode.Scalar], hasSupplementary: Bool
  ) {
    guard let decoded = try? bytes.withUnsafeBufferPointer({ try UTF8Scalars.decode($0) })
    else { throw ConvergeDecodingError.invalidUTF8(offset: offset) }
    return (decoded.scalars, decoded.supplementary > 0)
  }

  /// The number of scalars of strictly valid UTF-8 (``UTF8Scalars/count(_:)``, the check
  /// ``decodeScalars(_:offset:)`` makes), without building them, and how many of them lie
  /// outside the Basic Multilingual Plane.
  ///
  /// - Throws: `invalidUTF8` at `offset`.
  static func countScalars(_ bytes: ArraySlice<UInt8>, offset: Int) throws -> (
    scalars: Int, supplementary: Int
  ) {
    guard let counted = try? bytes.withUnsafeBufferPointer({ try UTF8Scalars.count($0) })
    else { throw ConvergeDecodingError.invalidUTF8(offset: offset) }
    return counted
  }
}
