import Foundation

#if os(Linux)
  /// glibc's `int malloc_trim(size_t pad)`, which the Glibc module does not export.
  @_silgen_name("malloc_trim")
  private func mallocTrim(_ pad: Int) -> Int32
#endif

/// Reads the process's memory figures from `/proc/self/status` on Linux; elsewhere
/// every figure reads 0.
enum MemoryProbe {
  /// The resident-set high-water mark (`VmHWM`), in bytes.
  static func highWaterMark() -> Int { field("VmHWM:") }

  /// The current resident set (`VmRSS`), in bytes.
  static func residentSet() -> Int { field("VmRSS:") }

  /// Returns the heap's free pages to the system, so that memory freed by parsing the
  /// trace is not silently reused by the replay and hidden from the growth figure.
  static func releaseFreeHeap() {
    #if os(Linux)
      _ = mallocTrim(0)
    #endif
  }

  /// Resets the high-water mark to the current resident set (Linux `clear_refs` 5), so
  /// that the next reading of ``highWaterMark()`` is the peak of what runs in between.
  static func resetHighWaterMark() {
    guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return }
    handle.write(Data("5".utf8))
    try? handle.close()
  }

  private static func field(_ name: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)
    else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix(name) {
      return (Int(line.filter(\.isNumber)) ?? 0) * 1024
    }
    return 0
  }
}
