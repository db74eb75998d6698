import Converge
import Dispatch
import Foundation

/// A property checked on random cases: a seed and a size (how many replicas, rounds or
/// bytes). Sizes let a failure shrink: the runner retries it with smaller sizes.
public struct FuzzProperty: Sendable {
  public var name: String
  /// The largest size the runner draws.
  public var maximumSize: Int
  /// Throws when the property fails for this seed and size.
  public var check: @Sendable (_ seed: UInt64, _ size: Int) throws -> Void

  public init(
    name: String, maximumSize: Int,
    check: @escaping @Sendable (_ seed: UInt64, _ size: Int) throws -> Void
  ) {
    self.name = name
    self.maximumSize = maximumSize
    self.check = check
  }
}

/// A failing case, shrunk.
public struct FuzzFailure: Sendable, CustomStringConvertible {
  public var property: String
  public var seed: UInt64
  /// The smallest size found that still fails.
  public var size: Int
  public var originalSize: Int
  public var error: String

  public var description: String {
    """
    property \(property) failed: \(error)
      seed \(seed), size \(size) (shrunk from \(originalSize))
      replay: converge fuzz --property \(property) --seed \(seed) --size \(size)
    """
  }
}

/// What a run did.
public struct FuzzRunSummary: Sendable {
  public var cases: [String: Int]
  public var failures: [FuzzFailure]
  public var seconds: Double
}

/// Runs properties on random seeds on every core until a deadline, shrinking failures.
public enum PropertyRunner {
  /// Every property of the library: the merge laws and delta decomposition of each type
  /// and of the document, exact `delta(since:)`, and replica scripts.
  public static var standardProperties: [FuzzProperty] {
    [
      FuzzProperty(name: "document-join-laws", maximumSize: 24) { seed, size in
        var random = SeededGenerator(seed: seed)
        let network = DocumentNetwork(replicaCount: 3, rounds: size, using: &random)
        let states = network.replicas.map(\.document)
        try checkJoinLaws(states[0], states[1], states[2], seed: seed)
      },
      FuzzProperty(name: "document-delta-laws", maximumSize: 16) { seed, size in
        var random = SeededGenerator(seed: seed)
        let network = DocumentNetwork(replicaCount: 2, rounds: size, using: &random)
        try checkDeltaLaws(
          from: network.replicas[0], state: \.document, concurrent: network.replicas[1].document,
          steps: 4, using: &random, join: { $0.merging($1) }, equivalent: (==),
          mutate: { replica, random in
            var asDocument = Document()
            asDocument.apply(replica.randomTransaction(using: &random).delta)
            return asDocument
          })
      },
      FuzzProperty(name: "document-delta-since", maximumSize: 24) { seed, size in
        var random = SeededGenerator(seed: seed)
        let network = DocumentNetwork(replicaCount: 2, rounds: size, using: &random)
        let (sender, receiver) = (network.replicas[0], network.replicas[1])
        var synced = receiver.document
        synced.apply(sender.delta(since: receiver.context))
        try ensure(synced == receiver.document.merging(sender.document), "delta(since:) ⊔ receiver")
      },
      // The set's random histories choose their own length from the seed.
      FuzzProperty(name: "orset-join-laws", maximumSize: 1) { seed, _ in
        var random = SeededGenerator(seed: seed)
        let network = ORSet<UInt8>.randomNetwork(using: &random) {
          UInt8.random(in: 0..<4, using: &$0)
        }
        let states = network.replicas.map(\.state)
        try checkJoinLaws(states[0], states[1], states[2], seed: seed)
      },
      FuzzProperty(name: "replica-script", maximumSize: 1_024) { seed, size in
        var random = SeededGenerator(seed: seed)
        let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
        try ReplicaScript.run(bytes)
      },
      FuzzProperty(name: "replica-script-moves", maximumSize: 1_024) { seed, size in
        var random = SeededGenerator(seed: seed)
        let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
        try ReplicaScript.run(bytes, moves: true)
      },
    ]
  }

  /// Runs `properties` for `seconds` on `workers` threads, drawing seeds from
  /// `firstSeed` on; calls `progress` now and then with the cases run so far.
  public static func run(
    _ properties: [FuzzProperty], seconds: Double, workers: Int, firstSeed: UInt64,
    progress: @escaping @Sendable (Int) -> Void = { _ in }
  ) -> FuzzRunSummary {
    let clock = ContinuousClock()
    let start = clock.now
    let deadline = start + .milliseconds(Int64(seconds * 1000))
    let results = ResultsBox(workerCount: workers)
    let workerCount = Swift.max(1, workers)
    DispatchQueue.concurrentPerform(iterations: workerCount) { worker in
      var seed = firstSeed &+ UInt64(worker)
      var cases: [String: Int] = [:]
      var failures: [FuzzFailure] = []
      var done = 0
      while clock.now < deadline, failures.isEmpty {
        for property in properties {
          var random = SeededGenerator(seed: seed)
          let size = Int.random(in: 1...property.maximumSize, using: &random)
          do {
            try property.check(seed, size)
          } catch {
            failures.append(shrink(property, seed: seed, size: size, error: error))
            break
          }
          cases[property.name, default: 0] += 1
        }
        seed &+= UInt64(workerCount)
        done += 1
        if worker == 0, done % 20 == 0 { progress(done * workerCount) }
      }
      results.store(worker: worker, cases: cases, failures: failures)
    }
    let (cases, failures) = results.merged()
    let elapsed = clock.now - start
    let (wholeSeconds, attoseconds) = elapsed.components
    return FuzzRunSummary(
      cases: cases, failures: failures,
      seconds: Double(wholeSeconds) + Double(attoseconds) / 1e18)
  }

  /// Checks one case, for replaying a printed failure.
  public static func replay(_ property: FuzzProperty, seed: UInt64, size: Int) -> FuzzFailure? {
    do {
      try property.check(seed, size)
      return nil
    } catch {
      return FuzzFailure(
        property: property.name, seed: seed, size: size, originalSize: size, error: "\(error)")
    }
  }

  /// The smallest size below `size` that still fails for `seed` (trying each smaller
  /// size from the smallest up, so the first failure found is minimal).
  static func shrink(_ property: FuzzProperty, seed: UInt64, size: Int, error: any Error)
    -> FuzzFailure
  {
    var smallest = size
    var message = "\(error)"
    for candidate in 1..<size {
      do {
        try property.check(seed, candidate)
      } catch {
        smallest = candidate
        message = "\(error)"
        break
      }
    }
    return FuzzFailure(
      property: property.name, seed: seed, size: smallest, originalSize: size, error: message)
  }
}

/// Collects the workers' results.
private final class ResultsBox: @unchecked Sendable {  // every access holds `lock`
  private let lock = NSLock()
  private var cases: [String: Int] = [:]
  private var failures: [FuzzFailure] = []

  init(workerCount: Int) {}

  func store(worker: Int, cases: [String: Int], failures: [FuzzFailure]) {
    lock.withLock {
      self.cases.merge(cases, uniquingKeysWith: +)
      self.failures.append(contentsOf: failures)
    }
  }

  func merged() -> ([String: Int], [FuzzFailure]) {
    lock.withLock { (cases, failures.sorted { $0.seed < $1.seed }) }
  }
}
