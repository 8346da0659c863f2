/// Audience is who a route is for; each listener serves some of them (docs/reference/http.md).
public enum Audience: String, CaseIterable, Sendable {
    /// Browsers and the IdP: the login callback, back-channel logout, the broker's JWKS.
    case `public`
    /// Workers, admins and operators: everything behind an API key.
    case `internal`
    /// Probes and scrapers: health, readiness, metrics.
    case ops

    /// The audience of a request path.
    static func of(path: String) -> Audience {
        switch path {
        case "/healthz", "/readyz", "/metrics": .ops
        case "/v1/callback", "/.well-known/jwks.json": .public
        default: path.hasPrefix("/v1/backchannel-logout/") ? .public : .internal
        }
    }
}
