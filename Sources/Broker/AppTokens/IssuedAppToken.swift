import BrokerCore
import Foundation

/// IssuedAppToken is what a caller of AppTokenService receives: the token, its type, expiry and
/// granted scopes, and `version` — the stored row's, which a caller names to
/// `AppTokenService.renew(ifStill:)` when the upstream refused this token.
public struct IssuedAppToken: Sendable, Equatable {
    public let client: String
    public let accessToken: String
    public let tokenType: TokenType
    public let expiresAt: Date
    public let expiresIn: Int
    public let scope: [String]
    public let version: Int64
    /// Whether this hand-out waited for a grant (false: the stored token served).
    public let granted: Bool
    /// A DPoP proof (RFC 9449 §7) per target the caller named, bound to this token.
    public var dpopProofs: [String] = []
}
