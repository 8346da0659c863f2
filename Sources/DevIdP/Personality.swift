/// Personality is how one real provider's OAuth 2.0 endpoints differ from the standards, as
/// data: the development IdP plays it under `/p/<name>/…` (DevIdP+Personalities), so that a
/// provider descriptor can be tested end to end without the provider. Every member's default
/// is the standards' (RFC 6749, RFC 7009, RFC 7636). Clients, users and refresh-token families
/// are the dev IdP's own: a client registered once is usable with every personality, and a
/// grant is refreshed only at the personality that issued it.
struct Personality: Sendable {
    var name: String
    /// The provider's paths, below `/p/<name>`. `{tenant}` is a segment naming a tenant.
    var paths = Paths()
    var pkce: PKCE = .optional
    /// When the code exchange issues a refresh token.
    var offline: Offline = .always
    var refresh: Refresh = .rotating
    /// The token-request bodies accepted (by `Content-Type`).
    var tokenRequest: Set<BodyEncoding> = [.form]
    /// A code exchange may leave out `grant_type` (GitHub's documents none).
    var grantTypeOptional = false
    /// Where the client's credentials may be: HTTP Basic, the body, or either.
    var clientAuth: Set<ClientAuth> = [.basic, .body]
    var answer: AnswerFormat = .json
    var errors: ErrorStyle = .rfc6749
    var codes = ErrorCodes()
    var shape: Shape = .standard
    var tokenType = "Bearer"
    /// The provider's access-token lifetime (a client registered with `access_ttl` gets its own).
    var accessTTL: Int? = nil
    /// False: access tokens never expire and answers carry no `expires_in` (GitHub OAuth Apps).
    var accessExpires = true
    /// A rotation also ends the grant's earlier access tokens (GitHub App user tokens).
    var rotationEndsAccess = false
    /// False: tokens expire but answers do not say when (Salesforce).
    var sendsExpiresIn = true
    /// `expires_in` as a JSON string of digits.
    var expiresInString = false
    /// How scopes are joined in answers.
    var scopeSeparator = " "
    /// The refresh token's own lifetime, sent beside it under this name.
    var grantLifetime: GrantLifetime? = nil
    /// Access and refresh tokens start with these, as the provider's do.
    var accessPrefix = ""
    var refreshPrefix = ""
    var revocation: Revocation = .rfc7009(path: "/revoke")
    var whoAmI: WhoAmI = .userinfo(path: "/userinfo")
    var metadata: Metadata = .none
    /// OpenID Connect: an ID token (RS256) with the `openid` scope, discovery at the issuer.
    var oidc = false
    var tenancy: Tenancy = .none
    var userID: UserID = .subject
    /// Parameters added to the authorization response beside `code` and `state` (Intuit's `realmId`).
    var redirectExtras: [String: String] = [:]
    /// RFC 9207: `iss` in the authorization response.
    var sendsIss = false

    init(_ name: String, _ configure: (inout Personality) -> Void = { _ in }) {
        self.name = name
        configure(&self)
    }

    /// An OpenID Connect provider: ID tokens with `openid`, discovery at the issuer.
    init(openID name: String, _ configure: (inout Personality) -> Void) {
        self.init(name) {
            $0.oidc = true
            $0.metadata = .openid
            configure(&$0)
        }
    }

    struct Paths: Sendable {
        /// Appended to `/p/<name>` to make the issuer (Okta's `/oauth2/default`, Microsoft's `/{tenant}/v2.0`).
        var issuer = ""
        var authorize = "/authorize"
        var token = "/token"
    }

    enum PKCE: Sendable { case optional, required, ignored }

    enum Offline: Sendable {
        case always, never
        /// Only when the authorization request carries this parameter with this value.
        case param(String, String)
        /// Only when the scope requested contains this one.
        case scope(String)
    }

    enum Refresh: Sendable {
        /// A new refresh token each time; the old one presented again revokes the grant.
        case rotating
        /// The same token stays valid; answers to a refresh carry none.
        case reusable
        /// The same token stays valid and every answer carries it again.
        case reusableEchoed
        /// No refresh token at all.
        case none
    }

    enum BodyEncoding: Sendable { case form, json }
    enum ClientAuth: Sendable { case basic, body }

