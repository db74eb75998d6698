import ConvergeTestSupport
import Testing

@Suite struct PropertyRunnerTests {
  struct TooBig: Error {}

  @Test func aFailingPropertyIsFoundAndShrunkToItsSmallestFailingSize() {
    // Fails for every size of 7 or more: the runner must report size 7.
    let property = FuzzProperty(name: "fails-from-7", maximumSize: 50) { _, size in
      if size >= 7 { throw TooBig() }
    }
    let summary = PropertyRunner.run([property], seconds: 5, workers: 2, firstSeed: 1)
    let failure = summary.failures.first
    #expect(failure?.size == 7)
    #expect(failure?.property == "fails-from-7")
    #expect(
      failure.map { PropertyRunner.replay(property, seed: $0.seed, size: $0.size) != nil } == true)
    #expect(failure?.description.contains("converge fuzz --property fails-from-7") == true)
  }

  @Test func theStandardPropertiesHoldForAShortRun() {
    let summary = PropertyRunner.run(
      PropertyRunner.standardProperties, seconds: 1, workers: 2, firstSeed: baseSeed(77))
    #expect(summary.failures.isEmpty, "\(summary.failures)")
    #expect(summary.cases.values.allSatisfy { $0 > 0 })
  }
}
