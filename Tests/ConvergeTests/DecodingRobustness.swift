import Converge
import ConvergeTestSupport
import Testing

/// The checks every codec robustness suite runs on its own sample messages: a damaged
/// message is refused with a typed error, or it is the canonical encoding of its value.
enum DecodingRobustness {
  /// Decodes `bytes` as whatever kind it claims; an accepted message must re-encode to
  /// exactly `bytes`. Returns the error, or nil if it decoded.
  @discardableResult
  static func decodeChecked(_ bytes: [UInt8], seed: UInt64) -> ConvergeDecodingError? {
    do {
      guard let reencoded = try reencodeMessage(bytes) else { return nil }
      #expect(reencoded == bytes, "seed \(seed): accepted a non-canonical message \(bytes)")
      return nil
    } catch let error as ConvergeDecodingError {
      return error
    } catch {
      Issue.record("seed \(seed): untyped error \(error)")
      return nil
    }
  }

  /// Every proper prefix of every message must be refused.
  static func expectEveryPrefixRejected(_ messages: [[UInt8]], seed: UInt64) {
    for message in messages {
      for length in 0..<message.count {
        let error = decodeChecked(Array(message.prefix(length)), seed: seed)
        #expect(error != nil, "seed \(seed): prefix \(length) of \(message) accepted")
      }
    }
  }

  /// Damages random messages `iterations` times: every `wholeMessageEvery`-th time the
  /// whole message (the frame, mostly its checksum, must catch it), otherwise the body
  /// framed again with a valid checksum, so the body decoders face the damage. Some
  /// damage still gives a valid value (a changed counter, say); most must not.
  static func expectMutationsRejectedOrCanonical(
    _ messages: [[UInt8]], seed: UInt64, iterations: Int, wholeMessageEvery: Int
  ) {
    var random = SeededGenerator(seed: seed)
    var accepted = 0
    for iteration in 0..<iterations {
      let message = messages.randomElement(using: &random) ?? []
      let other = messages.randomElement(using: &random) ?? []
      let mutated: [UInt8]
      if iteration.isMultiple(of: wholeMessageEvery) {
        mutated = mutateBytes(message, splicingWith: other, using: &random)
      } else {
        guard let body = mutateBody(of: message, splicingWith: other, using: &random) else {
          Issue.record("seed \(seed): sample message does not open")
          continue
        }
        mutated = body
      }
      if decodeChecked(mutated, seed: seed) == nil { accepted += 1 }
    }
    #expect(accepted < iterations / 2, "seed \(seed)")
  }
}
