/// The OAuth 2.0 personalities of business software (CRM, storage, workspaces, meetings, accounting).
extension Personality {
    static let business: [Personality] = [salesforce, dropbox, notion, atlassian, hubspot, zoom, intuit]

    /// Salesforce: `instance_url`, `id` (the identity URL), `issued_at`, `signature` and no
    /// `expires_in`; a refresh token with the `refresh_token` scope, reusable; a refused one is
    /// `invalid_grant`, "expired access/refresh token".
    static let salesforce = Personality("salesforce") {
        $0.paths = .init(authorize: "/services/oauth2/authorize", token: "/services/oauth2/token")
        $0.shape = .salesforce
        $0.sendsExpiresIn = false
        $0.codes.refreshDescription = "expired access/refresh token"
        $0.offline = .scope("refresh_token")
        $0.refresh = .reusable
        $0.accessTTL = 7200
        $0.accessPrefix = "00D000000000001!"
        $0.revocation = .rfc7009(path: "/services/oauth2/revoke")
        $0.whoAmI = .salesforce
        $0.userID = .prefixed("005")
    }

    /// Dropbox: a refresh token only with `token_access_type=offline`, reusable; revocation
    /// and "who am I" are RPC calls with the token as bearer.
    static let dropbox = Personality("dropbox") {
        $0.paths = .init(authorize: "/oauth2/authorize", token: "/oauth2/token")
        $0.shape = .dropbox
        $0.offline = .param("token_access_type", "offline")
        $0.refresh = .reusable
        $0.tokenType = "bearer"
        $0.accessTTL = 14400
        $0.accessPrefix = "sl."
        $0.revocation = .dropbox
        $0.whoAmI = .dropbox
        $0.userID = .prefixed("dbid:AA")
    }

    /// Notion: JSON token requests with HTTP Basic, answers naming the workspace and its owner,
    /// no `expires_in`, rotating refresh tokens, revocation as JSON with the `Notion-Version`
    /// header it requires.
    static let notion = Personality("notion") {
        $0.paths = .init(authorize: "/v1/oauth/authorize", token: "/v1/oauth/token")
        $0.tokenRequest = [.json]
        $0.clientAuth = [.basic]
        $0.shape = .notion
        $0.tokenType = "bearer"
        $0.accessExpires = false
        $0.accessPrefix = "ntn_"
        $0.revocation = .jsonBasic(path: "/v1/oauth/revoke", answer: "{\"request_id\":\"00000000-0000-4000-8000-000000000000\"}")
        $0.revocationVersionHeader = "Notion-Version"
        $0.whoAmI = .json(method: "GET", path: "/v1/users/me", idKey: "id")
        $0.userID = .guid
    }

    /// Atlassian: JSON (or form) token requests with the credentials in the body, 1-hour tokens,
    /// a rotating refresh token with `offline_access` (a spent one refused with 403
    /// `invalid_grant`), no revocation endpoint.
    static let atlassian = Personality("atlassian") {
        $0.paths = .init(authorize: "/authorize", token: "/oauth/token")
        $0.tokenRequest = [.json, .form]
        $0.clientAuth = [.body]
        $0.offline = .scope("offline_access")
        $0.codes.refreshStatus = 403
        $0.accessTTL = 3600
        $0.revocation = .none
        $0.whoAmI = .json(method: "GET", path: "/me", idKey: "account_id")
        $0.userID = .prefixed("5b10a")
    }

    /// HubSpot's OAuth API 2026-03 (v1 ends on 16 February 2027): every parameter in the form
    /// body, the credentials too; 30-minute tokens; `hub_id`, `user_id` and the granted `scopes`
    /// (an array) in every answer, and a refresh token in every answer. The pages do not say
    /// whether a used refresh token stays valid: the personality plays the strict reading, a new
    /// one each time and the used one refused. Refusals carry RFC 6749's `error` beside HubSpot's
    /// `category`, `message` and `correlationId`. Revocation ends the refresh token only (its
    /// access tokens live on); introspection replaces v1's token metadata.
    static let hubspot = Personality("hubspot") {
        $0.paths = .init(authorize: "/oauth/authorize", token: "/oauth/2026-03/token")
        $0.clientAuth = [.body]
        $0.shape = .hubspot
        $0.errors = .hubspot
        $0.tokenType = "bearer"
        $0.accessTTL = 1800
        $0.revocation = .hubspot
        $0.whoAmI = .hubspot
        $0.userID = .numeric
    }

    /// Zoom: HTTP Basic only, rotating refresh tokens, revocation answering `{"status": "success"}`.
    static let zoom = Personality("zoom") {
        $0.paths = .init(authorize: "/oauth/authorize", token: "/oauth/token")
        $0.clientAuth = [.basic]
        $0.tokenType = "bearer"
        $0.accessTTL = 3599
        $0.revocation = .rfc7009(path: "/oauth/revoke", answer: "{\"status\":\"success\"}")
        $0.whoAmI = .json(method: "GET", path: "/v2/users/me", idKey: "id")
        $0.userID = .prefixed("KDcu")
    }

    /// Intuit (QuickBooks): HTTP Basic only, `realmId` in the authorization response, the
    /// refresh token's lifetime as `x_refresh_token_expires_in`, revocation as JSON.
    static let intuit = Personality("intuit") {
        $0.paths = .init(authorize: "/connect/oauth2", token: "/oauth2/v1/tokens/bearer")
        $0.clientAuth = [.basic]
        $0.tokenType = "bearer"
        $0.accessTTL = 3600
        $0.grantLifetime = .init(name: "x_refresh_token_expires_in", seconds: 8_726_400)
        $0.redirectExtras = ["realmId": "9130350000000001"]
        $0.revocation = .jsonBasic(path: "/v2/oauth2/tokens/revoke")
        $0.whoAmI = .userinfo(path: "/v1/openid_connect/userinfo")
        $0.userID = .numeric
    }
}
