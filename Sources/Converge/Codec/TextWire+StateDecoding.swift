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
  /// The scalars of strictly valid UTF-8 (no overlong forms, surrogates or values above
  /// U+10FFFF), and whether any lies outside the Basic Multilingual Plane (takes two
  /// UTF-16 code units).
  static func decodeScalars(_ bytes: ArraySlice<UInt8>, offset: Int) throws -> (
    scalars: [Unicode.Scalar], hasSupplementary: Bool
  ) {
    let invalid = ConvergeDecodingError.invalidUTF8(offset: offset)
    var hasSupplementary = false
    let scalars = try bytes.withUnsafeBufferPointer { input in
      try [Unicode.Scalar](unsafeUninitializedCapacity: input.count) { output, written in
        var position = 0
        let end = input.count
        // Continuation byte `position + step`, checked to be in `low...high`.
        func continuation(_ step: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xBF) throws -> UInt32 {
          guard position + step < end else { throw invalid }
          let byte = input[position + step]
          guard byte >= low, byte <= high else { throw invalid }
          return UInt32(byte & 0x3F)
        }
        while position < end {
          let lead = input[position]
          if lead < 0x80 {
            output[written] = Unicode.Scalar(lead)
            written += 1
            position += 1
            continue
          }
          let value: UInt32
          switch lead {
          case 0xC2...0xDF:
            value = UInt32(lead & 0x1F) << 6 | (try continuation(1))
            position += 2
          case 0xE0...0xEF:
            // No overlong forms (E0 needs A0 or more), no surrogates (ED at most 9F).
            let second = try continuation(
              1, lead == 0xE0 ? 0xA0 : 0x80, lead == 0xED ? 0x9F : 0xBF)
            value = UInt32(lead & 0x0F) << 12 | second << 6 | (try continuation(2))
            position += 3
          case 0xF0...0xF4:
            // No overlong forms (F0 needs 90 or more), nothing above U+10FFFF.
            let second = try continuation(
              1, lead == 0xF0 ? 0x90 : 0x80, lead == 0xF4 ? 0x8F : 0xBF)
            value =
              UInt32(lead & 0x07) << 18 | second << 12 | (try continuation(2)) << 6
              | (try continuation(3))
            position += 4
            hasSupplementary = true
          default:
            throw invalid
          }
          guard let scalar = Unicode.Scalar(value) else { throw invalid }
          output[written] = scalar
          written += 1
        }
      }
    }
    return (scalars, hasSupplementary)
  }
}
