import BrokerCore
import BrokerHTTP
import Foundation

/// The personalities' endpoints: each personality's own paths below `/p/<name>` (Personality),
/// RFC 8414 metadata at `/.well-known/oauth-authorization-server/p/<name>` (§3.1), and the
/// shared knowledge of the opaque tokens they issue.
extension DevIdP {
    /// The request headers a personality reads beyond the server's own (Notion's `Notion-Version`).
    public static let personalityHeaders = Personality.all.compactMap { $0.revocationVersionHeader?.lowercased() }

    func addPersonalities(to r: inout Router) {
        for p in Personality.all {
            let base = "/p/" + p.name
            r.add("GET", base + p.paths.authorize) { [self] req in .now(personalityAuthorize(p, req)) }
            r.add("POST", base + p.paths.token) { [self] req in personalityToken(p, req) }
            if let path = p.metadataPath { r.add("GET", path) { [self] req in .now(metadata(p, req)) } }
            for (method, path) in p.revocationRoutes {
                r.add(method, base + path) { [self] req in .now(personalityRevoke(p, req)) }
            }
            for (method, path) in p.whoAmIRoutes {
                r.add(method, base + path) { [self] req in .now(personalityWhoAmI(p, req)) }
            }
        }
    }

    /// The unexpired access token `token` of personality `p`, whose grant still stands.
    func personalityAccess(_ p: Personality, _ token: String?) -> PersonalityAccess? {
        guard let token else { return nil }
        return state.withLock { s in
            guard let a = s.personalityAccess[token], a.personality == p.name, a.expires.map({ $0 > Date() }) ?? true,
                  a.family.map({ s.families[$0]?.revoked != true }) ?? true else { return nil }
            if p.rotationEndsAccess, let f = a.family, s.families[f]?.uses != a.familyUses { return nil }
            return a
        }
    }

    /// The bearer token of a request, if it has one.
    static func bearer(_ req: HTTPRequest) -> String? {
        guard let h = req.header("authorization"), h.lowercased().hasPrefix("bearer ") else { return nil }
        return String(h.dropFirst(7))
    }

    /// The body's members as text: a form, or a JSON object (numbers and booleans as their text).
    static func fields(_ req: HTTPRequest) -> [String: String] {
        guard (req.header("content-type") ?? "").lowercased().hasPrefix("application/json") else { return FormEncoding.decode(req.body) }
        guard let o = try? JSONSerialization.jsonObject(with: Data(req.body)) as? [String: Any] else { return [:] }
        return o.compactMapValues { v in v is NSNull ? nil : (v as? String) ?? "\(v)" }
    }
}

extension Personality {
    /// Where the metadata is served, if anywhere: RFC 8414 §3.1 inserts the well-known path
    /// before the issuer's; OpenID Connect Discovery appends it to the issuer (without a final `/`).
    var metadataPath: String? {
        switch metadata {
        case .none: return nil
        case .rfc8414: return "/.well-known/oauth-authorization-server/p/" + name + paths.issuer
        case .openid:
            let issuer = "/p/" + name + paths.issuer
            return (issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer) + "/.well-known/openid-configuration"
        }
    }

    /// The (method, path) of each revocation endpoint, below `/p/<name>`.
    var revocationRoutes: [(String, String)] {
        switch revocation {
        case .rfc7009(let path, _), .jsonBasic(let path, _): [("POST", path)]
        case .github: [("DELETE", "/applications/{client_id}/token")]
        case .slack: [("POST", "/api/auth.revoke"), ("GET", "/api/auth.revoke")]
        case .dropbox: [("POST", "/2/auth/token/revoke")]
        case .hubspot: [("POST", "/oauth/2026-03/token/revoke")]
        case .request(let path, _): [("POST", path)]
        case .none: []
        }
    }

    /// How a "who am I" call carries the token: `bearer`, or `form`
    /// (`token` with the client's credentials: HubSpot's introspection).
    var whoAmITokenIn: String {
        if case .hubspot = whoAmI { return "form" }
        return "bearer"
    }

    /// The (method, path) of each "who am I" endpoint, below `/p/<name>`.
    var whoAmIRoutes: [(String, String)] {
        switch whoAmI {
        case .userinfo(let path): [("GET", path), ("POST", path)]
        case .github: [("GET", "/user")]
        case .slack: [("POST", "/api/auth.test"), ("GET", "/api/auth.test")]
        case .dropbox: [("POST", "/2/users/get_current_account")]
        case .salesforce: [("GET", "/id/{org}/{user}")]
        case .hubspot: [("POST", "/oauth/2026-03/token/introspect")]
        case .json(let method, let path, _, _): [(method, path)]
        }
    }
}
