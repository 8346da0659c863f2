import Foundation

/// GrantLifetime is what a provider's grant is made of over time: whether its refresh tokens
/// rotate, stay valid, or do not exist, and whether its access tokens expire.
public struct GrantLifetime: Sendable, Equatable {
    public enum RefreshTokens: String, Sendable, CaseIterable {
        /// A refresh may return a new refresh token; the old one is never presented again.
        case rotating
        /// The refresh token stays valid: a refresh whose answer was lost may be retried.
        case reusable
        /// No refresh token is issued: the grant ends when its access token expires.
        case none
    }

    public var refreshTokens: RefreshTokens = .rotating
    /// False: an answer without `expires_in` is a token that never expires (GitHub OAuth Apps).
    public var accessTokenExpires = true
    /// The lifetime assumed when an expiring token's answer gives none.
    public var defaultExpiresIn: TimeInterval = 300

    public init() {}
}
