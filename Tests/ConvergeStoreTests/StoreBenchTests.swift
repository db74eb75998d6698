import ConvergeTestSupport
import Foundation
import Testing

/// `converge bench TRACE --store DIR` on a small trace: it exits 0 only when every
/// reopened store equals what was typed, and reports every figure issue #42 names.
@Suite struct StoreBenchTests {
  @Test func aSmallTraceReportsEveryStoreFigure() throws {
    let folder = FileManager.default.temporaryDirectory
      .appendingPathComponent("converge-store-bench-\(getpid())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    // 600 one-character insertions, one transaction each.
    let text = String(repeating: "abcdefghij", count: 60)
    let transactions = text.indices.enumerated().map { offset, index in
      ["patches": [[offset, 0, String(text[index])]]]
    }
    let trace = try JSONSerialization.data(
      withJSONObject: ["endContent": text, "txns": transactions])
    let tracePath = folder.appendingPathComponent("trace.json")
    try trace.write(to: tracePath)
    let (status, data) = try BuiltProduct.run(
      "converge",
      [
        "bench", tracePath.path, "--store", folder.appendingPathComponent("store").path,
        "--runs", "1", "--json",
      ])
    let output = String(decoding: data, as: UTF8.self)
    #expect(status == 0, "\(output)")
    let report = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    #expect(report?["open_edits"] as? Int == 600, "\(output)")
    for key in [
      "store_us_per_edit", "fsync_floor_us", "synced_save_us", "open_ms", "disk_bytes_per_edit",
    ] {
      #expect(((report?[key] as? NSNumber)?.doubleValue ?? 0) > 0, "\(key) in \(output)")
    }
    #expect(report?["synced_save_over_floor_us"] != nil, "\(output)")
    #expect(report?["open_replayed_records"] != nil, "\(output)")
  }
}
