/// A secret key with which a store recognizes the snapshots it wrote itself, so that it
/// can load them without checking every byte again (see
/// ``Document/init(decoding:tag:key:)``).
///
/// The tag is SipHash-2-4 (Aumasson and Bernstein) of the message under the key: 64
/// bits that no one without the key can compute for bytes of their choosing. A store
/// keeps its key beside its replica id and writes each snapshot's tag after it; bytes
/// whose tag does not match (damaged, copied from another store, written by someone
/// else) are decoded with every check, as any message is. The key guards against
/// accidents and foreign files, not against someone who can read the store's files.
///
/// ```swift
/// let key = SnapshotKey.random()
/// let bytes = document.encoded()
/// let tag = key.tag(of: bytes)              // kept with the bytes
/// let loaded = try Document(decoding: bytes, tag: tag, key: key)
/// ```
public struct SnapshotKey: Sendable, Hashable {
  /// The key's two 64-bit halves (SipHash's k0 and k1, the key's bytes 0–7 and 8–15
  /// read little-endian).
  public let low: UInt64
  public let high: UInt64

  public init(low: UInt64, high: UInt64) {
    self.low = low
    self.high = high
  }

  /// A key drawn from `generator` (a store draws its own from the system's).
  public init(using generator: inout some RandomNumberGenerator) {
    self.init(low: generator.next(), high: generator.next())
  }

  /// A key drawn from the system's random number generator.
  public static func random() -> SnapshotKey {
    var generator = SystemRandomNumberGenerator()
    return SnapshotKey(using: &generator)
  }

  /// The SipHash-2-4 tag of `bytes` under this key.
  ///
  /// - Complexity: O(n) for n bytes, eight bytes a step.
  public func tag(of bytes: some Collection<UInt8>) -> UInt64 {
    if let tag = bytes.withContiguousStorageIfAvailable({ tag(of: UnsafeRawBufferPointer($0)) }) {
      return tag
    }
    return Array(bytes).withUnsafeBytes { tag(of: $0) }
  }

  private func tag(of bytes: UnsafeRawBufferPointer) -> UInt64 {
    var state = SipState(low: low, high: high)
    let words = bytes.count / 8
    for word in 0..<words {
      state.compress(bytes.loadUnaligned(fromByteOffset: word &* 8, as: UInt64.self).littleEndian)
    }
    // The last block: the bytes left over, little-endian, under the length's low byte.
    var last = UInt64(truncatingIfNeeded: bytes.count) &<< 56
    for index in 0..<bytes.count % 8 {
      last |= UInt64(bytes[words &* 8 &+ index]) &<< (index &* 8)
    }
    state.compress(last)
    return state.finalize()
  }
}

/// SipHash-2-4's four words of state.
private struct SipState {
  var v0: UInt64
  var v1: UInt64
  var v2: UInt64
  var v3: UInt64

  init(low: UInt64, high: UInt64) {
    v0 = low ^ 0x736f_6d65_7073_6575
    v1 = high ^ 0x646f_7261_6e64_6f6d
    v2 = low ^ 0x6c79_6765_6e65_7261
    v3 = high ^ 0x7465_6462_7974_6573
  }

  @inline(__always)
  mutating func round() {
    v0 &+= v1
    v1 = v1.rotatedLeft(by: 13) ^ v0
    v0 = v0.rotatedLeft(by: 32)
    v2 &+= v3
    v3 = v3.rotatedLeft(by: 16) ^ v2
    v0 &+= v3
    v3 = v3.rotatedLeft(by: 21) ^ v0
    v2 &+= v1
    v1 = v1.rotatedLeft(by: 17) ^ v2
    v2 = v2.rotatedLeft(by: 32)
  }

  /// Two rounds over one message word.
  @inline(__always)
  mutating func compress(_ word: UInt64) {
    v3 ^= word
    round()
    round()
    v0 ^= word
  }

  /// Four rounds after the last word.
  mutating func finalize() -> UInt64 {
    v2 ^= 0xFF
    round()
    round()
    round()
    round()
    return v0 ^ v1 ^ v2 ^ v3
  }
}

extension UInt64 {
  @inline(__always)
  fileprivate func rotatedLeft(by count: UInt64) -> UInt64 {
    self &<< count | self &>> (64 &- count)
  }
}
