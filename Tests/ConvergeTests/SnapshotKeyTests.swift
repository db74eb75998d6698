import Converge
import ConvergeTestSupport
import Testing

/// SipHash-2-4 against its reference vectors, and the tag's independence from how the
/// bytes are held.
@Suite struct SnapshotKeyTests {
  /// The reference implementation's 64 vectors (SipHash-2-4, 64-bit output): key bytes
  /// 0x00 … 0x0F, message n the bytes 0 … n − 1.
  static let vectors: [UInt64] = [
    0x726f_db47_dd0e_0e31, 0x74f8_39c5_93dc_67fd, 0x0d6c_8009_d9a9_4f5a,
    0x8567_6696_d7fb_7e2d, 0xcf27_94e0_2771_87b7, 0x1876_5564_cd99_a68d,
    0xcbc9_466e_58fe_e3ce, 0xab02_00f5_8b01_d137, 0x93f5_f579_9a93_2462,
    0x9e00_82df_0ba9_e4b0, 0x7a5d_bbc5_94dd_b9f3, 0xf4b3_2f46_226b_ada7,
    0x751e_8fbc_860e_e5fb, 0x14ea_5627_c084_3d90, 0xf723_ca90_8e7a_f2ee,
    0xa129_ca61_49be_45e5, 0x3f2a_cc7f_57c2_9bdb, 0x699a_e9f5_2cbe_4794,
    0x4bc1_b3f0_968d_d39c, 0xbb6d_c91d_a779_61bd, 0xbed6_5cf2_1aa2_ee98,
    0xd0f2_cbb0_2e3b_67c7, 0x9353_6795_e3a3_3e88, 0xa80c_038c_cd5c_cec8,
    0xb8ad_50c6_f649_af94, 0xbce1_92de_8a85_b8ea, 0x17d8_35b8_5bbb_15f3,
    0x2f2e_6163_076b_cfad, 0xde4d_aaac_a71d_c9a5, 0xa6a2_5066_8795_6571,
    0xad87_a353_5c49_ef28, 0x32d8_92fa_d841_c342, 0x7127_512f_72f2_7cce,
    0xa7f3_2346_f959_78e3, 0x12e0_b01a_bb05_1238, 0x15e0_34d4_0fa1_97ae,
    0x314d_ffbe_0815_a3b4, 0x0279_90f0_2962_3981, 0xcadc_d4e5_9ef4_0c4d,
    0x9abf_d876_6a33_735c, 0x0e3e_a96b_5304_a7d0, 0xad0c_42d6_fc58_5992,
    0x1873_06c8_9bc2_15a9, 0xd4a6_0abc_f379_2b95, 0xf935_451d_e4f2_1df2,
    0xa953_8f04_1975_5787, 0xdb9a_cddf_f56c_a510, 0xd06c_98cd_5c09_75eb,
    0xe612_a3cb_9ecb_a951, 0xc766_e62c_fcad_af96, 0xee64_435a_9752_fe72,
    0xa192_d576_b245_165a, 0x0a87_87bf_8ecb_74b2, 0x81b3_e73d_20b4_9b6f,
    0x7fa8_220b_a3b2_ecea, 0x2457_31c1_3ca4_2499, 0xb78d_bfaf_3a8d_83bd,
    0xea1a_d565_322a_1a0b, 0x60e6_1c23_a379_5013, 0x6606_d7e4_4628_2b93,
    0x6ca4_ecb1_5c5f_91e1, 0x9f62_6da1_5c96_25f3, 0xe51b_3860_8ef2_5f57,
    0x958a_324c_eb06_4572,
  ]

  static let key = SnapshotKey(low: 0x0706_0504_0302_0100, high: 0x0F0E_0D0C_0B0A_0908)

  @Test func matchesTheReferenceVectors() {
    for (length, expected) in Self.vectors.enumerated() {
      let message = (0..<length).map { UInt8($0) }
      #expect(Self.key.tag(of: message) == expected, "length \(length)")
      // A slice that does not start at 0, and a collection without contiguous storage.
      let padded = [0xAB] + message + [0xCD]
      #expect(Self.key.tag(of: padded[1..<padded.count - 1]) == expected)
      #expect(Self.key.tag(of: message.lazy.map { $0 }) == expected)
    }
  }

  /// The sample of ``SnapshotKey``'s doc comment.
  @Test func taggedSnapshotsLoadAsTheyWereSaved() throws {
    var replica = Replica(id: ReplicaID(rawValue: 1))
    let note = EntityKey(type: "note", id: "n1")
    replica.transact { $0.insertText("Hello, tagged world", at: 0, in: "body", of: note) }
    let document = replica.document
    let key = SnapshotKey.random()
    let bytes = document.encoded()
    let tag = key.tag(of: bytes)  // kept with the bytes
    let loaded = try Document(decoding: bytes, tag: tag, key: key)
    #expect(loaded == document)
    #expect(loaded.deferredTextCount == 1)
    #expect(loaded.text(of: "body", in: note) == "Hello, tagged world")
  }

  @Test func anotherKeyGivesAnotherTag() {
    let message = Array("a snapshot".utf8)
    let other = SnapshotKey(low: Self.key.low ^ 1, high: Self.key.high)
    #expect(other.tag(of: message) != Self.key.tag(of: message))
    #expect(SnapshotKey.random() != SnapshotKey.random())
  }
}
