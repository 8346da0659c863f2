/// The personalities played, each from its provider's own documentation: the OAuth 2.0 ones
/// here and in Personality+Business and Personality+More, the OpenID Connect ones in Personality+OpenID.
extension Personality {
    static let all: [Personality] = [
        plainForm, github, githubApp, slack, x,
    ] + business + more + openID

    /// Rotating refresh tokens and form-encoded answers, with RFC 8414 metadata (benchmarks).
    static let plainForm = Personality("oauth2-form") {
        $0.answer = .form
        $0.metadata = .rfc8414
    }

    /// A GitHub OAuth App: credentials in the body, form-encoded answers unless JSON is
    /// accepted, refusals inside HTTP 200, no refresh token, tokens that never expire.
    static let github = Personality("github") {
        $0.paths = .init(authorize: "/login/oauth/authorize", token: "/login/oauth/access_token")
        $0.clientAuth = [.body]
        $0.grantTypeOptional = true
        $0.answer = .formUnlessJSONAccepted
        $0.errors = .inOK
        $0.codes = .init(code: "bad_verification_code", refresh: "bad_refresh_token", client: "incorrect_client_credentials")
        $0.tokenType = "bearer"
        $0.refresh = .none
        $0.accessExpires = false
        $0.scopeSeparator = ","
        $0.accessPrefix = "gho_"
        $0.revocation = .github
        $0.whoAmI = .github
        $0.userID = .numeric
    }

    /// A GitHub App's user tokens: as an OAuth App, but they expire after 8 hours and come with
    /// a refresh token of 6 months that rotates (the old one and its access token stop working).
    static let githubApp = Personality("github-app") {
        $0 = github
        $0.name = "github-app"
        $0.refresh = .rotating
        $0.rotationEndsAccess = true
        $0.accessExpires = true
        $0.accessTTL = 28800
        $0.grantLifetime = .init(name: "refresh_token_expires_in", seconds: 15_897_600)
        $0.accessPrefix = "ghu_"
        $0.refreshPrefix = "ghr_"
    }

    /// Slack's OAuth v2: `scope` asks for a bot token, `user_scope` for a user token (under
    /// `authed_user`); refusals are `{"ok": false}` in HTTP 200. Token rotation is an app setting,
    /// off by default: tokens (`xoxb-`, `xoxp-`) that never expire and no refresh token. A client
    /// registered with `"token_rotation": true` is an app with it on: 12-hour `xoxe.` tokens and
    /// a `xoxe-1-` refresh token that rotates.
    static let slack = Personality("slack") {
        $0.paths = .init(authorize: "/oauth/v2/authorize", token: "/api/oauth.v2.access")
        $0.shape = .slack
        $0.errors = .slack
        $0.codes = .init(code: "invalid_code", refresh: "invalid_refresh_token", client: "invalid_client_id",
                         request: "invalid_arguments", grantType: "invalid_grant_type")
        $0.scopeSeparator = ","
        $0.refresh = .none
        $0.accessExpires = false
        $0.revocation = .slack
        $0.whoAmI = .slack
        $0.userID = .prefixed("U")
        $0.tokenRotation = {
            $0.refresh = .rotating
            $0.accessExpires = true
            $0.accessTTL = 43200
            $0.accessPrefix = "xoxe."
            $0.refreshPrefix = "xoxe-1-"
        }
    }

    /// X: PKCE required, HTTP Basic for confidential clients (a public one sends its client_id),
    /// a rotating refresh token with `offline.access`, 2-hour tokens, `{"data": {"id": "<digits>"}}`
    /// for "who am I"; a code or refresh token it no longer accepts is `invalid_request`.
    static let x = Personality("x") {
        $0.paths = .init(authorize: "/i/oauth2/authorize", token: "/2/oauth2/token")
        $0.pkce = .required
        $0.clientAuth = [.basic]
        $0.offline = .scope("offline.access")
        $0.accessTTL = 7200
        $0.revocation = .rfc7009(path: "/2/oauth2/revoke", answer: "{\"revoked\":true}")
        $0.whoAmI = .json(method: "GET", path: "/2/users/me", idKey: "id", wrapper: "data")
        $0.userID = .digits
        $0.codes = .init(code: "invalid_request", refresh: "invalid_request")
    }
}
