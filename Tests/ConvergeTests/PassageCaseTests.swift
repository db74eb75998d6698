import ConvergeTestSupport
import Testing

/// The random passage cases: the detector sees interleaving, the reference FugueMax
/// keeps every passage whole, and so does `SharedText`, merging each case exactly as the reference
/// (`converge passages` counts the cases in a release build).
@Suite struct PassageCaseTests {
  @Test func detectorSeesASplitPassage() {
    let prepend = PassageCase(
      base: "", position: 0,
      passages: [.init(text: "abcd", forward: false), .init(text: "ghij", forward: false)])
    #expect(prepend.isInterleaved("djcibhag"))
    #expect(!prepend.isInterleaved("dcbajihg"))
    #expect(!prepend.isInterleaved("jihgdcba"))
  }

  @Test func referenceFugueMaxKeepsEveryPassageWhole() {
    let tally = PassageTally.run(count: 2_000, seed: baseSeed(0xFA6E)) {
      $0.mergedWithReference(using: &$1)
    }
    #expect(tally.interleaved == 0 && tally.diverged == 0, "\(tally), seed \(baseSeed(0xFA6E))")
  }

  /// `SharedText` orders concurrent typing as FugueMax does: no case interleaves, and every
  /// case merges exactly as the reference does.
  @Test func textKeepsEveryPassageWholeAsTheReferenceDoes() {
    let tally = PassageTally.run(count: 500, seed: baseSeed(0xFA6E)) {
      $0.mergedWithText(using: &$1)
    }
    #expect(tally.interleaved == 0 && tally.diverged == 0, "\(tally), seed \(baseSeed(0xFA6E))")
    var random = SeededGenerator(seed: baseSeed(0xFA6F))
    for _ in 0..<300 {
      let passageCase = PassageCase.random(using: &random)
      let text = passageCase.mergedWithText(using: &random)
      let reference = passageCase.mergedWithReference(using: &random)
      #expect(text == reference, "\(passageCase), seed \(baseSeed(0xFA6F))")
    }
  }
}
