/// Audience is who a route is for; each listener serves some of them (README: Listeners).
public enum Audience: String, CaseIterable, Sendable {
    /// Browsers and the IdP: the login callback, back-channel logout, the broker's JWKS.
    case `public`
    /// Workers, admins and operators: everything behind an API key.
    case `internal`
    /// Probes and scrapers: health, readiness, metrics.
    case ops

    /// The audience of a request path.
    static func of(path: String) -> Audience {
        // Most requests are the internal API's, under "/v1/t": told apart by bytes before any
        // string comparison.
        var path = path
        let tenants = path.withUTF8 { u in u.count > 5 && u[1] == 0x76 && u[2] == 0x31 && u[3] == 0x2F && u[4] == 0x74 }   // "/v1/t"
        if tenants { return .internal }
        switch path {
        case "/healthz", "/readyz", "/metrics": return .ops
        case "/v1/callback", "/.well-known/jwks.json": return .public
        default: return path.hasPrefix("/v1/backchannel-logout/") ? .public : .internal
        }
    }
}
