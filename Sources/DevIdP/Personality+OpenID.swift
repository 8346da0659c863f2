/// The OpenID Connect personalities: ID tokens (RS256) signed with the dev IdP's keys, whose
/// `iss` is the personality's issuer, discovery at the issuer.
extension Personality {
    static let openID: [Personality] = [google, microsoft, microsoftCommon, gitlab, xero, linkedin, okta, auth0, azureB2C]

    /// Google: a refresh token only with `access_type=offline`, reusable (refreshes return none).
    static let google = Personality(openID: "google") {
        $0.paths = .init(authorize: "/o/oauth2/v2/auth", token: "/token")
        $0.offline = .param("access_type", "offline")
        $0.refresh = .reusable
        $0.accessTTL = 3599
        $0.accessPrefix = "ya29."
        $0.refreshPrefix = "1//"
        $0.whoAmI = .userinfo(path: "/v1/userinfo")
        $0.userID = .numeric
    }

    /// Microsoft's identity platform for one tenant: everything below `/{tenant}`, ID tokens
    /// with `tid` and `oid`, a refresh token with `offline_access`, no revocation endpoint,
    /// Microsoft Graph's `/v1.0/me` as "who am I".
    static let microsoft = Personality(openID: "microsoft") {
        $0.tenancy = .single("6f7c3a52-2d1e-4b8a-9c0f-1e2d3c4b5a69")
        $0.paths = .init(issuer: "/{tenant}/v2.0", authorize: "/{tenant}/oauth2/v2.0/authorize", token: "/{tenant}/oauth2/v2.0/token")
        $0.offline = .scope("offline_access")
        $0.shape = .microsoft
        $0.errors = .microsoft
        $0.accessTTL = 3600
        $0.revocation = .none
        $0.whoAmI = .json(method: "GET", path: "/v1.0/me", idKey: "id")
        $0.userID = .guid
    }

    /// Microsoft multi-tenant (`common`): the discovery document's issuer is
    /// `…/{tenantid}/v2.0`, literally; each ID token's `iss` names the user's own tenant, its `tid`.
    static let microsoftCommon = Personality("microsoft-common") {
        $0 = microsoft
        $0.name = "microsoft-common"
        $0.tenancy = .common
    }

    /// GitLab: 2-hour tokens, `created_at` in every answer, a refresh token that rotates.
    static let gitlab = Personality(openID: "gitlab") {
        $0.paths = .init(authorize: "/oauth/authorize", token: "/oauth/token")
        $0.shape = .gitlab
        $0.accessTTL = 7200
        $0.revocation = .rfc7009(path: "/oauth/revoke")
        $0.whoAmI = .userinfo(path: "/oauth/userinfo")
        $0.userID = .numeric
    }

    /// Xero: a rotating refresh token with `offline_access`, 30-minute access tokens.
    static let xero = Personality(openID: "xero") {
        $0.paths = .init(authorize: "/identity/connect/authorize", token: "/connect/token")
        $0.offline = .scope("offline_access")
        $0.accessTTL = 1800
        $0.revocation = .rfc7009(path: "/connect/revocation")
        $0.whoAmI = .userinfo(path: "/connect/userinfo")
        $0.userID = .guid
    }

    /// LinkedIn: credentials in the body, no PKCE, 60-day tokens, a comma-separated `scope` in
    /// answers, a refresh token that stays the same and comes back with its own shrinking
    /// `refresh_token_expires_in`.
    static let linkedin = Personality(openID: "linkedin") {
        $0.paths = .init(issuer: "/oauth", authorize: "/oauth/v2/authorization", token: "/oauth/v2/accessToken")
        $0.clientAuth = [.body]
        $0.pkce = .ignored
        $0.refresh = .reusableEchoed
        $0.scopeSeparator = ","
        $0.accessTTL = 5_184_000
        $0.grantLifetime = .init(name: "refresh_token_expires_in", seconds: 31_536_000, fromSignIn: true)
        $0.revocation = .rfc7009(path: "/oauth/v2/revoke")
        $0.whoAmI = .userinfo(path: "/v2/userinfo")
        $0.userID = .prefixed("li")
    }

    /// Okta's default custom authorization server, below `/oauth2/default`: 1-hour tokens.
    static let okta = Personality(openID: "okta") {
        $0.accessTTL = 3600
        $0.paths = .init(issuer: "/oauth2/default", authorize: "/oauth2/default/v1/authorize", token: "/oauth2/default/v1/token")
        $0.offline = .scope("offline_access")
        $0.revocation = .rfc7009(path: "/oauth2/default/v1/revoke")
        $0.whoAmI = .userinfo(path: "/oauth2/default/v1/userinfo")
        $0.userID = .prefixed("00u")
    }

    /// Auth0: an issuer ending in `/`, token requests as form or JSON, 24-hour access tokens (an
    /// API's default), rotation with reuse detection, a refresh token with `offline_access`.
    static let auth0 = Personality(openID: "auth0") {
        $0.accessTTL = 86400
        $0.paths = .init(issuer: "/", authorize: "/authorize", token: "/oauth/token")
        $0.tokenRequest = [.form, .json]
        $0.offline = .scope("offline_access")
        $0.revocation = .rfc7009(path: "/oauth/revoke")
        $0.whoAmI = .userinfo(path: "/userinfo")
        $0.userID = .prefixed("auth0|")
    }

    /// Azure AD B2C: a user flow in the path, `expires_in` as a string.
    static let azureB2C = Personality(openID: "azure-ad-b2c") {
        $0.paths = .init(issuer: "/b2c_1_signin/v2.0", authorize: "/b2c_1_signin/oauth2/v2.0/authorize", token: "/b2c_1_signin/oauth2/v2.0/token")
        $0.offline = .scope("offline_access")
        $0.expiresInString = true
        $0.revocation = .none
        $0.whoAmI = .userinfo(path: "/b2c_1_signin/openid/v2.0/userinfo")
        $0.userID = .guid
    }
}
