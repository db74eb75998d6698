import ConvergeTestSupport
import FuzzSupport

// Arbitrary bytes as every message kind: a typed error, or a value that re-encodes to
// the same bytes and applies without trapping.
runFuzzer { data, size in
  guard let data else { return 0 }
  do {
    try DecodeProperty.check(Array(UnsafeBufferPointer(start: data, count: size)))
  } catch {
    fuzzFailure("\(error)")
  }
  return 0
}
