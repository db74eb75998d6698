import ConvergeTestSupport
import Foundation
import Testing

/// `converge bench --library N` on a small library: it exits 0 only when every read finds
/// what was built, and reports every key the issue names.
@Suite struct LibraryBenchTests {
  @Test(arguments: [false, true]) func aSmallLibraryReportsEveryFigure(tasks: Bool) throws {
    let (status, data) = try BuiltProduct.run(
      "converge", ["bench", "--library", "200", "--json"] + (tasks ? ["--tasks"] : []))
    let output = String(decoding: data, as: UTF8.self)
    #expect(status == 0, "\(output)")
    let report = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    #expect(report?["entities"] as? Double == 200, "\(output)")
    for key in [
      "build_us_per_entity", "state_bytes_per_entity", "load_ms", "encode_ms", "delta_since_ms",
      "apply_small_delta_us", "read_field_all_ms", "read_models_all_ms", "load_checked_ms",
      "store_open_ms",
    ] {
      #expect((report?[key] as? Double ?? 0) > 0, "\(key) in \(output)")
    }
    #expect(report?["resident_bytes_per_entity"] is Double, "\(output)")
    // Notes are measured through the typed API too, each figure beside the raw one.
    let typed = report?["typed"] as? [String: [String: Double]]
    #expect((typed == nil) == tasks, "\(output)")
    for key in [
      "create_us_per_note", "delta_since_title_edits_ms", "small_delta_round_trip_us",
      "small_delta_round_trip_projection_us", "read_all_ms", "read_projection_ms",
    ] where !tasks {
      #expect((typed?[key]?["typed"] ?? 0) > 0 && (typed?[key]?["raw"] ?? 0) > 0, "\(key)")
    }
    // Resident memory differences may be zero or less at a small size: present only.
    #expect(tasks || typed?["resident_after_rows_read_bytes_per_note"]?["typed"] != nil)
  }
}
