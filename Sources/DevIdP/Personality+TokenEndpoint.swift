/// How a personality's token endpoint differs: what it takes, what it answers, how its grants live.
extension Personality {
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
        /// Refusals come with HTTP 200 (GitHub, Slack).
        var inOK: Bool {
            switch self {
            case .inOK, .slack: true
            default: false
            }
        }

        /// RFC 6749 §5.2: 400 (401 for the client), the answer's format.
        case rfc6749
        /// HTTP 200 with `error` in the answer's format (GitHub).
        case inOK
        /// HTTP 200 `{"ok": false, "error": …}` (Slack).
        case slack
        /// RFC 6749, with Microsoft's `AADSTS…` code in `error_description` and `error_codes`,
        /// `timestamp`, `trace_id`, `correlation_id`.
        case microsoft
        /// RFC 6749's status and `error`, `error_description`, beside HubSpot's `category`,
        /// `message` and `correlationId` (HubSpot's standardized OAuth errors).
        case hubspot
    }

    /// The provider's error codes for each refusal.
    struct ErrorCodes: Sendable {
        var code = "invalid_grant"
        var refresh = "invalid_grant"
        var client = "invalid_client"
        var request = "invalid_request"
        var grantType = "unsupported_grant_type"
        /// The status of a refused refresh token (Atlassian's is 403).
        var refreshStatus = 400
        /// The provider's own words for a refused refresh token, where it documents them.
        var refreshDescription: String? = nil
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
        /// `restricted_to`, `issued_token_type`.
        case box
        /// The granted scopes as `scopes`, not `scope`.
        case bitbucket
        /// The user as `data` (`gid`, `name`, `email`).
        case asana
        /// `refresh_expires_in` (0 for an offline token), `not-before-policy`, `session_state`.
        case keycloak
        /// `hub_id`, `user_id` (numbers) and `scopes` (an array) in place of `scope`.
        case hubspot
        /// `created_at` (seconds since 1970).
        case gitlab
    }

    struct GrantLifetime: Sendable {
        let name: String
        let seconds: Int
        /// The lifetime runs from the sign-in, not from each refresh: answers say what is left (LinkedIn).
        var fromSignIn = false
    }
}
