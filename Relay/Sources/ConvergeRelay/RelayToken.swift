import Converge
import ConvergeRelayClient
import JWTKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// What a bearer token lets a device do in one space.
///
/// Tokens are JWTs signed with HS256 and a secret the relay shares with whoever mints
/// them (an app's backend; `converge-relay token` for development). Claims: `space`,
/// `scope` (`read` or `write`), `exp`, and `replicas`, the replica ids (16 hex digits)
/// whose dots the device may push, so a stolen write token cannot forge another device's
/// edits.
public struct RelayTokenClaims: JWTPayload, Equatable {
  /// What a token may do.
  public enum Scope: String, Codable, Sendable {
    /// Pull and receive only.
    case read
    /// Push deltas too, for the granted replicas.
    case write
  }

  public var space: String
  public var scope: Scope
  public var exp: ExpirationClaim
  public var replicas: [String]

  /// Claims for `space` with `scope` until `expiry`, granting `replicas`.
  public init(space: String, scope: Scope, expiry: Date, replicas: [ReplicaID]) {
    self.space = space
    self.scope = scope
    self.exp = ExpirationClaim(value: expiry)
    self.replicas = replicas.map(\.description)
  }

  /// Signature and shape only: expiry is checked by the relay, so that an expired token
  /// closes with its own reason rather than as unauthorized.
  public func verify(using algorithm: some JWTAlgorithm) async throws {}

  /// The replica ids the token grants; malformed entries grant nothing.
  var grantedReplicas: Set<ReplicaID> {
    Set(
      replicas.compactMap { text in
        guard text.count == 16, let value = UInt64(text, radix: 16) else { return nil }
        return ReplicaID(rawValue: value)
      })
  }
}

/// Verifies tokens and signs them with one HS256 secret.
public struct RelayTokenAuthority: Sendable {
  private let keys: JWTKeyCollection

  /// A secret shorter than the HS256 hash (32 bytes) would weaken every token.
  public struct SecretTooShort: Error, Equatable {}

  /// An authority for `secret`, at least 32 bytes of UTF-8.
  public init(secret: String) async throws {
    guard secret.utf8.count >= 32 else { throw SecretTooShort() }
    let keys = JWTKeyCollection()
    await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
    self.keys = keys
  }

  /// A signed token for `claims`.
  public func sign(_ claims: RelayTokenClaims) async throws -> String {
    try await keys.sign(claims)
  }

  /// The token's claims, if it verifies and is for `space` and not expired.
  public func authorize(_ token: String?, space: String, now: Date = Date()) async -> Result<
    RelayGrant, RelayCloseReason
  > {
    guard let token, !token.isEmpty else { return .failure(.unauthorized) }
    let claims: RelayTokenClaims
    do {
      claims = try await keys.verify(token, as: RelayTokenClaims.self)
    } catch {
      return .failure(.unauthorized)
    }
    guard claims.space == space else { return .failure(.wrongSpace) }
    guard claims.exp.value > now else { return .failure(.tokenExpired) }
    return .success(
      RelayGrant(
        space: claims.space, canWrite: claims.scope == .write, expiry: claims.exp.value,
        replicas: claims.grantedReplicas))
  }
}

/// What a verified token allows, as the relay checks it on every message.
public struct RelayGrant: Sendable, Equatable {
  public var space: String
  public var canWrite: Bool
  public var expiry: Date
  public var replicas: Set<ReplicaID>

  /// Why `delta` may not be pushed under this grant, or `nil` if it may.
  ///
  /// Every id the delta carries is checked by the core's
  /// `Document.authorshipViolation(in:grantedTo:)` against the space as the relay holds it
  /// (`known`): events of a replica the token does not grant are accepted only when the
  /// relay holds them as they are (a client answering a handshake may echo events it
  /// received from the relay a moment earlier, which forges nothing), and a removal or a
  /// text delete may claim to have observed only events of such a replica that the
  /// relay holds. `known` is read only for a delta that names a replica outside the
  /// grant, so a device's own keystrokes never wait for the space's state.
  func refusal(
    toPush delta: DocumentDelta, known: @autoclosure () async -> Document,
    now: Date = Date()
  ) async -> RelayCloseReason? {
    guard now < expiry else { return .tokenExpired }
    guard canWrite else { return .readOnlyToken }
    guard !delta.isAuthored(onlyBy: replicas) else { return nil }
    guard let violation = await known().authorshipViolation(in: delta, grantedTo: replicas)
    else { return nil }
    return violation.isObservation ? .observedUnknownEvents : .replicaNotGranted
  }
}
