import Foundation

/// URLRules says which URLs the broker accepts in configuration: https everywhere, plain http
/// only on loopback hosts (the development IdP, local tests). No fragments, no credentials.
public enum URLRules {
    /// Nil when `s` is acceptable, else why not. `allowHTTP`: plain http to any host (development).
    public static func problem(_ s: String, what: String, allowHTTP: Bool = false) -> String? {
        guard let u = URLComponents(string: s), let scheme = u.scheme?.lowercased(), let host = u.host, !host.isEmpty else {
            return "\(what) must be an absolute URL"
        }
        guard u.fragment == nil else { return "\(what) must not have a fragment" }
        guard u.user == nil, u.password == nil else { return "\(what) must not carry credentials" }
        switch scheme {
        case "https": return nil
        case "http" where allowHTTP || ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased()): return nil
        default: return "\(what) must use https (http only for loopback hosts)"
        }
    }

    /// Nil when `s` can be an issuer identifier: an acceptable URL with no query either
    /// (OpenID Connect Discovery 1.0 §2, RFC 8414 §2).
    public static func issuerProblem(_ s: String) -> String? {
        if let p = problem(s, what: "issuer") { return p }
        return URLComponents(string: s)?.query != nil ? "issuer must not have a query (OpenID Connect Discovery 1.0 §2)" : nil
    }
}
