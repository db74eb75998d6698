import ConvergeTestSupport
import Foundation
import Testing

/// The store under real SIGKILLs: runs the built `converge torture` for a handful of
/// kills (seeded) and checks that no acknowledged delta was lost.
@Suite struct RealKillTests {
  @Test func killedWritersLoseNothingAcknowledged() throws {
    let seed = 20_261_125
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-kill-test-\(getpid())")
    defer { try? FileManager.default.removeItem(at: directory) }
    let (status, data) = try BuiltProduct.run(
      "converge",
      [
        // The kills bound the run, not the clock: torture's default 10 s cut a run of the
        // internal-checks build short at 5 kills on a busy host.
        "torture", directory.path, "--kills", "6", "--seconds", "3600", "--seed", "\(seed)",
        "--json",
      ])
    let output = String(decoding: data, as: UTF8.self)
    #expect(status == 0, "seed \(seed): \(output)")
    let report = try JSONSerialization.jsonObject(with: data) as? [String: Int]
    #expect(report?["kills"] == 6, "seed \(seed): \(output)")
    #expect(report?["recovered_opens"] == 6, "seed \(seed): \(output)")
    #expect(report?["lost_acknowledged"] == 0, "seed \(seed): \(output)")
    #expect(report?["unmatched_states"] == 0, "seed \(seed): \(output)")
    #expect((report?["durable_commits"] ?? 0) > 0, "seed \(seed): \(output)")
  }
}
