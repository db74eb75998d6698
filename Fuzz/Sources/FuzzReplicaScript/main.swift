import Converge
import ConvergeTestSupport
import FuzzSupport

// Bytes become edits for three replicas and a delivery order with duplicates and drops,
// then healing; the replicas must converge and keep every invariant.
runFuzzer { data, size in
  guard let data else { return 0 }
  do {
    // Every delivered delta crosses the wire: encoded, then decoded.
    try ReplicaScript.run(UnsafeBufferPointer(start: data, count: size)) { delta in
      try DocumentDelta(decoding: delta.encoded())
    }
  } catch {
    fuzzFailure("\(error)")
  }
  return 0
}
