import ConvergeTestSupport
import Testing

/// The random passage cases: the detector sees interleaving, the reference FugueMax
/// keeps every passage whole, and `Text` at least converges on them (it still interleaves
/// until FugueMax lands in the run-length sequence; `converge passages` counts how often).
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

  @Test func textConvergesOnEveryPassageCase() {
    let tally = PassageTally.run(count: 500, seed: baseSeed(0xFA6E)) {
      $0.mergedWithText(using: &$1)
    }
    #expect(tally.diverged == 0, "\(tally), seed \(baseSeed(0xFA6E))")
  }
}
