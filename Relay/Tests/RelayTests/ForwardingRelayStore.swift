import Converge
import ConvergeRelay
import ConvergeRelayClient

/// A test store around another that forwards every call to it: a wrapper conforms and
/// implements only the calls it hooks or counts (``CountingRelayStore``,
/// ``InterleavingRelayStore``).
protocol ForwardingRelayStore: RelayStore {
  var inner: any RelayStore { get }
}

extension ForwardingRelayStore {
  func append(space: String, delta: [UInt8]) async throws -> UInt64 {
    try await inner.append(space: space, delta: delta)
  }

  func read(space: String, after position: UInt64) async throws -> SpaceLog {
    try await inner.read(space: space, after: position)
  }

  func compact(space: String, state: [UInt8], through position: UInt64) async throws {
    try await inner.compact(space: space, state: state, through: position)
  }

  func deviceRecords(space: String) async throws -> RelayDeviceRecords {
    try await inner.deviceRecords(space: space)
  }

  func record(space: String, devices: [RelayDeviceRecord]) async throws {
    try await inner.record(space: space, devices: devices)
  }

  func retire(space: String, devices: [RelayDeviceRecord]) async throws -> [ReplicaID] {
    try await inner.retire(space: space, devices: devices)
  }

  func touch(space: String, replicas: [ReplicaID], lastHeard: Int64) async throws {
    try await inner.touch(space: space, replicas: replicas, lastHeard: lastHeard)
  }

  func recordedCut(space: String) async throws -> RelayStableCut? {
    try await inner.recordedCut(space: space)
  }

  func recordStableCut(
    space: String, cut: RelayStableCut, ifDevicesAt version: RelayDeviceRecords.Version?
  ) async throws -> RelayStableCut? {
    try await inner.recordStableCut(space: space, cut: cut, ifDevicesAt: version)
  }

  func replaceSnapshot(space: String, state: [UInt8], through position: UInt64) async throws {
    try await inner.replaceSnapshot(space: space, state: state, through: position)
  }

  func events() -> AsyncStream<RelayStoreEvent>? { inner.events() }

  func ready() async throws { try await inner.ready() }
}
