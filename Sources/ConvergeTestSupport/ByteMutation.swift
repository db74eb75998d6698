import Converge

/// Damages `bytes` one to three times, the way storage, relays and attackers do: a
/// flipped bit, an inserted or removed byte, a byte set to a boundary value (`00`, `01`,
/// `7F`, `80`, `FF`), a splice with the tail of `other`, or a duplicated stretch.
public func mutateBytes(
  _ bytes: [UInt8], splicingWith other: [UInt8], using random: inout SeededGenerator
) -> [UInt8] {
  var result = bytes
  for _ in 0..<Int.random(in: 1...3, using: &random) {
    let position = Int.random(in: 0...result.count, using: &random)
    switch Int.random(in: 0...5, using: &random) {
    case 0 where position < result.count:
      result[position] ^= 1 << UInt8.random(in: 0...7, using: &random)
    case 1:
      result.insert(UInt8.random(in: 0...255, using: &random), at: position)
    case 2 where position < result.count:
      result.remove(at: position)
    case 3 where position < result.count:
      result[position] = [0x00, 0x01, 0x7F, 0x80, 0xFF].randomElement(using: &random) ?? 0
    case 4:
      let cut = Int.random(in: 0...other.count, using: &random)
      result = Array(result.prefix(position)) + other.suffix(from: cut)
    default:
      let end = min(result.count, position + Int.random(in: 1...8, using: &random))
      result.insert(contentsOf: result[position..<end], at: position)
    }
  }
  return result
}

/// Damages the body of the message `bytes` (see ``mutateBytes(_:splicingWith:using:)``)
/// and frames it again with a valid checksum, so that the body decoders themselves face
/// the damage. Returns nil if either message does not open.
public func mutateBody(
  of bytes: [UInt8], splicingWith other: [UInt8], using random: inout SeededGenerator
) -> [UInt8]? {
  guard let opened = try? Envelope.open(bytes), let otherBody = try? Envelope.open(other).body
  else { return nil }
  let body = mutateBytes(Array(opened.body), splicingWith: Array(otherBody), using: &random)
  return Envelope.seal(kind: opened.kind, body: body)
}

/// Decodes `bytes` as whatever kind its envelope names and encodes the value again.
///
/// A decoder must accept only canonical input, so for every message this returns
/// without throwing, the result equals `bytes`. Returns nil for a kind it cannot decode.
public func reencodeMessage(_ bytes: [UInt8]) throws -> [UInt8]? {
  switch try Envelope.open(bytes).kind {
  case .versionVector: try VersionVector(decoding: bytes).encoded()
  case .causalContext: try CausalContext(decoding: bytes).encoded()
  case .documentState: try Document(decoding: bytes).encoded()
  case .legacyDocumentState: try Document(decoding: bytes).legacyEncoded()
  case .documentDelta, .textEditDelta: try DocumentDelta(decoding: bytes).encoded()
  case .legacyTextEditDelta: try DocumentDelta(decoding: bytes).legacyEncoded()
  case .syncMessage: nil
  }
}
