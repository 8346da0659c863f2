import Foundation

/// RevocationStyle is how a token is revoked at the provider: RFC 7009, not at all (revoking
/// then erases the grant here only), or a described request (GitHub's
/// `DELETE /applications/{client_id}/token`, Slack's `auth.revoke`, Dropbox's token revoke).
public struct RevocationStyle: Sendable, Equatable {
    public enum Style: String, Sendable, CaseIterable { case rfc7009, none, request }
    public enum Token: String, Sendable, CaseIterable { case access, refresh }
    /// Where the token goes in the described request.
    public enum Placement: Sendable, Equatable {
        case form(String), json(String), query(String), bearer
        /// In the URL's path, in place of `{token}` (HubSpot's `DELETE …/refresh-tokens/{token}`).
        case path
    }
    public enum ClientAuth: String, Sendable, CaseIterable { case basic, form, none }

    public var style: Style = .rfc7009
    public var method = "POST"
    /// With `request`: the URL, `{client_id}` replaced (and `{token}`, with the `path` placement).
    public var url: String?
    /// Nil: the refresh token when the session has one, else the access token.
    public var token: Token?
    public var tokenIn: Placement = .form("token")
    public var clientAuth: ClientAuth = .none
    public var success: Set<Int> = [200, 204]

    public init() {}
}
