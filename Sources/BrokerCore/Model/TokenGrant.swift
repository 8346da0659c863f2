import Foundation

/// TokenGrant is a successful token-endpoint response (RFC 6749 §5.1), checked by the OIDC
/// adapter: `accessToken` present and `tokenType` known.
public struct TokenGrant: Sendable, Equatable {
    public let accessToken: String
    public let tokenType: TokenType
    public let expiresIn: TimeInterval?
    /// Nil when the IdP did not rotate: the old refresh token stays (spec §8).
    public let refreshToken: String?
    /// Nil when the IdP kept the requested scope (RFC 6749 §5.1).
    public let scope: [String]?
    public let idToken: String?

    public init(accessToken: String, tokenType: TokenType, expiresIn: TimeInterval?, refreshToken: String?,
                scope: [String]?, idToken: String?) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.scope = scope
        self.idToken = idToken
    }
}
