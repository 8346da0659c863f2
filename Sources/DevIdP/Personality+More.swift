/// More catalogue providers: storage (Box), chat (Discord), music (Spotify), code (Bitbucket
/// Cloud), work management (Asana), and Keycloak, an OpenID provider run by its customers.
extension Personality {
    static let more: [Personality] = [box, discord, spotify, bitbucket, asana, keycloak]

    /// Box: credentials in the body, hour-long `bearer` tokens with `restricted_to` and
    /// `issued_token_type`, a refresh token good for one use; revoking the access token (with the
    /// credentials in the form) logs the user out, which ends the grant.
    static let box = Personality("box") {
        $0.paths = .init(authorize: "/api/oauth2/authorize", token: "/oauth2/token")
        $0.pkce = .ignored
        $0.clientAuth = [.body]
        $0.shape = .box
        $0.tokenType = "bearer"
        $0.accessTTL = 3600
        $0.revocation = .request(path: "/oauth2/revoke", endsGrant: true)
        $0.whoAmI = .json(method: "GET", path: "/2.0/users/me", idKey: "id")
        $0.userID = .digits
    }

    /// Discord: RFC 8414 metadata, week-long tokens, rotating refresh tokens, RFC 7009
    /// revocation, `GET /api/users/@me` with a snowflake id as a string.
    static let discord = Personality("discord") {
        $0.paths = .init(authorize: "/oauth2/authorize", token: "/api/oauth2/token")
        $0.metadata = .rfc8414
        $0.accessTTL = 604_800
        $0.revocation = .rfc7009(path: "/api/oauth2/token/revoke")
        $0.whoAmI = .json(method: "GET", path: "/api/users/@me", idKey: "id")
        $0.userID = .digits
    }

    /// Spotify: hour-long tokens, a refresh token replaced when a refresh returns a new one, no
    /// revocation endpoint, `GET /v1/me`.
    static let spotify = Personality("spotify") {
        $0.paths = .init(authorize: "/authorize", token: "/api/token")
        $0.accessTTL = 3600
        $0.revocation = .none
        $0.whoAmI = .json(method: "GET", path: "/v1/me", idKey: "id")
    }

    /// Bitbucket Cloud: HTTP Basic, two-hour `bearer` tokens, the granted scopes as `scopes`,
    /// no revocation endpoint, `GET /2.0/user` with the user's `uuid` in braces.
    static let bitbucket = Personality("bitbucket") {
        $0.paths = .init(authorize: "/site/oauth2/authorize", token: "/site/oauth2/access_token")
        $0.pkce = .ignored
        $0.clientAuth = [.basic]
        $0.shape = .bitbucket
        $0.tokenType = "bearer"
        $0.accessTTL = 7200
        $0.revocation = .none
        $0.whoAmI = .json(method: "GET", path: "/2.0/user", idKey: "uuid")
        $0.userID = .bracedGUID
    }

    /// Asana: credentials in the body, hour-long `bearer` tokens, the user under `data` in the
    /// token answer, a refresh token that stays valid (refreshes return none), revoked with the
    /// credentials in the form.
    static let asana = Personality("asana") {
        $0.paths = .init(authorize: "/-/oauth_authorize", token: "/-/oauth_token")
        $0.clientAuth = [.body]
        $0.shape = .asana
        $0.refresh = .reusable
        $0.tokenType = "bearer"
        $0.accessTTL = 3600
        $0.revocation = .request(path: "/-/oauth_revoke")
        $0.whoAmI = .json(method: "GET", path: "/api/1.0/users/me", idKey: "gid", wrapper: "data")
        $0.userID = .digits
    }

    /// Keycloak, realm `dev`: 5-minute tokens, a refresh token with every code exchange (an
    /// offline one, `refresh_expires_in: 0`, with `offline_access`) that rotates, RFC 7009.
    static let keycloak = Personality(openID: "keycloak") {
        let realm = "/realms/dev/protocol/openid-connect"
        $0.paths = .init(issuer: "/realms/dev", authorize: realm + "/auth", token: realm + "/token")
        $0.shape = .keycloak
        $0.accessTTL = 300
        $0.revocation = .rfc7009(path: realm + "/revoke")
        $0.whoAmI = .userinfo(path: realm + "/userinfo")
        $0.userID = .guid
    }
}
