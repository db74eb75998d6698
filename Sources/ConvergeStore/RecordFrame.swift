import Converge

/// The frame around every record a store writes (log entries, snapshots, the identity):
///
/// ```text
/// offset  size  field
/// 0       4     CRC-32C of the next 4 + n bytes (length and payload), little-endian
/// 4       4     payload length, little-endian
/// 8       n     payload (an encoded Converge message, or the identity record)
/// ```
///
/// The payloads are already checksummed messages, but a log is read as a stream: the
/// frame tells where a record ends, and its own checksum tells a torn or flipped tail
/// (a write cut by a power loss) from a whole record before anything is decoded.
enum RecordFrame {
  static let headerSize = 8
  /// Larger lengths are damage, not data: no record a store writes comes near it.
  static let maximumPayload = 1 << 30

  /// `payload` framed.
  static func framed(_ payload: [UInt8]) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(headerSize + payload.count)
    append(payload, to: &bytes)
    return bytes
  }

  /// `payloads`, each framed, one after another: a group commit's log records.
  static func framed(_ payloads: [[UInt8]]) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(payloads.reduce(0) { $0 + headerSize + $1.count })
    for payload in payloads { append(payload, to: &bytes) }
    return bytes
  }

  /// Appends `payload`, framed, to `bytes`.
  ///
  /// The checksum covers bytes that sit together in `bytes`, so framing allocates nothing.
  static func append(_ payload: [UInt8], to bytes: inout [UInt8]) {
    append(payload[...], to: &bytes)
  }

  /// Appends `payload` (a slice of a larger buffer), framed, to `bytes`.
  static func append(_ payload: ArraySlice<UInt8>, to bytes: inout [UInt8]) {
    let start = bytes.count
    appendLittleEndian(0, to: &bytes)
    appendLittleEndian(UInt32(truncatingIfNeeded: payload.count), to: &bytes)
    bytes.append(contentsOf: payload)
    let checksum = CRC32C.checksum(bytes[(start + 4)...])
    for index in 0..<4 { bytes[start + index] = UInt8(truncatingIfNeeded: checksum >> (index * 8)) }
  }

  /// The whole records at the start of `bytes` and the length of the valid prefix they
  /// fill; reading stops at the first record that is short, too long or fails its
  /// checksum.
  ///
  /// - Complexity: O(n) for n bytes.
  /// The payload of a file that is exactly one whole record (the identity, the key, a
  /// tag), or `nil` if it is damaged.
  static func onlyRecord(in bytes: [UInt8]) -> ArraySlice<UInt8>? {
    let (records, validLength) = records(in: bytes)
    guard records.count == 1, validLength == bytes.count else { return nil }
    return records.first
  }

  /// `words` as little-endian bytes, eight each.
  static func littleEndianBytes(_ words: [UInt64]) -> [UInt8] {
    words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> ($0 * 8)) } }
  }

  /// The little-endian word at byte `offset` of `payload` (which holds eight bytes there).
  static func littleEndianWord(_ payload: ArraySlice<UInt8>, at offset: Int) -> UInt64 {
    (0..<8).reduce(0) { $0 | UInt64(payload[payload.startIndex + offset + $1]) << ($1 * 8) }
  }

  static func records(in bytes: [UInt8]) -> (records: [ArraySlice<UInt8>], validLength: Int) {
    var records: [ArraySlice<UInt8>] = []
    var offset = 0
    while bytes.count - offset >= headerSize {
      let checksum = readUInt32(bytes, at: offset)
      let length = Int(readUInt32(bytes, at: offset + 4))
      guard length <= maximumPayload, length <= bytes.count - offset - headerSize else { break }
      let end = offset + headerSize + length
      guard CRC32C.checksum(bytes[(offset + 4)..<end]) == checksum else { break }
      let payload = bytes[(offset + headerSize)..<end]
      records.append(payload)
      offset += headerSize + length
    }
    return (records, offset)
  }

  /// The whole records of `bytes` from the first offset after `damage` where one
  /// starts: what a cut at `damage` (the end of the valid prefix) would drop that is not
  /// a torn tail.
  ///
  /// - Complexity: O(n²) in the n bytes after `damage` at worst; most offsets are passed
  ///   over on their length alone.
  static func wholeRecords(after damage: Int, in bytes: [UInt8]) -> Int {
    var offset = damage + 1
    while bytes.count - offset >= headerSize {
      let length = Int(readUInt32(bytes, at: offset + 4))
      if length <= maximumPayload, length <= bytes.count - offset - headerSize,
        CRC32C.checksum(bytes[(offset + 4)..<(offset + headerSize + length)])
          == readUInt32(bytes, at: offset)
      {
        return records(in: Array(bytes[offset...])).records.count
      }
      offset += 1
    }
    return 0
  }

  private static func appendLittleEndian(_ value: UInt32, to bytes: inout [UInt8]) {
    for index in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: value >> (index * 8))) }
  }

  private static func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
    UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
      | UInt32(bytes[offset + 3]) << 24
  }
}
