import Converge
import ConvergeTestSupport
import Testing

/// The table-driven CRC-32C (eight bytes a step) against the definition, one bit at a
/// time, at every length around the eight-byte steps and on slices.
@Suite struct CRC32CTests {
  /// CRC-32C by its definition: reflected polynomial 0x82F63B78, bit by bit.
  private func bitwise(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
      crc ^= UInt32(byte)
      for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
    }
    return crc ^ 0xFFFF_FFFF
  }

  @Test func matchesTheDefinitionAtEveryLength() {
    var random = SeededGenerator(seed: 0xC4C)
    for length in Array(0...40) + [255, 256, 1000, 4099] {
      let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
      #expect(CRC32C.checksum(bytes) == bitwise(bytes), "length \(length)")
      // A slice that does not start at 0, and a collection without contiguous storage.
      let padded = [0xAB] + bytes + [0xCD]
      #expect(CRC32C.checksum(padded[1..<padded.count - 1]) == bitwise(bytes))
      #expect(CRC32C.checksum(bytes.lazy.map { $0 }) == bitwise(bytes))
    }
    #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
  }
}
