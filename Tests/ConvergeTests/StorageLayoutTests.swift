import Testing

@testable import Converge
@testable import ConvergeCodec
@testable import ConvergeDocument

/// The sizes a library's memory figure rests on (`converge bench --library`): a change
/// that grows one of them shows here, not only as a larger figure in a release bench.
@Suite struct StorageLayoutTests {
  /// A run takes 88 bytes (its flags in the Lamport number's top bits): a one-run text's
  /// array of runs is a 120-byte allocation, in a 128-byte chunk rather than 144.
  @Test func aRunTakesEightyEightBytes() {
    #expect(MemoryLayout<RGA.Run>.stride == 88)
  }

  /// An RGA keeps its counts once (in the leaf order's totals) and its id index, delete
  /// log and waiting changes behind one reference: with its object header, a text's
  /// storage is 72 bytes, in an 80-byte chunk rather than 128.
  @Test func aTextsStorageTakesSeventyTwoBytes() {
    #if CONVERGE_INTERNAL_CHECKS
      // The checks' count of mutations since the last sampled check adds a word.
      #expect(MemoryLayout<RGA>.size == 64)
    #else
      #expect(MemoryLayout<RGA>.size == 56)
    #endif
  }

  /// The flags and the Lamport number share one word without disturbing each other.
  @Test func aRunsFlagsAndLamportNumberAreIndependent() {
    let limit = RGA.lamportLimit
    for lamport in [0, 1, limit / 2, limit - 1] {
      for (hasContent, deleted) in [(false, false), (false, true), (true, false), (true, true)] {
        var run = RGA.Run(
          replica: ReplicaID(rawValue: 1), counter: 1, lamport: lamport, origin: nil,
          rightOrigin: nil, hasContent: hasContent, deleted: deleted, contentStart: 0,
          length: 1, utf16: 1, utf8: 1)
        #expect(run.lamport == lamport && run.hasContent == hasContent && run.deleted == deleted)
        run.deleted.toggle()
        run.lamport = limit - 1 - lamport
        #expect(run.lamport == limit - 1 - lamport)
        #expect(run.hasContent == hasContent && run.deleted != deleted)
        run.hasContent.toggle()
        #expect(run.hasContent != hasContent && run.lamport == limit - 1 - lamport)
      }
    }
  }
}
