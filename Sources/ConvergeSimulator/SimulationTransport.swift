import Converge

/// How the simulated network turns deltas into bytes and how the oracle names a state.
///
/// Simulations use the binary codec (``encoded``, the ``standard`` transport): deltas
/// travel as their encoded messages and states are compared by their encoded bytes.
/// ``passthrough`` passes deltas as values and names states by ``DocumentFingerprint``,
/// a canonical text dump, to tell a codec bug from a merge bug. Framed live pushes
/// (``SimulationConfiguration/framedPushes``) always travel as bytes.
///
/// When `encode` returns bytes, every message is encoded by the sender, counted on the
/// wire and decoded by the receiver; a message that fails to decode is a failure of the
/// run. When it returns `nil`, the delta is passed through and its size is not known.
public struct SimulationTransport: Sendable {
  /// The bytes of a delta on the wire, or `nil` to pass the value through.
  public var encode: @Sendable (DocumentDelta) -> [UInt8]?
  /// The delta carried by bytes that `encode` produced, or `nil` if they do not decode.
  public var decode: @Sendable ([UInt8]) -> DocumentDelta?
  /// Canonical bytes of a whole state: equal states must give equal bytes.
  public var stateFingerprint: @Sendable (Document) -> [UInt8]

  public init(
    encode: @escaping @Sendable (DocumentDelta) -> [UInt8]?,
    decode: @escaping @Sendable ([UInt8]) -> DocumentDelta?,
    stateFingerprint: @escaping @Sendable (Document) -> [UInt8]
  ) {
    self.encode = encode
    self.decode = decode
    self.stateFingerprint = stateFingerprint
  }

  /// The transport simulations use unless told otherwise, the command line included.
  public static var standard: SimulationTransport { .encoded }

  /// Every delta encoded, counted and decoded; states compared by their encoded bytes.
  public static let encoded = SimulationTransport(
    encode: { $0.encoded() },
    decode: { try? DocumentDelta(decoding: $0) },
    stateFingerprint: { $0.encoded() })

  /// Deltas passed through as values; states named by ``DocumentFingerprint``.
  public static let passthrough = SimulationTransport(
    encode: { _ in nil },
    decode: { _ in nil },
    stateFingerprint: { DocumentFingerprint.bytes(of: $0) })
}
