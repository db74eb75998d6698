/// CRC-32C (Castagnoli): the checksum that closes every Converge message.
///
/// Reflected polynomial `0x82F63B78`, initial value `0xFFFFFFFF`, final XOR `0xFFFFFFFF`;
/// the check value of the ASCII bytes `123456789` is `0xE3069283`. It is the CRC of
/// iSCSI, ext4 and SSE 4.2's `crc32` instruction, and detects every burst error of up to
/// 32 bits, which covers the bit flips and short corruptions storage and relays cause.
/// It is not a signature: it guards against accidents, not against an attacker.
///
/// - Complexity: O(n) for n bytes: eight bytes a step through eight tables
///   ("slicing-by-8"), one table lookup per byte.
package enum CRC32C {
  /// The checksum of `bytes`.
  public static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
    continuing(0xFFFF_FFFF, over: bytes) ^ 0xFFFF_FFFF
  }

  /// The checksum of two 64-bit integers (little-endian) followed by `bytes`, as
  /// ``checksum(_:)`` of their concatenation, without building it: what a session
  /// frame's checksum covers (its stream id and sequence number, which do not travel).
  package static func checksum<C: Collection>(
    prefixedBy first: UInt64, _ second: UInt64, _ bytes: C
  )
    -> UInt32 where C.Element == UInt8
  {
    let prefix = (first.littleEndian, second.littleEndian)
    let crc = withUnsafeBytes(of: prefix) { raw in
      tables.withUnsafeBufferPointer {
        update(0xFFFF_FFFF, raw.assumingMemoryBound(to: UInt8.self), $0)
      }
    }
    return continuing(crc, over: bytes) ^ 0xFFFF_FFFF
  }

  /// The running CRC `crc` continued over `bytes` (before the final XOR).
  private static func continuing<C: Collection>(_ crc: UInt32, over bytes: C) -> UInt32
  where C.Element == UInt8 {
    tables.withUnsafeBufferPointer { tables in
      if let updated = bytes.withContiguousStorageIfAvailable({ update(crc, $0, tables) }) {
        return updated
      }
      var crc = crc
      for byte in bytes {
        crc = tables[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
      }
      return crc
    }
  }

  /// Runs the CRC over contiguous bytes, eight at a time, then byte by byte. `tables`
  /// holds 8 × 256 entries and every index is masked to 8 bits plus a table offset, so
  /// the lookups stay in bounds.
  private static func update(
    _ start: UInt32, _ bytes: UnsafeBufferPointer<UInt8>, _ tables: UnsafeBufferPointer<UInt32>
  ) -> UInt32 {
    var crc = start
    var position = 0
    let count = bytes.count
    while count - position >= 8 {
      let low =
        crc
        ^ (UInt32(bytes[position]) | UInt32(bytes[position + 1]) << 8
          | UInt32(bytes[position + 2]) << 16 | UInt32(bytes[position + 3]) << 24)
      crc =
        tables[7 << 8 | Int(low & 0xFF)] ^ tables[6 << 8 | Int((low >> 8) & 0xFF)]
        ^ tables[5 << 8 | Int((low >> 16) & 0xFF)] ^ tables[4 << 8 | Int(low >> 24)]
        ^ tables[3 << 8 | Int(bytes[position + 4])] ^ tables[2 << 8 | Int(bytes[position + 5])]
        ^ tables[1 << 8 | Int(bytes[position + 6])] ^ tables[Int(bytes[position + 7])]
      position += 8
    }
    while position < count {
      crc = tables[Int((crc ^ UInt32(bytes[position])) & 0xFF)] ^ (crc >> 8)
      position += 1
    }
    return crc
  }

  /// Table k (entries `k << 8 ..< (k + 1) << 8`) advances the CRC of a byte by k more
  /// zero bytes; table 0 is the classic byte-at-a-time table.
  private static let tables: [UInt32] = {
    var tables = [UInt32](repeating: 0, count: 8 << 8)
    for index in 0..<256 {
      var crc = UInt32(index)
      for _ in 0..<8 {
        crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1
      }
      tables[index] = crc
    }
    for table in 1..<8 {
      for index in 0..<256 {
        let previous = tables[(table - 1) << 8 | index]
        tables[table << 8 | index] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
      }
    }
    return tables
  }()
}