    enum AnswerFormat: Sendable {
        case json, form
        /// Form-encoded unless the request's `Accept` names `application/json` (GitHub).
        case formUnlessJSONAccepted
    }

    enum ErrorStyle: Sendable {
        /// RFC 6749 §5.2: 400 (401 for the client), the answer's format.
        case rfc6749
        /// HTTP 200 with `error` in the answer's format (GitHub).
        case inOK
        /// HTTP 200 `{"ok": false, "error": …}` (Slack).
        case slack
    }

    /// The provider's error codes for each refusal.
    struct ErrorCodes: Sendable {
        var code = "invalid_grant"
        var refresh = "invalid_grant"
        var client = "invalid_client"
        var request = "invalid_request"
        var grantType = "unsupported_grant_type"
    }

    enum Shape: Sendable {
        case standard
        /// Slack v2: `ok`, `team`, the bot token on top and the user's under `authed_user`.
        case slack
        /// `instance_url`, `id`, `issued_at`, `signature`.
        case salesforce
        /// `account_id`, `uid`.
        case dropbox
        /// `bot_id`, `workspace_*`, `owner`.
        case notion
        /// `ext_expires_in`.
        case microsoft
    }

    struct GrantLifetime: Sendable {
        let name: String
        let seconds: Int
        /// The lifetime runs from the sign-in, not from each refresh: answers say what is left (LinkedIn).
        var fromSignIn = false
    }

    enum Revocation: Sendable {
        /// RFC 7009: POST, form `token`, 200 with `answer` (empty when nil).
        case rfc7009(path: String, answer: String? = nil)
        /// POST, HTTP Basic, JSON `{"token": …}`, 200 with `answer` (Notion, Intuit).
        case jsonBasic(path: String, answer: String? = nil)
        /// DELETE `/applications/{client_id}/token`, HTTP Basic, JSON `{"access_token": …}`, 204.
        case github
        /// `/api/auth.revoke`, the token as bearer or form `token`: `{"ok": true, "revoked": true}`.
        case slack
        /// POST `/2/auth/token/revoke` with the token as bearer: 200 `null`.
        case dropbox
        /// DELETE `/oauth/v1/refresh-tokens/{token}`: 204.
        case hubspot
        case none

        var style: String {
            switch self {
            case .rfc7009: "rfc7009"
            case .jsonBasic: "json"
            case .github: "github"
            case .slack: "slack"
            case .dropbox: "dropbox"
            case .hubspot: "hubspot"
            case .none: "none"
            }
        }
    }

    enum WhoAmI: Sendable {
        /// OpenID Connect userinfo: GET, `{"sub", "email", …}`.
        case userinfo(path: String)
        /// GET `/user`: `{"id": <number>, "login"}`.
        case github
        /// `/api/auth.test`: `{"ok": true, "user_id", "team_id", …}`.
        case slack
        /// POST `/2/users/get_current_account`: `{"account_id", "email", …}`.
        case dropbox
        /// GET the identity URL of the token answer's `id`.
        case salesforce
        /// GET `/oauth/v1/access-tokens/{token}`: `{"user_id", "hub_id", …}`.
        case hubspot
        /// `method path`: `{"<idKey>": id, "email"}`, inside `{"<wrapper>": …}` when there is one (X's `data`).
        case json(method: String, path: String, idKey: String, wrapper: String? = nil)
    }

    enum Metadata: Sendable {
        case none
        /// RFC 8414 at `/.well-known/oauth-authorization-server/p/<name>` (§3.1 path insertion).
        case rfc8414
        /// OpenID Connect Discovery at the issuer's `/.well-known/openid-configuration`.
        case openid
    }

    enum Tenancy: Sendable {
        case none
        /// One tenant: the `{tenant}` segment must name it; ID tokens carry it as `tid`.
        case single(String)
        /// Any tenant: discovery at `common` says `{tenantid}` in its issuer; each user's
        /// tenant follows their login's domain.
        case common
    }

    enum UserID: Sendable {
        case subject
        /// A number derived from the subject (GitHub's `id`).
        case numeric
        /// A prefix and upper-case hex derived from the subject (Slack's `U…`, Dropbox's `dbid:…`).
        case prefixed(String)
        /// A GUID derived from the subject (Microsoft's `oid`).
        case guid
    }
}
