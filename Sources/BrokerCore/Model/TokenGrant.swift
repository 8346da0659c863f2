import Foundation

/// TokenGrant is a successful token-endpoint response (RFC 6749 §5.1, or where the client's
/// provider descriptor says each value is), checked by the adapter: `accessToken` present and
/// `tokenType` known.
public struct TokenGrant: Sendable, Equatable {
    public let accessToken: String
    public let tokenType: TokenType
    public let expiresIn: TimeInterval?
    /// Nil when the IdP did not rotate: the old refresh token stays.
    public let refreshToken: String?
    /// Nil when the IdP kept the requested scope (RFC 6749 §5.1).
    public let scope: [String]?
    public let idToken: String?
    /// The members the client's descriptor keeps, as a compact JSON object (nil: none kept).
    public var metadata: String?
    /// The refresh token's own lifetime, when the provider says (`refresh_token_expires_in`).
    public var grantExpiresIn: TimeInterval?
    /// The user's id read from the answer, when the descriptor says it is there (Slack).
    public var subject: String?

    public init(accessToken: String, tokenType: TokenType, expiresIn: TimeInterval?, refreshToken: String?,
                scope: [String]?, idToken: String?, metadata: String? = nil, grantExpiresIn: TimeInterval? = nil, subject: String? = nil) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.scope = scope
        self.idToken = idToken
        self.metadata = metadata
        self.grantExpiresIn = grantExpiresIn
        self.subject = subject
    }
}
