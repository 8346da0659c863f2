/// Where a personality's endpoints are and how its revocation, "who am I", metadata, tenants
/// and user ids look.
extension Personality {
    struct Paths: Sendable {
        /// Appended to `/p/<name>` to make the issuer (Okta's `/oauth2/default`, Microsoft's `/{tenant}/v2.0`).
        var issuer = ""
        var authorize = "/authorize"
        var token = "/token"
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
        /// POST `/oauth/2026-03/token/revoke`, form `token` (a refresh token) with `client_id` and
        /// `client_secret` beside it: 200. Only the refresh token ends; its access tokens live on.
        case hubspot
        /// POST, form `client_id`, `client_secret` and `token` (credentials in the body only):
        /// 200, empty. `endsGrant`: an access token revoked ends its grant too (Box's log-out).
        case request(path: String, endsGrant: Bool = false)
        case none

        var style: String {
            switch self {
            case .rfc7009: "rfc7009"
            case .jsonBasic: "json"
            case .github: "github"
            case .slack: "slack"
            case .dropbox: "dropbox"
            case .hubspot: "hubspot"
            case .request: "request"
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
        /// POST `/oauth/2026-03/token/introspect`, form `token` with the client's credentials:
        /// `{"active", "user_id", "hub_id", …}` (RFC 7662 with HubSpot's members).
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
        /// The same number as text (X's `id`, Asana's `gid`, Box's and Discord's `id`: a string of digits).
        case digits
        /// A prefix and upper-case hex derived from the subject (Slack's `U…`, Dropbox's `dbid:…`).
        case prefixed(String)
        /// A GUID derived from the subject (Microsoft's `oid`).
        case guid
        /// As `.guid`, in braces (Bitbucket's `uuid`).
        case bracedGUID
    }
}
