import Converge
import ConvergeTestSupport
import FuzzSupport

// Bytes become edits for three replicas and a delivery order with duplicates and drops,
// then healing; the replicas must converge and keep every invariant. Each input runs
// twice: as the classic script, and with list moves and tree moves among the edits.
runFuzzer { data, size in
  guard let data else { return 0 }
  do {
    // Every delivered delta crosses the wire: encoded, then decoded.
    let bytes = UnsafeBufferPointer(start: data, count: size)
    try ReplicaScript.run(bytes) { delta in try DocumentDelta(decoding: delta.encoded()) }
    // The same bytes read with list and tree edits too.
    try ReplicaScript.run(bytes, moves: true) { delta in
      try DocumentDelta(decoding: delta.encoded())
    }
  } catch {
    fuzzFailure("\(error)")
  }
  return 0
}
