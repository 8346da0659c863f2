import Foundation

/// PersonalityCode is an authorization code issued at a personality's authorize endpoint:
/// single use, 60 s, redeemed only at the same personality by the same client.
struct PersonalityCode: Sendable {
    let personality: String
    let client: String
    let redirectURI: String
    /// The PKCE S256 challenge, when the request had one (and the personality checks it).
    let challenge: String?
    let nonce: String?
    let scope: String
    /// Slack's `user_scope`: a user token is asked for.
    let userScope: String?
    let subject: String
    /// Whether the request asked for a refresh token the personality's way.
    let offline: Bool
    let expires: Date
}

/// PersonalityAccess is an opaque access token a personality issued, as its "who am I" and
/// revocation endpoints know it. It dies with its family (a revoked or reused grant).
struct PersonalityAccess: Sendable {
    let personality: String
    let client: String
    let subject: String
    let scope: String
    let family: String?
    /// Nil: never expires (GitHub OAuth Apps).
    let expires: Date?
    /// How many refreshes its family had when it was issued (a later rotation may end it).
    var familyUses = 0
}
