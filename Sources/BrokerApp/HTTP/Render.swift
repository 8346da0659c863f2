import Broker
import BrokerCore
import BrokerHTTP

/// Render writes the API's JSON documents. Sessions are rendered as metadata only: no function
/// here can print token material.
enum Render {
    static func token(_ t: IssuedToken) -> [(String, String)] {
        [("access_token", JSONText.quote(t.accessToken)), ("token_type", JSONText.quote(t.tokenType)),
         ("expires_at", JSONText.quote(RFC3339.format(t.expiresAt))), ("expires_in", String(t.expiresIn)),
         ("scope", JSONText.quote(Scopes.format(t.scope))), ("session_id", JSONText.quote(t.sessionID)),
         ("subject", JSONText.quote(t.subject))]
    }

    static func tokenResult(_ r: Result<IssuedToken, BrokerError>, requestID: String) -> HTTPResponse {
        switch r {
        case .success(let t): HTTPResponse.json(200, JSONText.object(token(t)))
        case .failure(let e): ErrorResponse.response(e, requestID: requestID)
        }
    }

    static func session(_ s: Session) -> String {
        JSONText.object([
            ("session_id", JSONText.quote(s.id)), ("tenant", JSONText.quote(s.tenant)), ("client", JSONText.quote(s.client)),
            ("subject", JSONText.quote(s.subject)), ("issuer", JSONText.quote(s.issuer)), ("scope", JSONText.quote(Scopes.format(s.scopes))),
            ("state", JSONText.quote(s.state.rawValue)), ("sid", JSONText.optional(s.claims.sid)), ("email", JSONText.optional(s.claims.email)),
            ("auth_time", RFC3339.optional(s.claims.authTime)), ("access_expires_at", RFC3339.optional(s.accessExpiresAt)),
            ("next_refresh_at", RFC3339.optional(s.nextRefreshAt)), ("version", String(s.version)),
            ("failure_count", String(s.failureCount)), ("last_error", JSONText.optional(s.lastError)),
            ("granted_at", RFC3339.optional(s.grantedAt)), ("created_at", RFC3339.optional(s.createdAt)),
            ("last_used_at", RFC3339.optional(s.lastUsedAt)), ("last_refreshed_at", RFC3339.optional(s.lastRefreshedAt)),
        ])
    }

    static func tenant(_ t: Tenant) -> String {
        JSONText.object([("id", JSONText.quote(t.id)), ("name", JSONText.quote(t.name)), ("disabled", t.disabled ? "true" : "false"),
                         ("created_at", RFC3339.optional(t.createdAt))])
    }

    static func client(_ c: ClientRegistration, hasSecret: Bool) -> String {
        let p = c.refreshPolicy
        return JSONText.object([
            ("tenant", JSONText.quote(c.tenant)), ("id", JSONText.quote(c.id)), ("issuer", JSONText.quote(c.issuer)),
            ("client_id", JSONText.quote(c.clientID)), ("auth_method", JSONText.quote(c.authMethod.rawValue)),
            ("has_secret", hasSecret ? "true" : "false"), ("redirect_uri", JSONText.quote(c.redirectURI)),
            ("scopes", JSONText.strings(c.scopes)), ("redirect_after_allowed", JSONText.strings(c.redirectAfterAllowed)),
            ("refresh_policy", JSONText.object([
                ("lead_seconds", p.leadSeconds.map { String(Int($0)) } ?? "null"), ("lead_fraction", String(p.leadFraction)),
                ("lead_cap_seconds", String(Int(p.leadCap))), ("jitter_seconds", String(Int(p.jitterSeconds))),
                ("min_ttl", String(Int(p.minTTL)))])),
            ("max_concurrent_refreshes", String(c.maxConcurrentRefreshes)),
        ])
    }
}
